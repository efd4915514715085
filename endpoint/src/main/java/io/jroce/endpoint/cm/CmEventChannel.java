package io.jroce.endpoint.cm;

import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A queue of connection-manager events that the application polls or waits on, librdmacm's
 * {@code struct rdma_event_channel} ({@code rdma_create_event_channel}, {@code rdma_get_cm_event}). Any number of
 * {@link CmId}s, on any number of devices, may report to one channel. Events need no acknowledgement.
 *
 * <p>The queue is not capped by itself; what may fill it is: CONNECT_REQUESTs are capped by each listener's backlog
 * (a listener counts the requests not yet taken from the channel, as the kernel's ucma does), and every other event
 * belongs to an id the application created or accepted, which reports a handful at most.
 */
public final class CmEventChannel implements AutoCloseable {
    private final LinkedBlockingQueue<CmEvent> events = new LinkedBlockingQueue<>();
    private volatile boolean closed;
    private volatile Runnable onPost;

    /** rdma_create_event_channel. */
    public CmEventChannel() {
    }

    /** The next event, or null if there is none now. */
    public CmEvent poll() {
        while (true) {
            CmEvent e = events.poll();
            if (e == null || taken(e)) return e;
        }
    }

    /** The next event, waiting at most {@code timeout}; null if none came in time. */
    public CmEvent getEvent(long timeout, TimeUnit unit) throws InterruptedException {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        while (true) {
            CmEvent e = events.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (e == null || taken(e)) return e;
        }
    }

    /** The next event, waiting at most {@code timeout}; null if none came in time. */
    public CmEvent getEvent(Duration timeout) throws InterruptedException {
        return getEvent(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    /**
     * The next event of type {@code type}, waiting at most {@code timeout} in all; events of other types that come
     * first are returned as failures: an {@link IllegalStateException} names the unexpected event (the way rping's
     * {@code wait for ESTABLISHED} treats anything else as an error).
     */
    public CmEvent expect(CmEventType type, Duration timeout) throws InterruptedException {
        CmEvent e = getEvent(timeout);
        if (e == null) throw new IllegalStateException("no " + type + " event within " + timeout.toMillis() + " ms");
        if (e.type() != type) {
            throw new IllegalStateException("expected " + type + " but got " + e.type()
                    + (e.status() != 0 ? " status " + e.status() + describe(e) : ""));
        }
        return e;
    }

    private static String describe(CmEvent e) {
        return e.type() == CmEventType.REJECTED ? " (" + io.jroce.wire.mad.CmRej.reasonName(e.status()) + ")" : "";
    }

    /** Events waiting. */
    public int size() {
        return events.size();
    }

    /**
     * Runs {@code listener} after each event is queued, on the thread that queued it (the agent's), so that a channel
     * can be mirrored by a file descriptor a program polls, as librdmacm's channel is. It must not block or call the
     * agent. Null: none.
     */
    public void onPost(Runnable listener) {
        onPost = listener;
    }

    void post(CmEvent e) {
        if (closed) return;
        events.add(e);
        Runnable listener = onPost;
        if (listener != null) listener.run();
    }

    /**
     * Whether {@code e} is delivered: a CONNECT_REQUEST whose listener was destroyed before the application took it
     * is not (the agent rejected it then, as ucma_destroy_id does with the requests still queued on a listener).
     */
    private static boolean taken(CmEvent e) {
        if (e.type() == CmEventType.CONNECT_REQUEST && e.listenId() != null) {
            e.listenId().requestTaken();
            return e.id().request.compareAndSet(0, 1);
        }
        return true;
    }

    /** rdma_destroy_event_channel: later events are discarded. */
    @Override
    public void close() {
        closed = true;
        events.clear();
    }
}
