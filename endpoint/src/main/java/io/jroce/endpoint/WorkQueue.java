package io.jroce.endpoint;

import java.util.function.Supplier;

/**
 * A work queue ring (rdma_rxe rxe_queue.h): slots allocated once with the queue, a producer index that
 * application threads advance under {@link #lock} when they post, and a consumer index that only the
 * event loop advances as WQEs complete, flush or are discarded. Both indices count WQEs since the QP was
 * created (longs, never wrapped); index {@code i} lives in slot {@code i mod slots}.
 *
 * <p>As in a hardware ring, N slots hold N-1 entries: the ring is full when the producer is one slot
 * behind the consumer, so "full" and "empty" never look alike (rxe_queue.h {@code queue_full}). A queue
 * created for {@code max_wr} work requests therefore has {@code max_wr + 1} slots, as rxe_queue_init allocates.
 */
abstract class WorkQueue<W> {
    private final W[] slots;
    /** Serialises posting threads; the event loop takes it only to discard the whole ring. */
    final Object lock = new Object();
    /** Producer index: WQEs posted. */
    volatile long posted;
    /** Consumer index: WQEs completed, flushed or discarded; their slots are free again. */
    volatile long consumed;

    /** {@code slots} is an empty array of {@code max_wr + 1}; each slot is made once, here. */
    WorkQueue(W[] slots, Supplier<W> newSlot) {
        for (int i = 0; i < slots.length; i++) slots[i] = newSlot.get();
        this.slots = slots;
    }

    final W slot(long index) {
        return slots[(int) (index % slots.length)];
    }

    /** The oldest WQE not yet consumed (meaningful only when not {@link #isEmpty()}). */
    final W head() {
        return slot(consumed);
    }

    /** The slot the next post fills (meaningful only when not {@link #isFull()}). */
    final W tail() {
        return slot(posted);
    }

    final boolean isEmpty() {
        return consumed == posted;
    }

    final boolean isFull() {
        return posted - consumed >= slots.length - 1;
    }

    /** How many WQEs the ring holds at most: {@code max_wr}. */
    final int capacity() {
        return slots.length - 1;
    }

    /** WQEs posted and not yet consumed. */
    final long depth() {
        return posted - consumed;
    }

    /** Drops every posted WQE without a completion (a modify to RESET, IBA 10.3.1). */
    final void discardAll() {
        synchronized (lock) {
            consumed = posted;
        }
    }
}
