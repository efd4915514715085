package io.jroce.endpoint;

import io.jroce.wire.RoceV2;

import java.net.InetAddress;
import java.util.Objects;

/**
 * Moves an RC queue pair RESET&rarr;INIT&rarr;RTR&rarr;RTS towards a peer, the sequence every verbs program runs
 * after it has learnt the peer's QPN and PSN (ibv_rc_pingpong's {@code pp_connect_ctx}, perftest's
 * {@code ctx_connect}, the connection manager's {@code rdma_init_qp_attr} steps):
 * <ol>
 *   <li>RESET&rarr;INIT: P_Key index 0, port 1, {@link Params#accessFlags};</li>
 *   <li>INIT&rarr;RTR: the peer's address and UDP port, path MTU, dest QPN, rq_psn = the peer's first PSN,
 *       max_dest_rd_atomic, min_rnr_timer;</li>
 *   <li>RTR&rarr;RTS: sq_psn = our first PSN, timeout, retry_cnt, rnr_retry, max_rd_atomic.</li>
 * </ol>
 * A QP whose receives must be posted before the peer can send is moved to INIT early with {@link #toInit};
 * {@link #connect} continues from wherever the QP is (RESET, INIT or RTR).
 */
public final class RcConnect {
    private RcConnect() {
    }

    /**
     * Where the peer's QP is: its address and RoCEv2 UDP port, its QPN, and the first PSN it sends (our rq_psn).
     */
    public record Peer(InetAddress address, int udpPort, int qpn, int psn) {
        public Peer {
            Objects.requireNonNull(address, "address");
            if (udpPort < 1 || udpPort > 0xFFFF) throw new IllegalArgumentException("UDP port out of range: " + udpPort);
            if ((qpn & ~0xFFFFFF) != 0) throw new IllegalArgumentException("QPN must be 24 bits: 0x" + Integer.toHexString(qpn));
            if ((psn & ~0xFFFFFF) != 0) throw new IllegalArgumentException("PSN must be 24 bits: 0x" + Integer.toHexString(psn));
        }

        /** A peer on the standard RoCEv2 port 4791. */
        public static Peer of(InetAddress address, int qpn, int psn) {
            return new Peer(address, RoceV2.UDP_PORT, qpn, psn);
        }

        /** A QP of a device in this process, which will send from {@code psn}. */
        public static Peer of(QueuePair qp, int psn) {
            return new Peer(qp.device().address(), qp.device().port(), qp.qpNum(), psn);
        }
    }

    /** Connection parameters: a mutable builder with ibv_rc_pingpong's defaults. */
    public static final class Params {
        private Mtu mtu = Mtu.MTU_1024;
        private int minRnrTimer = 12;
        private int timeout = 14;
        private int retryCnt = 7;
        private int rnrRetry = 7;
        private int maxRdAtomic = 1;
        private int maxDestRdAtomic = 1;
        private int accessFlags = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
        private int extensions;
        private int peerReceiveBuffer;

        /** ibv_rc_pingpong's values: MTU 1024, min_rnr_timer 12, timeout 14, retry_cnt 7, rnr_retry 7, rd_atomic 1/1, all access. */
        public static Params defaults() {
            return new Params();
        }

        public Params mtu(Mtu v) { mtu = Objects.requireNonNull(v, "mtu"); return this; }
        /** RNR NAK timer code (IBA Table 45) we ask the peer to wait when we have no receive posted. */
        public Params minRnrTimer(int v) { minRnrTimer = v; return this; }
        /** Local ACK timeout exponent: 4.096 us * 2^v (0: none). */
        public Params timeout(int v) { timeout = v; return this; }
        public Params retryCnt(int v) { retryCnt = v; return this; }
        public Params rnrRetry(int v) { rnrRetry = v; return this; }
        /** READs/atomics we may have outstanding towards the peer (at most the peer's max_dest_rd_atomic). */
        public Params maxRdAtomic(int v) { maxRdAtomic = v; return this; }
        /** READs/atomics we accept from the peer at once. */
        public Params maxDestRdAtomic(int v) { maxDestRdAtomic = v; return this; }
        /** Both {@link #maxRdAtomic} and {@link #maxDestRdAtomic}. */
        public Params rdAtomic(int v) { maxRdAtomic = v; maxDestRdAtomic = v; return this; }
        /** The QP's access flags ({@link Access}); default local write and all remote access. */
        public Params accessFlags(int v) { accessFlags = v; return this; }

