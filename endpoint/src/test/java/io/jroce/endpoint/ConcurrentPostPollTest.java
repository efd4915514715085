package io.jroce.endpoint;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Posting and polling take no lock, and several threads may still post to one QP and poll one CQ at once: every
 * message arrives once, each posting thread's messages in the order it posted them, and every completion is
 * taken by exactly one poller.
 */
class ConcurrentPostPollTest {
    static final int POSTERS = 4;
    static final int PER_POSTER = 1500;
    static final int POLLERS = 3;
    static final int TOTAL = POSTERS * PER_POSTER;
    static final int SIZE = 8;

    @Test
    void postersToOneQpAndPollersOfOneCqLoseNothingAndKeepEachPostersOrder() throws Exception {
        try (Pair p = new Pair()) {
            CompletionQueue cqA = p.a.createCq(64);
            CompletionQueue cqB = p.b.createCq(TOTAL);
            QueuePair qa = p.pdA.createQp(new QpInitAttr(cqA).maxSendWr(32).maxRecvWr(1));
            QueuePair qb = p.pdB.createQp(new QpInitAttr(cqB).maxSendWr(1).maxRecvWr(TOTAL));
            p.connect(qa, qb, Mtu.MTU_1024, 0x100, 0x200, 2, 2);
            MemoryRegion src = p.pdA.allocateAndRegister(TOTAL * SIZE, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(TOTAL * SIZE, Access.LOCAL_WRITE);
            for (int i = 0; i < TOTAL; i++) {
                // message k of poster t is the long t * 2^32 + k, in its own place of the source region
                src.mem().setLong(i * SIZE, ((long) (i / PER_POSTER) << 32) | (i % PER_POSTER));
            }
            // receive i lands at dst[i]; a chain of receives posted by one call, as a poster's chains below
            ReceiveWorkRequest chain = null;
            for (int i = TOTAL - 1; i >= 0; i--) chain = new ReceiveWorkRequest(i, Sge.of(dst, (long) i * SIZE, SIZE)).next(chain);
            qb.postRecv(chain);

            CountDownLatch go = new CountDownLatch(1);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            AtomicIntegerArray taken = new AtomicIntegerArray(TOTAL);
            AtomicInteger polled = new AtomicInteger();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < POSTERS; t++) {
                final int poster = t;
                threads.add(new Thread(() -> {
                    try {
                        go.await();
                        int k = 0;
                        while (k < PER_POSTER) {
                            int n = Math.min(1 + k % 3, PER_POSTER - k); // chains of 1 to 3
                            SendWorkRequest first = null;
                            for (int j = n - 1; j >= 0; j--) {
                                int i = poster * PER_POSTER + k + j;
                                first = new SendWorkRequest(i, WrOpcode.SEND, Sge.of(src, (long) i * SIZE, SIZE)).next(first);
                            }
                            try {
                                qa.postSend(first);
                                k += n;
                            } catch (VerbsException e) {
                                if (!e.isQueueFull()) throw e;
                                // part of the chain may be in: go on from the first request refused
                                for (SendWorkRequest w = first; w != e.badRequest(); w = w.next()) k++;
                                Thread.onSpinWait();
                            }
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }, "poster-" + t));
            }
            for (int t = 0; t < POLLERS; t++) {
                threads.add(new Thread(() -> {
                    WorkCompletion[] wcs = new WorkCompletion[16];
                    try {
                        go.await();
                        while (polled.get() < TOTAL && failure.get() == null) {
                            int n = cqB.poll(wcs);
                            for (int j = 0; j < n; j++) {
                                assertEquals(WcStatus.SUCCESS, wcs[j].status, wcs[j].toString());
                                taken.incrementAndGet((int) wcs[j].wrId);
                            }
                            if (n > 0) polled.addAndGet(n);
                            else Thread.onSpinWait();
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }, "poller-" + t));
            }
            threads.forEach(Thread::start);
            go.countDown();
            for (Thread t : threads) t.join(60_000);
            assertNull(failure.get());
            assertEquals(TOTAL, polled.get(), "completions polled");
            for (int i = 0; i < TOTAL; i++) assertEquals(1, taken.get(i), "receive " + i + " polled once");

            // receives are consumed in order, so each poster's messages sit in dst in the order it posted them
            int[] next = new int[POSTERS];
            for (int i = 0; i < TOTAL; i++) {
                long v = dst.mem().getLong(i * SIZE);
                int poster = (int) (v >>> 32);
                assertTrue(poster >= 0 && poster < POSTERS, "message " + i + ": " + Long.toHexString(v));
                assertEquals(next[poster], (int) v, "poster " + poster + "'s messages in its order");
                next[poster]++;
            }
            for (int t = 0; t < POSTERS; t++) assertEquals(PER_POSTER, next[t]);
        }
    }
}
