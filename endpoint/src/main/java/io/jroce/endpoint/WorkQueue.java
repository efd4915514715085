package io.jroce.endpoint;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.function.Supplier;

/**
 * A work queue ring (rdma_rxe rxe_queue.h): slots allocated once with the queue, a producer side that posting
 * threads advance without a lock, and a consumer index that only the event loop advances as WQEs complete, flush
 * or are discarded. Indices count WQEs since the QP was created (longs, never wrapped); index {@code i} lives in
 * slot {@code i mod slots}.
 *
 * <p>Posting threads {@link #claim} indices with one compare-and-set of {@link #claimed}, fill the claimed slots, then
 * {@link #publish} each: a slot records the index last published into it (a release store), and the event loop's
 * {@link #posted()} moves past a slot once it holds the index expected there (an acquire load). So threads that post
 * to one QP at once never wait for each other, a chain posted by one call occupies consecutive indices, and the
 * event loop sees every WQE whole, in index order, whatever order the posting threads finish in.
 *
 * <p>As in a hardware ring, N slots hold N-1 entries: the ring is full when the producer is one slot behind the
 * consumer, so "full" and "empty" never look alike (rxe_queue.h {@code queue_full}). A queue created for
 * {@code max_wr} work requests therefore has {@code max_wr + 1} slots, as rxe_queue_init allocates.
 */
abstract class WorkQueue<W> {
    private static final VarHandle CLAIMED;
    private static final VarHandle PUBLISHED = MethodHandles.arrayElementVarHandle(long[].class);

    static {
        try {
            CLAIMED = MethodHandles.lookup().findVarHandle(WorkQueue.class, "claimed", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final W[] slots;
    /** For each slot: 1 + the index last published into it (0: none yet). */
    private final long[] published;
    /** Producer index: WQEs handed to posting threads (published or being filled). */
    private volatile long claimed;
    /** Event loop only: every WQE below this index is published. */
    private long visible;
    /** Consumer index: WQEs completed, flushed or discarded; their slots are free again. */
    volatile long consumed;

    /** {@code slots} is an empty array of {@code max_wr + 1}; each slot is made once, here. */
    WorkQueue(W[] slots, Supplier<W> newSlot) {
        for (int i = 0; i < slots.length; i++) slots[i] = newSlot.get();
        this.slots = slots;
        this.published = new long[slots.length];
    }

    final W slot(long index) {
        return slots[(int) (index % slots.length)];
    }

    /**
     * Posting thread: claims {@code n} consecutive indices and returns the first, or -1 when fewer than {@code n}
     * slots are free (nothing is claimed then). Each claimed slot must be filled and {@link #publish published}, in
     * any order.
     */
    final long claim(int n) {
        while (true) {
            long c = claimed;
            if (capacity() - (c - consumed) < n) return -1;
            if (CLAIMED.compareAndSet(this, c, c + n)) return c;
        }
    }

    /** Posting thread: the WQE at {@code index} (a claimed one, now filled) may be consumed. */
    final void publish(long index) {
        PUBLISHED.setRelease(published, (int) (index % slots.length), index + 1);
    }

    /** Event loop: WQEs published so far, counted from the first; every index below is published and whole. */
    final long posted() {
        long v = visible;
        int n = slots.length;
        if ((long) PUBLISHED.getAcquire(published, (int) (v % n)) != v + 1) return v; // nothing new: no store
        do v++; while ((long) PUBLISHED.getAcquire(published, (int) (v % n)) == v + 1);
        visible = v;
        return v;
    }

    /** The oldest WQE not yet consumed (meaningful only when not {@link #isEmpty()}). Event loop. */
    final W head() {
        return slot(consumed);
    }

    /** Event loop: nothing published waits to be consumed. */
    final boolean isEmpty() {
        return consumed == posted();
    }

    /** How many WQEs the ring holds at most: {@code max_wr}. */
    final int capacity() {
        return slots.length - 1;
    }

    /** WQEs posted (or being posted) and not yet consumed; any thread, a snapshot. */
    final long depth() {
        return claimed - consumed;
    }

    /**
     * Event loop: drops every posted WQE without a completion (a modify to RESET, IBA 10.3.1). A post that
     * claimed its slots before the QP left its posting states is waited for: it publishes without blocking.
     */
    final void discardAll() {
        long c = claimed;
        while (posted() - c < 0) Thread.onSpinWait();
        consumed = c;
    }
}