        public Mtu mtu() { return mtu; }
        public int minRnrTimer() { return minRnrTimer; }
        public int timeout() { return timeout; }
        public int retryCnt() { return retryCnt; }
        public int rnrRetry() { return rnrRetry; }
        public int maxRdAtomic() { return maxRdAtomic; }
        public int maxDestRdAtomic() { return maxDestRdAtomic; }
        public int accessFlags() { return accessFlags; }
        /**
         * {@link JroceExtensions} agreed with a jroce peer (both sides must set the same); 0, the default, for
         * every other peer.
         */
        public Params extensions(int v) { extensions = v; return this; }
        /** The peer device's receive buffer, when a jroce peer told it ({@link QueuePair#setPeerReceiveBuffer}); 0 unknown. */
        public Params peerReceiveBuffer(int v) { peerReceiveBuffer = v; return this; }
        public int peerReceiveBuffer() { return peerReceiveBuffer; }
        public int extensions() { return extensions; }

        @Override
        public String toString() {
            return "mtu " + mtu.bytes() + " min_rnr_timer " + minRnrTimer + " timeout " + timeout + " retry_cnt " + retryCnt
                    + " rnr_retry " + rnrRetry + " max_rd_atomic " + maxRdAtomic + " max_dest_rd_atomic " + maxDestRdAtomic
                    + (extensions == 0 ? "" : " extensions " + JroceExtensions.toString(extensions));
        }
    }

    /** RESET&rarr;INIT (does nothing if the QP is already past RESET). */
    public static void toInit(QueuePair qp, Params p) {
        if (qp.state() == QpState.RESET) {
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(p.accessFlags));
        }
    }

    /** Up to RTR towards {@code remote} (from RESET or INIT; does nothing past INIT). */
    public static void toRtr(QueuePair qp, Peer remote, Params p) {
        toInit(qp, p);
        if (qp.state() == QpState.INIT) {
            if (qp.extensions() != p.extensions) qp.setExtensions(p.extensions);
            if (qp.peerReceiveBuffer() != p.peerReceiveBuffer) qp.setPeerReceiveBuffer(p.peerReceiveBuffer);
            qp.modify(new QpAttr().state(QpState.RTR)
                    .dest(remote.address(), remote.udpPort())
                    .pathMtu(p.mtu)
                    .destQpNum(remote.qpn())
                    .rqPsn(remote.psn())
                    .maxDestRdAtomic(p.maxDestRdAtomic)
                    .minRnrTimer(p.minRnrTimer));
        }
    }

    /** RTR&rarr;RTS with our first PSN {@code localPsn}. */
    public static void toRts(QueuePair qp, int localPsn, Params p) {
        if (qp.state() != QpState.RTR) {
            throw new IllegalStateException(qp + " must be in RTR to move to RTS");
        }
        qp.modify(new QpAttr().state(QpState.RTS)
                .sqPsn(localPsn)
                .timeout(p.timeout)
                .retryCnt(p.retryCnt)
                .rnrRetry(p.rnrRetry)
                .maxRdAtomic(p.maxRdAtomic));
    }

    /**
     * RESET/INIT/RTR &rarr; RTS towards {@code remote}; {@code localPsn} is the first PSN we send (the one the
     * peer was told). Throws {@link VerbsException} if the endpoint refuses an attribute.
     */
    public static void connect(QueuePair qp, Peer remote, int localPsn, Params p) {
        QpState s = qp.state();
        if (s != QpState.RESET && s != QpState.INIT && s != QpState.RTR) {
            throw new IllegalStateException(qp + " must be in RESET, INIT or RTR to connect");
        }
        toRtr(qp, remote, p);
        // In RTR the QP already receives: a peer that is quicker to RTS may send at once, and a request that
        // fails there (say a deliberate access violation) moves the QP to ERR before we get to RTS. That is
        // the traffic's outcome, reported by the completions that follow, not a failure to connect.
        if (qp.state() == QpState.ERR) return;
        try {
            toRts(qp, localPsn, p);
        } catch (RuntimeException e) {
            if (qp.state() != QpState.ERR) throw e;
        }
    }

    /** Connects two QPs of this process to each other: {@code a} sends from {@code psnA}, {@code b} from {@code psnB}. */
    public static void connectPair(QueuePair a, int psnA, QueuePair b, int psnB, Params p) {
        connect(a, Peer.of(b, psnB), psnA, p);
        connect(b, Peer.of(a, psnA), psnB, p);
    }
}
