package io.jroce.cli.perf;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.RcConnect;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendWorkRequest;
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
 * <p>So before the exchange each side runs the test's own operation and size, through the same post and poll calls
 * the test makes, between two private QPs of its device (over its own socket: no packet leaves the host, and the
 * peer sees nothing), until the JIT has finished no compilation for {@link #JIT_QUIET_NANOS} or the time given has
 * passed. A latency test keeps one message in flight, the two QPs taking turns; a bandwidth test keeps
 * {@link #BW_WINDOW}. perftest has no such phase: C needs none. The device's counters include the warm-up's packets.
 */
final class JitWarmUp {
    /** The warm-up counts as done once the JIT has finished no compilation for this long (and it ran {@link #MIN_NANOS}). */
    static final long JIT_QUIET_NANOS = TimeUnit.MILLISECONDS.toNanos(300);
    static final long MIN_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
    /** How often the JIT's compilation time is read. */
    private static final long CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
    /** Messages a bandwidth test's warm-up keeps in flight. */
    static final int BW_WINDOW = 16;

    private final PerfRun run;

    JitWarmUp(PerfRun run) {
        this.run = run;
    }

    /** Runs for at most {@code maxNanos}; returns the operations it completed. */
    long run(long maxNanos) throws IOException, InterruptedException {
        long start = System.nanoTime();
        long deadline = start + maxNanos;
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        boolean jitTimed = jit != null && jit.isCompilationTimeMonitoringSupported();
        boolean send = run.test.isSend();
        int window = run.test.isLatency() ? 1 : BW_WINDOW;
        int len = (int) Math.max(8, run.s.size());
        ProtectionDomain pd = run.dev.allocPd();
        // a's half, then b's, each 8-byte aligned for the atomics
        int half = (len + 7) & ~7;
        MemoryRegion mr = pd.allocateAndRegister(2 * half + 8, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
        long base = (mr.address() + 7) & ~7L;
        CompletionQueue scq = run.dev.createCq(2 * window + 2);
        CompletionQueue rcq = run.dev.createCq(2 * window + 2);
        QueuePair a = null;
        QueuePair b = null;
        long posted = 0;
        long done = 0;
        try {
            a = pd.createQp(new QpInitAttr(scq, rcq).maxSendWr(window + 1).maxRecvWr(window + 1));
            b = pd.createQp(new QpInitAttr(scq, rcq).maxSendWr(window + 1).maxRecvWr(window + 1));
            RcConnect.connectPair(a, 0, b, 0, RcConnect.Params.defaults().mtu(run.s.mtu()).rdAtomic(Math.min(window, QueuePair.MAX_RD_ATOMIC))
                    .accessFlags(Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
            SendWorkRequest aToB = run.testWr(base, mr.lkey(), base + half, mr.rkey()).signaled();
            SendWorkRequest bToA = run.testWr(base + half, mr.lkey(), base, mr.rkey()).signaled();
            ReceiveWorkRequest intoA = new ReceiveWorkRequest(0, new Sge(base, len, mr.lkey()));
            ReceiveWorkRequest intoB = new ReceiveWorkRequest(0, new Sge(base + half, len, mr.lkey()));
            WorkCompletion[] wc = PerfRun.newWcs(1);
            long grace = deadline + run.s.timeout().toNanos();
            long compiled = jitTimed ? jit.getTotalCompilationTime() : 0;
            long quietSince = start;
            long checked = start;
            while (true) {
                long now = System.nanoTime();
                if (now - deadline >= 0) break;
                if (jitTimed && now - checked >= CHECK_NANOS) {
                    checked = now;
                    long t = jit.getTotalCompilationTime();
                    if (t != compiled) {
                        compiled = t;
                        quietSince = now;
                    } else if (now - quietSince >= JIT_QUIET_NANOS && now - start >= MIN_NANOS) {
                        break;
                    }
                }
                while (posted - done < window) {
                    // a latency test's two QPs take turns; a bandwidth test's a sends to b
                    boolean fromA = window > 1 || (posted & 1) == 0;
                    if (send) (fromA ? b : a).postRecv((fromA ? intoB : intoA).wrId(posted));
                    (fromA ? a : b).postSend((fromA ? aToB : bToA).wrId(posted));
                    posted++;
                }
                if (send && !run.awaitOne(rcq, wc, done, grace, true)) break;
                if (!run.awaitOne(scq, wc, done, grace, false)) break;
                done++;
            }
        } finally {
            if (a != null) a.destroy();
            if (b != null) b.destroy();
            mr.deregister();
        }
        return done;
    }
}
