package io.jroce.endpoint.cm;

import io.jroce.wire.mad.MadHeader;

import java.net.InetAddress;

/**
 * What the Linux MAD layer (drivers/infiniband/core/mad.c) does with a MAD received on QP 1 before any agent sees it,
 * for a device whose only agent is the CM (Send methods of class 0x07, version 2), as on rdma_rxe, which has no
 * {@code process_mad}:
 * <ul>
 * <li>{@code validate_mad}: base version other than 1, subnet-management classes (0x01, 0x81, QP 0 only) and CM-class
 * MADs other than Send, except ClassPortInfo, are dropped;</li>
 * <li>responses (the R bit, or TrapRepress) match no request of ours and are dropped;</li>
 * <li>{@code generate_unmatched_resp}: a Get or Set that no agent takes (any other class or version, or a Get/Set of
 * the CM's ClassPortInfo) is answered with the whole MAD sent back as GetResp with status 0x000C (unsupported
 * method/attribute); any other method is dropped.</li>
 * </ul>
 * The answers are the only MADs a stranger can make this side send without state, so they are rate limited (a token
 * bucket of {@link CmConfig#madReplyRate} per second), and counted by reason. Not thread-bound: the caller owns it.
 */
final class MadLayer {
    /** IB_MGMT_CLASS_SUBN_LID_ROUTED and IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE: QP 0's, never QP 1's. */
    static final int CLASS_SUBN_LID_ROUTED = 0x01;
    static final int CLASS_SUBN_DIRECTED_ROUTE = 0x81;
    /** IB_MGMT_METHOD_TRAP_REPRESS, a response without the R bit. */
    static final int METHOD_TRAP_REPRESS = 0x07;

    /** What became of a MAD. */
    enum Verdict {
        /** A CM Send: for the CM agent. */
        CM,
        /** Answered with GetResp 0x000C. */
        REPLIED,
        /** Due an answer, but over the reply rate. */
        RATE_LIMITED,
        /** Dropped: invalid on QP 1, a response, or a method no agent takes and nothing answers. */
        DROPPED
    }

    private final MadPort port;
    private final double ratePerNano;
    private final double burst;
    private double tokens;
    private long lastNanos;
    long repliesCmClass;
    long repliesOtherClass;
    long rateLimited;

    MadLayer(MadPort port, int repliesPerSecond) {
        this.port = port;
        this.ratePerNano = repliesPerSecond / 1e9;
        this.burst = Math.max(1, repliesPerSecond);
        this.tokens = burst;
        this.lastNanos = System.nanoTime();
    }

    /** Classifies {@code mad} (256 bytes) received from {@code srcQpn} at {@code from}, answering it if due. */
    Verdict receive(InetAddress from, int srcQpn, byte[] mad) {
        int base = mad[0] & 0xFF;
        int mgmtClass = mad[1] & 0xFF;
        int classVersion = mad[2] & 0xFF;
        int method = mad[3] & 0xFF;
        int attribute = (mad[16] & 0xFF) << 8 | (mad[17] & 0xFF);
        if (base != MadHeader.BASE_VERSION) return Verdict.DROPPED;
        if (mgmtClass == CLASS_SUBN_LID_ROUTED || mgmtClass == CLASS_SUBN_DIRECTED_ROUTE) return Verdict.DROPPED;
        boolean cmClass = mgmtClass == MadHeader.MGMT_CLASS_CM;
        if (cmClass && attribute != MadHeader.ATTR_CLASS_PORT_INFO && method != MadHeader.METHOD_SEND) {
            return Verdict.DROPPED;
        }
        if ((method & MadHeader.METHOD_RESPONSE) != 0 || method == METHOD_TRAP_REPRESS) return Verdict.DROPPED;
        if (cmClass && classVersion == MadHeader.CM_CLASS_VERSION && method == MadHeader.METHOD_SEND) return Verdict.CM;
        if (method != MadHeader.METHOD_GET && method != MadHeader.METHOD_SET) return Verdict.DROPPED;
        if (!take()) {
            rateLimited++;
            return Verdict.RATE_LIMITED;
        }
        byte[] resp = mad.clone();
        resp[3] = (byte) MadHeader.METHOD_GET_RESP;
        resp[4] = (byte) (MadHeader.STATUS_UNSUPPORTED_METHOD_ATTRIB >>> 8);
        resp[5] = (byte) MadHeader.STATUS_UNSUPPORTED_METHOD_ATTRIB;
        if (cmClass) repliesCmClass++;
        else repliesOtherClass++;
        port.send(from, srcQpn, resp); // agent_send_response: back to the requester's QP
        return Verdict.REPLIED;
    }

    private boolean take() {
        long now = System.nanoTime();
        tokens = Math.min(burst, tokens + (now - lastNanos) * ratePerNano);
        lastNanos = now;
        if (tokens < 1) return false;
        tokens -= 1;
        return true;
    }
}
