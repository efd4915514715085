package io.jroce.endpoint;

/**
 * Transport extensions two jroce endpoints may agree on out of band (the jroce TCP exchange, or the private data
 * of the CM's REQ and REP: {@link io.jroce.endpoint.cm.CmConnParam#extensions}) and set on both queue pairs with
 * {@link QueuePair#setExtensions} before RTR. With none set (the default, and always with rdma_rxe,
 * ibv_rc_pingpong or perftest peers) the QP speaks plain IBA RC with Go-Back-N and its packets are exactly those
 * of a QP without this class.
 *
 * <p>Every packet stays a standard RoCEv2 packet; what the extensions change is the meaning of two fields
 * between agreeing peers only (see {@link #SELECTIVE_REPEAT}).
 */
public final class JroceExtensions {
    /**
     * Selective retransmission (IRN-style). The responder keeps requests that arrive past a gap (up to
     * {@link #OOO_WINDOW} PSNs) and executes them in PSN order once the gap is filled, so SEND, WRITE, READ and
     * atomics keep every in-order verbs rule. For each such packet it answers with a standard PSN-sequence-error
     * NAK whose BTH PSN is the expected PSN (as IBA says) and whose AETH MSN field carries the PSN of the packet
     * that arrived out of order (a one-entry SACK, as IRN's NACK). The requester resends only the PSNs below the
     * highest SACKed one that were not SACKed, each once per recovery, instead of going back N.
     */
    public static final int SELECTIVE_REPEAT = 1;
    /**
     * Per-QP congestion control of the requester: a window of packets in flight, capped by the receive side's
     * out-of-order window (the BDP cap), cut on loss, on round trips above a delay target and on CNPs.
     */
    public static final int CONGESTION_CONTROL = 2;
    /** Every extension this release implements. */
    public static final int ALL = SELECTIVE_REPEAT | CONGESTION_CONTROL;
    /** PSNs past the expected one a selective-repeat responder keeps; later packets are dropped and counted. */
    public static final int OOO_WINDOW = 256;

    private JroceExtensions() {
    }

    /** "selective-repeat,congestion-control", or "none". */
    public static String toString(int flags) {
        if (flags == 0) return "none";
        StringBuilder s = new StringBuilder();
        if ((flags & SELECTIVE_REPEAT) != 0) s.append("selective-repeat");
        if ((flags & CONGESTION_CONTROL) != 0) s.append(s.isEmpty() ? "" : ",").append("congestion-control");
        return s.toString();
    }
}
