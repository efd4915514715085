package io.jroce.cli.perf;

import io.jroce.cli.Converters;
import io.jroce.cli.conn.PeerTimeout;
import io.jroce.endpoint.Access;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.RcConnect;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.SendFlags;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WorkCompletion;

import java.io.IOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.concurrent.TimeUnit;

/**
 * The JIT warm-up before a test ({@code --warmup}). A fresh JVM runs its first thousands of messages interpreted or
 * in code compiled on a first profile, while its compiler threads take the cores the test needs. Measured with
 * 64-byte SENDs over perftest's default 1,000 iterations, 2 x t_typical was 125-141 us against 44-45 us over
 * 300,000, and 2 x t_99 4.3-5.4 ms against 167-219 us; a 5-second WRITE of 1 MiB messages spent its whole sample
 * window beside a compiler thread that took a tenth of the sender's CPU.
 *
 * <p>So once the test's QPs are connected, and before the sync that starts the exchange, each side runs the test's own
 * operation and size through the same post and poll calls the test makes, between private QPs of its device (over
 * its own socket: no packet leaves the host, and the peer, waiting in the sync, sees nothing), until the JIT has
 * finished no compilation for {@link #JIT_QUIET_NANOS} or the time given has passed. A latency test keeps one
 * message in flight, its two QPs taking turns. A bandwidth test runs the test's own loop: as many pairs as the test
 * has QPs (at most {@link #MAX_PAIRS}), the test's send queue depth of messages in flight on each, one signaled in
 * every cq_mod, completions polled {@link #POLL_BATCH} at a time. Anything less is a different program to the
 * JIT: a warm-up of one pair with every message signaled, run before the test's QPs existed, left code whose
 * assumptions (every send signaled, one QP in the table, no flow waiting for the send budget) the test broke in
 * its first millisecond, and the test's first seconds then ran interpreted while C2 compiled it all again.
 * perftest has no such phase: C needs none. The device's counters include the warm-up's packets.
 */
final class JitWarmUp {
    /** The warm-up counts as done once the JIT has finished no compilation for this long (and it ran {@link #MIN_NANOS}). */
    static final long JIT_QUIET_NANOS = TimeUnit.MILLISECONDS.toNanos(300);
    static final long MIN_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
    /** How often the JIT's compilation time is read. */
    private static final long CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
    /** At most this many pairs of QPs in a bandwidth test's warm-up. */
    static final int MAX_PAIRS = 16;
    /** Completions a bandwidth test polls at a time ({@link BandwidthRun}'s batch). */
    static final int POLL_BATCH = 64;

    private final PerfRun run;

    JitWarmUp(PerfRun run) {
        this.run = run;
    }

