package io.jroce.endpoint;

import java.util.concurrent.Callable;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The device's runner for work that belongs to the device but is not a packet: the connection manager handles its
 * MADs, runs its timers and answers its callers here, as a second unit of work beside the packet engines, so it
 * needs no thread of its own. It is the loop that owns QP 1: a dedicated device's event loop, or for an invoked
 * device whichever thread drives it (the application's polling thread, or the standby thread when none does).
 * Work queued here must not block: it runs between packets.
 */
public final class DeviceRunner {
    private final Transport loop;

    DeviceRunner(Transport loop) {
        this.loop = loop;
    }

    /** Whether the calling thread runs the device now (work it queues here would run after its current task). */
    public boolean inRunner() {
        return loop.inLoop();
    }

    /** Queues {@code task}; throws {@link java.util.concurrent.RejectedExecutionException} once the device is closed. */
    public void execute(Runnable task) {
        loop.execute(task);
    }

    /** Runs {@code task} after {@code delay}, unless the returned future is cancelled first. */
    public ScheduledFuture<?> schedule(Runnable task, long delay, TimeUnit unit) {
        return loop.schedule(task, unit.toNanos(delay));
    }

    /**
     * Runs {@code task} on the runner and returns its result: inline when the caller runs the device or may run it
     * (an invoked device no other thread drives), else queued and waited for. Its exception is rethrown as is.
     */
    public <T> T call(Callable<T> task) {
        return loop.call(task);
    }
}
