/**
 * The InfiniBand connection manager on QP 1 with rdma_cm's TCP and UDP port spaces, behind an API that maps one to one
 * onto librdmacm (Linux drivers/infiniband/core/cm.c and cma.c for the protocol; rdma-core librdmacm for the
 * API). The messages themselves are the flyweights of {@code io.jroce.wire.mad}.
 *
 * <h2>API (librdmacm)</h2>
 * <ul>
 * <li>{@code CmAgent}: the connection manager of one device (owns its QP 1); counters.</li>
 * <li>{@code CmEventChannel}: {@code rdma_event_channel}: events to poll or wait for.</li>
 * <li>{@code CmId}: {@code rdma_cm_id}: bind, listen, resolve, create QP, connect, accept, reject, disconnect.</li>
 * <li>{@code CmEvent}: {@code rdma_cm_event}: type, id, listening id, status, private data, parameters.</li>
 * <li>{@code CmEventType}: {@code RDMA_CM_EVENT_*}.</li>
 * <li>{@code CmConnParam}: {@code rdma_conn_param}.</li>
 * <li>{@code CmPortSpace}: {@code RDMA_PS_TCP}, {@code RDMA_PS_UDP}; {@code CmUdParam}: {@code rdma_ud_param}.</li>
 * <li>{@code CmConfig}: timeouts, retries, MTU, the peers' UDP port and the caps.</li>
 * <li>{@code CmCounters}: MADs in and out, retransmissions, drops by reason.</li>
 * <li>{@code ExtensionTrailer}: the jroce extensions offer and answer in the last 8 bytes of REQ and REP private data.</li>
 * </ul>
 *
 * <h2>Inside the agent</h2>
 * <ul>
 * <li>{@code CmPassive}: REQ to CONNECT_REQUEST, accept (REP), reject, RTU or the first packet (COMM_EST).</li>
 * <li>{@code CmRelease}: DREQ, DREP, DREQ_RCVD and timewait.</li>
 * <li>{@code Sidr}: SIDR_REQ and SIDR_REP, the UDP port space.</li>
 * <li>{@code MadLayer}: what mad.c does with MADs no agent takes (GetResp 0x000C, rate limited).</li>
 * </ul>
 *
 * <h2>Transport of MADs</h2>
 * <ul>
 * <li>{@code MadPort}: where an agent sends and receives 256-byte MADs.</li>
 * <li>{@code GsiMadPort}: the device's QP 1 (UD, Q_Key 0x80010000, sender from the GRH area).</li>
 * <li>{@code MadLoopback}: QP 1 inside one JVM, for tests and simulations: ports by address, drop rules, injection.</li>
 * </ul>
 */
package io.jroce.endpoint.cm;