    /** Runs for at most {@code maxNanos}; returns the operations it completed. */
    long run(long maxNanos) throws IOException, InterruptedException {
        long start = System.nanoTime();
        Quiet quiet = new Quiet(start, start + maxNanos);
        boolean latency = run.test.isLatency();
        int pairs = latency ? 1 : Math.max(1, Math.min(run.s.qps(), MAX_PAIRS));
        int window = latency ? 1 : run.txDepth;
        int len = (int) Math.max(8, run.s.size());
        ProtectionDomain pd = run.dev.allocPd();
        // a's half, then b's, each 8-byte aligned for the atomics: every pair uses the same two halves
        int half = (len + 7) & ~7;
        MemoryRegion mr = pd.allocateAndRegister(2 * half + 8, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
        long base = (mr.address() + 7) & ~7L;
        // a receive completion waits for the next drain: at most two windows of them per pair
        CompletionQueue scq = run.dev.createCq(pairs * window + 16);
        CompletionQueue rcq = run.dev.createCq(2 * pairs * window + 16);
        QueuePair[] a = new QueuePair[pairs];
        QueuePair[] b = new QueuePair[pairs];
        try {
            RcConnect.Params params = RcConnect.Params.defaults().mtu(run.s.mtu()).rdAtomic(Math.min(window, QueuePair.MAX_RD_ATOMIC))
                    .accessFlags(Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
            for (int i = 0; i < pairs; i++) {
                a[i] = pd.createQp(new QpInitAttr(scq, rcq).maxSendWr(window + 1).maxRecvWr(window + 1));
                b[i] = pd.createQp(new QpInitAttr(scq, rcq).maxSendWr(window + 1).maxRecvWr(window + 1));
                RcConnect.connectPair(a[i], 0, b[i], 0, params);
            }
            SendWorkRequest aToB = run.testWr(base, mr.lkey(), base + half, mr.rkey());
            ReceiveWorkRequest intoB = new ReceiveWorkRequest(0, new Sge(base + half, len, mr.lkey()));
            long grace = quiet.deadline + run.s.timeout().toNanos();
            if (latency) {
                SendWorkRequest bToA = run.testWr(base + half, mr.lkey(), base, mr.rkey()).signaled();
                ReceiveWorkRequest intoA = new ReceiveWorkRequest(0, new Sge(base, len, mr.lkey()));
                return pingPong(quiet, a[0], b[0], aToB.signaled(), bToA, intoA, intoB, scq, rcq, grace);
            }
            return stream(quiet, a, b, window, aToB, intoB, scq, rcq, grace);
        } finally {
            for (int i = 0; i < pairs; i++) {
                if (a[i] != null) a[i].destroy();
                if (b[i] != null) b[i].destroy();
            }
            mr.deregister();
        }
    }

    /** A latency test's: one message in flight, a and b taking turns. */
    private long pingPong(Quiet quiet, QueuePair a, QueuePair b, SendWorkRequest aToB, SendWorkRequest bToA,
                          ReceiveWorkRequest intoA, ReceiveWorkRequest intoB, CompletionQueue scq, CompletionQueue rcq, long grace)
            throws IOException, InterruptedException {
        boolean send = run.test.isSend();
        WorkCompletion[] wc = PerfRun.newWcs(1);
        long done = 0;
        while (!quiet.over()) {
            boolean fromA = (done & 1) == 0;
            if (send) (fromA ? b : a).postRecv((fromA ? intoB : intoA).wrId(done));
            (fromA ? a : b).postSend((fromA ? aToB : bToA).wrId(done));
            if (send && !run.awaitOne(rcq, wc, done, grace, true)) break;
            if (!run.awaitOne(scq, wc, done, grace, false)) break;
            done++;
        }
        return done;
    }

    /** A bandwidth test's: each a keeps {@code window} messages in flight to its b, one signaled in every cq_mod. */
    private long stream(Quiet quiet, QueuePair[] a, QueuePair[] b, int window, SendWorkRequest aToB, ReceiveWorkRequest intoB,
                        CompletionQueue scq, CompletionQueue rcq, long grace) throws IOException, InterruptedException {
        boolean send = run.test.isSend();
        int pairs = a.length;
        int cqMod = run.cqMod;
        long[] posted = new long[pairs];
        long[] completed = new long[pairs];
        WorkCompletion[] wcs = PerfRun.newWcs(POLL_BATCH);
        long done = 0;
        long lastCompletion = System.nanoTime();
        while (!quiet.over()) {
            for (int i = 0; i < pairs; i++) {
                while (posted[i] - completed[i] < window) {
                    long seq = posted[i];
                    if (send) b[i].postRecv(intoB.wrId(seq));
                    a[i].postSend(aToB.wrId(((long) i << PerfRun.QP_SHIFT) | seq).flags(seq % cqMod == cqMod - 1 ? SendFlags.SIGNALED : 0));
                    posted[i]++;
                }
            }
            if (send) {
                int r;
                while ((r = rcq.poll(wcs, wcs.length)) > 0) {
                    for (int k = 0; k < r; k++) run.checkOk(wcs[k]);
                }
            }
            int n = scq.poll(wcs, wcs.length, 10, TimeUnit.MILLISECONDS);
            long now = System.nanoTime();
            for (int k = 0; k < n; k++) {
                run.checkOk(wcs[k]);
                int i = (int) (wcs[k].wrId() >>> PerfRun.QP_SHIFT);
                long upTo = (wcs[k].wrId() & PerfRun.SEQ_MASK) + 1;
                done += upTo - completed[i];
                completed[i] = upTo;
                lastCompletion = now;
            }
            if (n == 0 && (now - grace >= 0 || now - lastCompletion > run.s.timeout().toNanos())) {
                throw new PeerTimeout("no send completion for " + Converters.seconds(run.s.timeout()) + " after " + done
                        + " messages on the warm-up's private pairs");
            }
        }
        return done;
    }

    /** When the warm-up is over: its time is up, or the JIT has been idle long enough. */
    private static final class Quiet {
        private final CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        private final boolean timed = jit != null && jit.isCompilationTimeMonitoringSupported();
        private final long start;
        final long deadline;
        private long compiled;
        private long quietSince;
        private long checked;

        Quiet(long start, long deadline) {
            this.start = start;
            this.deadline = deadline;
            this.compiled = timed ? jit.getTotalCompilationTime() : 0;
            this.quietSince = start;
            this.checked = start;
        }

        boolean over() {
            long now = System.nanoTime();
            if (now - deadline >= 0) return true;
            if (timed && now - checked >= CHECK_NANOS) {
                checked = now;
                long t = jit.getTotalCompilationTime();
                if (t != compiled) {
                    compiled = t;
                    quietSince = now;
                } else {
                    return now - quietSince >= JIT_QUIET_NANOS && now - start >= MIN_NANOS;
                }
            }
            return false;
        }
    }
}
