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
     * atomics keep every in-order verbs rule. It reports what it holds with a standard PSN-sequence-error NAK
     * whose BTH PSN is the expected PSN (as IBA says) and whose 24-bit AETH MSN field carries a SACK block: the
     * run of PSNs it holds that contains the packets of this receive burst, as its offset from the expected PSN
     * (high 12 bits) and its length (low 12 bits, {@link #sackMsn}). At most one SACK per run per receive burst, not one
     * per packet; each repeats the whole run, so a lost SACK is made good by the next. The requester resends only
     * the PSNs below the highest SACKed one that were not SACKed, each once until found lost again, instead of going back N,
     * and counts SACKed PSNs as no longer in flight, so its window runs past a hole (as TCP's SACK "pipe" counts,
     * RFC 6675; IRN's BDP-FC counts from the cumulative ACK) as far as the responder's store reaches.
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
    public static final int OOO_WINDOW = 1024;

    /** The AETH MSN of a SACK block of {@code count} PSNs starting {@code offset} past the expected PSN (1..4095 each). */
    static int sackMsn(int offset, int count) {
        return offset << 12 | count;
    }

    /** The SACK block's first PSN, as an offset from the NAK's expected PSN (0 is malformed). */
    static int sackOffset(int msn) {
        return (msn >>> 12) & 0xFFF;
    }

    /** The SACK block's length in PSNs (0 is malformed). */
    static int sackCount(int msn) {
        return msn & 0xFFF;
    }

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
