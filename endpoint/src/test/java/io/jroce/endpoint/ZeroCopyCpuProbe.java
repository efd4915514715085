package io.jroce.endpoint;

import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

/**
 * A measurement run by hand, not a test (its name keeps it out of the suite): the event loops' CPU time per GB of
 * 1 MiB RDMA WRITEs (a sends) and READs (b sends the responses) with gathered send off and on, two pairs of devices
 * in one JVM, alternated {@code probe.rounds} times over {@code probe.mb} MiB each. Thread CPU time includes the
 * kernel's time in the loop's system calls. Run with
 * {@code mvn -B -ntp -q -pl endpoint -am test -Dtest=ZeroCopyCpuProbe -Dsurefire.failIfNoSpecifiedTests=false}
 * and read the {@code PROBE} lines; the figures are in docs/reports/performance.md.
 */
class ZeroCopyCpuProbe {
    private static final int MSG = 1 << 20;

    @Test
    void probe() throws Exception {
        int rounds = Integer.getInteger("probe.rounds", 5);
        long bytes = Long.getLong("probe.mb", 512) << 20;
        try (Pair on = new Pair(cfg("127.0.92.1", true), cfg("127.0.92.2", true));
             Pair off = new Pair(cfg("127.0.92.1", false), cfg("127.0.92.2", false))) {
            Pair[] pairs = {off, on};
            String[] names = {"copy", "gather"};
            Setup[] s = {new Setup(off), new Setup(on)};
            for (Setup x : s) { x.run(true, 64L << 20); x.run(false, 64L << 20); }
            List<String> lines = new ArrayList<>();
            for (int r = 0; r < rounds; r++) {
                for (int i = 0; i < 2; i++) {
                    for (boolean write : new boolean[] {true, false}) {
                        long[] res = s[i].run(write, bytes);
                        double gb = bytes / 1e9;
                        String l = String.format("round %d %-6s %-5s senderLoop %.3f s/GB receiverLoop %.3f s/GB wall %.2f Gbit/s",
                                r, names[i], write ? "WRITE" : "READ", res[0] / 1e9 / gb, res[1] / 1e9 / gb, bytes * 8.0 / res[2]);
                        System.out.println("PROBE " + l);
                    }
                }
            }
        }
    }

    private static DeviceConfig cfg(String a, boolean zc) {
        return new DeviceConfig(Pair.addr(a)).port(0).zeroCopy(zc);
    }

    private static final class Setup {
        final Pair p;
        final Pair.Conn c;
        final MemoryRegion src, dst;
        final long ta, tb;
        final WorkCompletion[] wcs = new WorkCompletion[16];

        Setup(Pair p) {
            this.p = p;
            c = p.connect(Mtu.MTU_4096, 100, 200);
            src = p.pdA.allocateAndRegister(8 * MSG, Access.LOCAL_WRITE);
            dst = p.pdB.allocateAndRegister(8 * MSG, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
            ta = p.a.transport().call(() -> Thread.currentThread().getId());
            tb = p.b.transport().call(() -> Thread.currentThread().getId());
        }

        /** WRITE a->b, or READ by a from b (b sends the payload): {senderLoopCpu, receiverLoopCpu, wallNanos}. */
        long[] run(boolean write, long bytes) throws Exception {
            com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            long n = bytes / MSG;
            long a0 = mx.getThreadCpuTime(ta), b0 = mx.getThreadCpuTime(tb), t0 = System.nanoTime();
            long posted = 0, done = 0;
            while (done < n) {
                while (posted < n && posted - done < 8) {
                    int slot = (int) (posted % 8);
                    SendWorkRequest wr = write
                            ? new SendWorkRequest(posted, WrOpcode.RDMA_WRITE, Sge.of(src, slot * MSG, MSG)).remote(dst.address() + (long) slot * MSG, dst.rkey()).signaled()
                            : new SendWorkRequest(posted, WrOpcode.RDMA_READ, Sge.of(src, slot * MSG, MSG)).remote(dst.address() + (long) slot * MSG, dst.rkey()).signaled();
                    c.qpA.postSend(wr);
                    posted++;
                }
                int k = c.cqA.poll(wcs, 16, 1, java.util.concurrent.TimeUnit.MILLISECONDS);
                for (int i = 0; i < k; i++) if (wcs[i].status() != WcStatus.SUCCESS) throw new AssertionError(wcs[i].toString());
                done += k;
            }
            long t1 = System.nanoTime();
            long a1 = mx.getThreadCpuTime(ta), b1 = mx.getThreadCpuTime(tb);
            return write ? new long[] {a1 - a0, b1 - b0, t1 - t0} : new long[] {b1 - b0, a1 - a0, t1 - t0};
        }
    }
}
