package io.jroce.endpoint.cm;

import io.jroce.endpoint.AddressHandle;

/**
 * What an {@link CmEventType#ESTABLISHED} event of the UDP port space carries, librdmacm's
 * {@code struct rdma_ud_param}: an address handle for the peer, and its QPN and Q_Key, to put in each UD send.
 *
 * @param ah    the peer's address (created on the id's QP's protection domain)
 * @param qpNum the peer's QPN, from the SIDR_REP
 * @param qkey  the peer's Q_Key, from the SIDR_REP
 */
public record CmUdParam(AddressHandle ah, int qpNum, int qkey) {
}
