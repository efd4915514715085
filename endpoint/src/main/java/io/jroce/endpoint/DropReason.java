package io.jroce.endpoint;

/** Why a received datagram was dropped; each reason has its own counter. */
public enum DropReason {
    /** Failed to parse: truncated headers, bad TVer, impossible pad or length. */
    MALFORMED,
    /** Opcode unknown, reserved, or of a transport this endpoint does not run (UC, RD). */
    UNSUPPORTED_OPCODE,
    /** The ICRC is wrong: over IPv4 it matched no IPv4 Identification, over IPv6 it differs. */
    ICRC,
    /** Larger than the receive slot: the kernel may have truncated it. */
    OVERSIZE,
    /** Destination QP number not on this device. */
    UNKNOWN_QP,
    /** The QP's state does not accept this packet (RESET, INIT, ERR...). */
    QP_STATE,
    /** Sent from an address that is not the QP's connected peer. */
    WRONG_SOURCE,
    /**
     * The BTH P_Key does not match the device's one P_Key, the full-member default 0xFFFF (IBA 9.6.1.1 and
     * 10.9; rdma_rxe rxe_recv.c check_keys): only 0xFFFF and the limited-member 0x7FFF get through.
     */
    PKEY,
    /** A response opcode the completer did not expect. */
    UNEXPECTED_OPCODE,
    /** A duplicate READ or atomic with no responder resource to answer from. */
    DUPLICATE_UNKNOWN,
    /**
     * A UD datagram whose DETH Q_Key is not the receiving QP's (QP 1: 0x80010000), dropped silently
     * (IBA 10.2.4; rdma_rxe rxe_recv.c check_keys).
     */
    QKEY,
    /** A UD datagram that found no receive posted: UD has no RNR NAK, so it is dropped (IBA 9.7.1; rxe_resp.c). */
    NO_RECEIVE,
    /**
     * Read by one shard of a device with several event loops for a QP of another, whose handoff queue was full
     * (that loop is behind; a full socket buffer drops the same way).
     */
    HANDOFF_OVERFLOW,
    /**
     * From a source outside the device's allowed networks ({@link DeviceConfig#allow}): dropped before anything
     * else looks at it. Not an IBA rule: RoCE relies on an isolated network; this is a device option.
     */
    NOT_ALLOWED
}
