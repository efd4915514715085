package io.jroce.endpoint.cm;

/**
 * One event of a {@link CmEventChannel}, librdmacm's {@code struct rdma_cm_event}: its type, the id it concerns,
 * for {@link CmEventType#CONNECT_REQUEST} the listening id it came through, a status and the peer's private data.
 *
 * @param type          what happened
 * @param id            the id concerned; for CONNECT_REQUEST the new id of the incoming connection
 * @param listenId      for CONNECT_REQUEST the listening id, otherwise null
 * @param status        REJECTED: the REJ reason (8 = no listener on the service ID, 28 = consumer defined, see
 *                      {@link io.jroce.wire.mad.CmRej#reasonName}); UNREACHABLE: -110 (ETIMEDOUT), or in the UDP
 *                      port space the SIDR_REP's status (1 unsupported, 2 reject, ...; cma.c cma_sidr_rep_handler);
 *                      otherwise 0
 * @param privateData   the peer's private data as librdmacm delivers it: the whole private data area of the
 *                      message (REQ after rdma_cm's header: 56 bytes; REP 196; REJ 148), zero-padded; empty when
 *                      the event carries none. When the peer is jroce and offered (REQ) or answered (REP) transport
 *                      extensions, the area's last 8 bytes are that trailer ({@link CmConnParam#extensions})
 * @param param         for CONNECT_REQUEST the requester's values as seen from this side (its initiator depth is
 *                      our responder resources, and the other way round), like librdmacm's event param; else null
 * @param ud            for ESTABLISHED in the UDP port space the peer's address handle, QPN and Q_Key (librdmacm's
 *                      {@code param.ud}); else null
 */
public record CmEvent(CmEventType type, CmId id, CmId listenId, int status, byte[] privateData, CmConnParam param,
                      CmUdParam ud) {

    /** An event without UD values. */
    public CmEvent(CmEventType type, CmId id, CmId listenId, int status, byte[] privateData, CmConnParam param) {
        this(type, id, listenId, status, privateData, param, null);
    }

    /** librdmacm's status for UNREACHABLE: -ETIMEDOUT. */
    public static final int ETIMEDOUT = -110;

    @Override
    public String toString() {
        return "CmEvent{" + type + (status != 0 ? " status " + status : "") + " " + id + "}";
    }
}
