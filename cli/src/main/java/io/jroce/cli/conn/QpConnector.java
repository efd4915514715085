package io.jroce.cli.conn;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.QpAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QueuePair;
import io.jroce.wire.RoceV2;

/**
 * Moves an RC queue pair from wherever it is (RESET, INIT or RTR) to RTS towards a peer described by a
 * {@link PeerInfo}, the way ibv_rc_pingpong's {@code pp_connect_ctx} and perftest's {@code ctx_connect} do:
 * <ol>
 *   <li>RESET&rarr;INIT: P_Key index 0, port 1, {@link Params#accessFlags};</li>
 *   <li>INIT&rarr;RTR: address vector = the peer's GID as an IPv4 address ({@code Gid.toInetAddress()}), UDP
 *       {@link Params#udpPort} (4791), path MTU, dest QPN = peer QPN, rq_psn = peer PSN,
 *       max_dest_rd_atomic, min_rnr_timer;</li>
 *   <li>RTR&rarr;RTS: sq_psn = our PSN, timeout, retry_cnt, rnr_retry, max_rd_atomic.</li>
 * </ol>
 * Defaults are ibv_rc_pingpong's. A QP whose receives must be posted before the peer can send (rc_pingpong's
 * server) is moved to INIT early with {@link #toInit}; {@link #connect} then continues from there.
 */
public final class QpConnector {
    private QpConnector() {
    }

    /** Connection parameters; a mutable builder with ibv_rc_pingpong's defaults. */
    public static final class Params {
        private Mtu mtu = Mtu.MTU_1024;
        private int minRnrTimer = 12;
        private int timeout = 14;
        private int retryCnt = 7;
        private int rnrRetry = 7;
        private int maxRdAtomic = 1;
        private int maxDestRdAtomic = 1;
        private int accessFlags = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
        private int udpPort = RoceV2.UDP_PORT;

        /** ibv_rc_pingpong's values: MTU 1024, min_rnr_timer 12, timeout 14, retry_cnt 7, rnr_retry 7, rd_atomic 1/1. */
        public static Params defaults() {
            return new Params();
        }

        public Params mtu(Mtu v) { mtu = java.util.Objects.requireNonNull(v, "mtu"); return this; }
        public Params minRnrTimer(int v) { minRnrTimer = v; return this; }
        /** Local ACK timeout exponent: 4.096 us * 2^v (0: none). */
        public Params timeout(int v) { timeout = v; return this; }
        public Params retryCnt(int v) { retryCnt = v; return this; }
        public Params rnrRetry(int v) { rnrRetry = v; return this; }
        /** READs/atomics we may have outstanding towards the peer (at most the peer's max_dest_rd_atomic). */
        public Params maxRdAtomic(int v) { maxRdAtomic = v; return this; }
        /** READs/atomics we accept from the peer at once. */
        public Params maxDestRdAtomic(int v) { maxDestRdAtomic = v; return this; }
        /** The QP's remote access flags ({@link Access}); default all of them. */
        public Params accessFlags(int v) { accessFlags = v; return this; }
        /** The peer's RoCEv2 UDP port (4791 unless a test opened its device elsewhere). */
        public Params udpPort(int v) { udpPort = v; return this; }

        public Mtu mtu() { return mtu; }
        public int minRnrTimer() { return minRnrTimer; }
        public int timeout() { return timeout; }
        public int retryCnt() { return retryCnt; }
        public int rnrRetry() { return rnrRetry; }
        public int maxRdAtomic() { return maxRdAtomic; }
        public int maxDestRdAtomic() { return maxDestRdAtomic; }
        public int accessFlags() { return accessFlags; }
        public int udpPort() { return udpPort; }

        @Override
        public String toString() {
            return "mtu " + mtu.bytes() + " min_rnr_timer " + minRnrTimer + " timeout " + timeout + " retry_cnt " + retryCnt
                    + " rnr_retry " + rnrRetry + " max_rd_atomic " + maxRdAtomic + " max_dest_rd_atomic " + maxDestRdAtomic;
        }
    }

    /** RESET&rarr;INIT (does nothing if the QP is already past RESET). */
    public static void toInit(QueuePair qp, Params p) {
        if (qp.state() == QpState.RESET) {
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(p.accessFlags));
        }
    }

    /** Up to RTR towards {@code remote}. */
    public static void toRtr(QueuePair qp, PeerInfo remote, Params p) {
        toInit(qp, p);
        if (qp.state() == QpState.INIT) {
            qp.modify(new QpAttr().state(QpState.RTR)
                    .dest(remote.gid().toInetAddress(), p.udpPort)
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
     * RESET/INIT &rarr; INIT &rarr; RTR &rarr; RTS towards {@code remote}; {@code localPsn} is the PSN we
     * announced to the peer. Throws {@code VerbsException} if the endpoint refuses an attribute.
     */
    public static void connect(QueuePair qp, PeerInfo remote, int localPsn, Params p) {
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

    /** {@link #connect(QueuePair, PeerInfo, int, Params)} with our own {@link PeerInfo}'s PSN. */
    public static void connect(QueuePair qp, PeerInfo local, PeerInfo remote, Params p) {
        connect(qp, remote, local.psn(), p);
    }
}
