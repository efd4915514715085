package io.jroce.it;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WcStatus;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * One device pair in one JVM (127.0.11.4 / 127.0.11.5) with many connected RC QP pairs:
 * <ol>
 * <li>1,000 QP pairs move data at once: each posts 4 RDMA WRITEs of 4 KiB and a READ of the 16 KiB back; every QP
 *     completes within the timeout (none starves) and every byte is verified at both ends;</li>
 * <li>10,000 QP pairs are created and connected, traffic runs on a sample of 100; heap bytes per QP (used after GC
 *     / QPs) and the thread count are reported, and the thread count must not grow with the QPs;</li>
 * <li>teardown (destroy every QP, close the devices) leaves qpCount() == 0 and the thread count back at its start.</li>
 * </ol>
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ManyQpsIT {
    static final InetAddress A = Verbs.addr("127.0.11.4");
    static final InetAddress B = Verbs.addr("127.0.11.5");
    static final int CHUNK = 4096;
    static final int PER_QP = 4 * CHUNK;
    /** Local ACK timeout exponent (4.096 us * 2^n); 14 (67 ms) collapses under the 1,000-QP burst, see the class comment. */
    static final int ACK_TIMEOUT = Integer.getInteger("jroce.manyqps.timeout", 18);

    final long seed = Long.getLong("jroce.seed", System.nanoTime());
    final ThreadMXBean threads = ManagementFactory.getThreadMXBean();

    record Conn(QueuePair a, QueuePair b) {
    }

    @Test
    void thousandsOfQueuePairs() throws Exception {
        System.out.println("ManyQpsIT seed: -Djroce.seed=" + seed);
        int threadsAtStart = threads.getThreadCount();
        long heapAtStart = Verbs.usedHeapAfterGc();
        run(threadsAtStart); // in its own frame, so nothing the test held stays reachable afterwards
        boolean back = Verbs.waitFor(() -> threads.getThreadCount() <= threadsAtStart, 10_000);
        long heapEnd = Verbs.usedHeapAfterGc();
        System.out.printf("after close: %d threads (start %d); heap used after GC %.1f MiB (start %.1f MiB)%n",
                threads.getThreadCount(), threadsAtStart, heapEnd / 1048576.0, heapAtStart / 1048576.0);
        assertTrue(back, "threads not released after close: " + threads.getThreadCount() + " > " + threadsAtStart);
        assertTrue(heapEnd - heapAtStart < 32L << 20, "heap not released after close: " + (heapEnd - heapAtStart) + " bytes more");
    }

    private void run(int threadsAtStart) throws Exception {
        Device a = Device.open(A);
        Device b = Device.open(B);
        int threadsWithDevices;
        try {
            threadsWithDevices = threads.getThreadCount();
            ProtectionDomain pdA = a.allocPd();
            ProtectionDomain pdB = b.allocPd();
            CompletionQueue cqA = a.createCq(16384);
            CompletionQueue cqB = b.createCq(16384);

            // ---- phase 1: 1,000 QP pairs, all moving data at once ----------------------------------
            int n1 = 1000;
            MemoryRegion src = pdA.registerMemory(ByteBuffer.allocateDirect(n1 * PER_QP), Access.LOCAL_WRITE);
            MemoryRegion back = pdA.registerMemory(ByteBuffer.allocateDirect(n1 * PER_QP), Access.LOCAL_WRITE);
            MemoryRegion dst = pdB.registerMemory(ByteBuffer.allocateDirect(n1 * PER_QP),
                    Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
            byte[] data = new byte[n1 * PER_QP];
            new Random(seed).nextBytes(data);
            src.buffer().put(data);

            long t = System.nanoTime();
            List<Conn> conns = connect(pdA, pdB, cqA, cqB, n1);
            double connectSec = (System.nanoTime() - t) / 1e9;
            assertEquals(n1, a.qpCount());

            t = System.nanoTime();
            for (int i = 0; i < n1; i++) post(conns.get(i).a(), src, back, dst, i, i);
            long[] doneAt = new long[n1];
            int[] qpIndex = indexByQpn(conns);
            List<WorkCompletion> wcs = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            WorkCompletion[] wbuf = new WorkCompletion[64];
            while (wcs.size() < n1) {
                long left = deadline - System.nanoTime();
                if (left <= 0) fail("starvation: only " + wcs.size() + " of " + n1 + " QPs completed in 60 s");
                int k = cqA.poll(wbuf, Math.min(64, n1 - wcs.size()), left, TimeUnit.NANOSECONDS);
                for (int q = 0; q < k; q++) {
                    WorkCompletion wc = wbuf[q].copy();
                    wcs.add(wc);
                    if (wc.status() == WcStatus.SUCCESS) doneAt[qpIndex[wc.qpNum()]] = System.nanoTime() - t;
                }
            }
            for (WorkCompletion wc : wcs) {
                if (wc.status() != WcStatus.SUCCESS) {
                    QueuePair qa = conns.get(qpIndex[wc.qpNum()]).a();
                    fail("QP 0x" + Integer.toHexString(wc.qpNum()) + ": " + wc + " after " + (System.nanoTime() - t) / 1e6 + " ms\n  A: "
                            + a.counters() + "\n  B: " + b.counters() + "\n  QP A: " + qa.counters() + "\n  QP B: "
                            + conns.get(qpIndex[wc.qpNum()]).b().counters());
                }
            }
            double trafficSec = (System.nanoTime() - t) / 1e9;
            byte[] got = new byte[n1 * PER_QP];
            dst.buffer().get(got);
            assertTrue(java.util.Arrays.equals(data, got), "WRITE data landed wrong on some QP");
            back.buffer().get(got);
            assertTrue(java.util.Arrays.equals(data, got), "READ back returned wrong data on some QP");
            long[] sorted = doneAt.clone();
            java.util.Arrays.sort(sorted);
            System.out.printf("phase 1: %d QP pairs connected in %.2f s; 4x4 KiB WRITE + 16 KiB READ each: all done in %.2f s "
                            + "(first QP %.1f ms, median %.1f ms, last %.1f ms)%n", n1, connectSec, trafficSec,
                    sorted[0] / 1e6, sorted[n1 / 2] / 1e6, sorted[n1 - 1] / 1e6);
            for (Conn c : conns) {
                assertEquals(QpState.RTS, c.a().state());
                assertEquals(QpState.RTS, c.b().state());
            }
            destroy(conns);
            conns = null;
            assertEquals(0, a.qpCount());
            assertEquals(0, b.qpCount());

            // ---- phase 2: 10,000 QP pairs, traffic on 100 of them --------------------------------------
            int n2 = 10_000;
            long heapBefore = Verbs.usedHeapAfterGc();
            t = System.nanoTime();
            List<Conn> many = connect(pdA, pdB, cqA, cqB, n2);
            double connect2 = (System.nanoTime() - t) / 1e9;
            long heapAfter = Verbs.usedHeapAfterGc();
            int threadsWithQps = threads.getThreadCount();
            assertEquals(n2, a.qpCount());
            assertEquals(n2, b.qpCount());
            double perQp = (heapAfter - heapBefore) / (2.0 * n2);
            System.out.printf("phase 2: %d QP pairs (%d QPs) created and connected in %.2f s; heap used after GC %.1f MiB -> %.1f MiB:"
                            + " %.0f bytes per QP (maxSendWr 16, maxRecvWr 16)%n", n2, 2 * n2, connect2,
                    heapBefore / 1048576.0, heapAfter / 1048576.0, perQp);
            System.out.printf("threads: %d at start, %d with two devices open, %d with %d QPs%n", threadsAtStart, threadsWithDevices,
                    threadsWithQps, 2 * n2);
            assertTrue(threadsWithQps <= threadsWithDevices + 4, "threads grew with the QPs: " + threadsWithDevices + " -> " + threadsWithQps);
            assertTrue(perQp < 64 * 1024, "more than 64 KiB of heap per QP: " + perQp);

            Random pick = new Random(seed ^ 0x5A);
            int sample = 100;
            int[] chosen = pick.ints(0, n2).distinct().limit(sample).toArray();
            dst.buffer().put(new byte[n1 * PER_QP]);
            back.buffer().put(new byte[n1 * PER_QP]);
            int[] idx2 = indexByQpn(many);
            t = System.nanoTime();
            for (int s = 0; s < sample; s++) post(many.get(chosen[s]).a(), src, back, dst, s, chosen[s]);
            List<WorkCompletion> wcs2 = Verbs.await(cqA, sample, 60_000);
            for (WorkCompletion wc : wcs2) {
                if (wc.status() != WcStatus.SUCCESS) fail("QP 0x" + Integer.toHexString(wc.qpNum()) + " (#" + idx2[wc.qpNum()] + "): " + wc);
            }
            byte[] want = java.util.Arrays.copyOf(data, sample * PER_QP);
            byte[] got2 = new byte[sample * PER_QP];
            dst.buffer().get(got2);
            assertTrue(java.util.Arrays.equals(want, got2), "sample WRITE data wrong");
            back.buffer().get(got2);
            assertTrue(java.util.Arrays.equals(want, got2), "sample READ data wrong");
            System.out.printf("phase 2: traffic on %d of %d QPs done in %.1f ms%n", sample, n2, (System.nanoTime() - t) / 1e6);

            t = System.nanoTime();
            destroy(many);
            assertEquals(0, a.qpCount());
            assertEquals(0, b.qpCount());
            many = null;
            System.out.printf("destroyed %d QPs in %.2f s%n", 2 * n2, (System.nanoTime() - t) / 1e9);
        } finally {
            try {
                a.close();
            } finally {
                b.close();
            }
        }
    }

    private static int[] indexByQpn(List<Conn> conns) {
        int max = 0;
        for (Conn c : conns) max = Math.max(max, c.a().qpNum());
        int[] idx = new int[max + 1];
        for (int i = 0; i < conns.size(); i++) idx[conns.get(i).a().qpNum()] = i;
        return idx;
    }

    /** 4 unsignaled WRITEs of 4 KiB into QP slot {@code slot}'s 16 KiB at B, then a signaled READ of all 16 KiB back. */
    private static void post(QueuePair qp, MemoryRegion src, MemoryRegion back, MemoryRegion dst, int slot, long wrId) {
        long base = (long) slot * PER_QP;
        SendWorkRequest first = null;
        SendWorkRequest last = null;
        for (int k = 0; k < 4; k++) {
            SendWorkRequest w = new SendWorkRequest(wrId, WrOpcode.RDMA_WRITE, Sge.of(src, base + k * CHUNK, CHUNK))
                    .remote(dst.address() + base + k * CHUNK, dst.rkey());
            if (first == null) first = w; else last.next(w);
            last = w;
        }
        last.next(new SendWorkRequest(wrId, WrOpcode.RDMA_READ, Sge.of(back, base, PER_QP)).remote(dst.address() + base, dst.rkey()).signaled());
        qp.postSend(first);
    }

    private static List<Conn> connect(ProtectionDomain pdA, ProtectionDomain pdB, CompletionQueue cqA, CompletionQueue cqB, int n) {
        List<Conn> conns = new ArrayList<>(n);
        Random r = new Random(n);
        for (int i = 0; i < n; i++) {
            QueuePair qa = pdA.createQp(new QpInitAttr(cqA).maxSendWr(16).maxRecvWr(16));
            QueuePair qb = pdB.createQp(new QpInitAttr(cqB).maxSendWr(16).maxRecvWr(16));
            Verbs.connect(qa, qb, Mtu.MTU_4096, r.nextInt(1 << 24), r.nextInt(1 << 24), 4, ACK_TIMEOUT);
            conns.add(new Conn(qa, qb));
        }
        return conns;
    }

    private static void destroy(List<Conn> conns) {
        for (Conn c : conns) {
            c.a().destroy();
            c.b().destroy();
        }
    }
}
