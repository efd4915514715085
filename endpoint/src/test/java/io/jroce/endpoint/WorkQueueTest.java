package io.jroce.endpoint;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The work queue ring without a lock: posting threads claim consecutive indices with one compare-and-set and
 * publish each slot once filled; the one consumer sees WQEs whole, in index order, and a chain stays contiguous.
 */
class WorkQueueTest {
    /** A slot whose two halves are written apart: a consumer that saw one without the other read a torn WQE. */
    static final class Entry {
        long a;
        long b;
    }

    static final class Ring extends WorkQueue<Entry> {
        Ring(int maxWr) {
            super(new Entry[maxWr + 1], Entry::new);
        }
    }

    @Test
    void aRingOfNSlotsTakesNMinusOneAndAChainWholeOrNotAtAll() {
        Ring q = new Ring(4);
        assertEquals(0, q.claim(3));
        assertEquals(-1, q.claim(2), "3 of 4 taken: a chain of 2 does not fit");
        assertEquals(3, q.claim(1));
        assertEquals(-1, q.claim(1), "full at max_wr");
        assertEquals(4, q.depth());
        assertEquals(0, q.posted(), "claimed but not published: the consumer sees nothing");
        q.publish(1);
        assertEquals(0, q.posted(), "index 1 is published but 0 is not: nothing is visible yet");
        q.publish(0);
        assertEquals(2, q.posted());
        q.publish(3);
        assertEquals(2, q.posted());
        q.publish(2);
        assertEquals(4, q.posted());
        q.consumed = 2;
        assertEquals(4, q.claim(2), "consuming frees slots");
        q.publish(4);
        q.publish(5);
        assertEquals(6, q.posted(), "indices wrap around the slots");
        q.discardAll();
        assertTrue(q.isEmpty());
    }

    @Test
    void postingThreadsNeverLoseOrTearAWqeAndEachThreadsOrderHolds() throws Exception {
        int threads = 4, perThread = 200_000, maxChain = 5;
        Ring q = new Ring(63);
        CountDownLatch start = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> producers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final long tag = (long) t << 40;
            Thread p = new Thread(() -> {
                try {
                    start.await();
                    long seq = 0;
                    int chain = 1;
                    while (seq < perThread) {
                        int n = (int) Math.min(chain, perThread - seq);
                        long at;
                        while ((at = q.claim(n)) < 0) Thread.onSpinWait();
                        for (int i = 0; i < n; i++) {
                            Entry e = q.slot(at + i);
                            e.a = tag | (seq + i);
                            e.b = ~(tag | (seq + i));
                        }
                        for (int i = n - 1; i >= 0; i--) q.publish(at + i); // out of order on purpose
                        seq += n;
                        chain = chain % maxChain + 1;
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "poster-" + t);
            producers.add(p);
            p.start();
        }
        long[] next = new long[threads];
        long total = (long) threads * perThread;
        long seen = 0;
        start.countDown();
        while (seen < total && failure.get() == null) {
            long posted = q.posted();
            while (q.consumed != posted) {
                Entry e = q.head();
                assertEquals(~e.a, e.b, "a whole WQE");
                int t = (int) (e.a >>> 40);
                assertEquals(next[t], e.a & ((1L << 40) - 1), "poster " + t + "'s WQEs in its order, none lost");
                next[t]++;
                q.consumed = q.consumed + 1;
                seen++;
            }
        }
        for (Thread p : producers) p.join();
        assertNull(failure.get());
        for (int t = 0; t < threads; t++) assertEquals(perThread, next[t]);
        assertEquals(0, q.depth());
    }
}
