package io.jroce.endpoint;

import io.netty.channel.SelectStrategy;
import io.netty.util.IntSupplier;

/**
 * The event loop's select strategy in busy-poll mode ({@link DeviceConfig#busyPollMicros}): for a bounded time
 * after its last datagram or task the loop polls the socket without blocking ({@code epoll_wait} with timeout 0)
 * instead of sleeping in {@code epoll_wait}, so neither an arriving datagram nor an application's doorbell has to
 * wake a sleeping thread. A wake-up costs tens of microseconds on a virtual machine (the idle vCPU must be
 * scheduled again), several times a loopback round trip. Between polls the thread yields, so on a machine with
 * fewer cores than busy threads the thread that has work (the peer's loop, an application thread) still runs.
 * Once the time has passed with nothing to do the loop blocks as usual, so an idle device uses no CPU.
 */
final class BusyPollStrategy implements SelectStrategy {
    private final long spinNanos;
    private long lastActive = System.nanoTime();
    /** The last answer was SELECT: this call follows a blocking wait, which only a datagram, task or timer ends. */
    private boolean woke;
    /** Non-blocking polls that found nothing to do (written by the event loop; volatile, as tests read it from outside). */
    volatile long idlePolls;

    BusyPollStrategy(long spinNanos) {
        this.spinNanos = spinNanos;
    }

    @Override
    public int calculateStrategy(IntSupplier selectNow, boolean hasTasks) throws Exception {
        int ready = selectNow.get();
        long now = System.nanoTime();
        if (ready > 0 || hasTasks || woke) {
            woke = false;
            lastActive = now;
            return ready; // handle what is ready, then run the tasks
        }
        if (now - lastActive < spinNanos) {
            idlePolls = idlePolls + 1; // one writer: the loop
            Thread.yield();
            return SelectStrategy.CONTINUE; // run due tasks, come back without sleeping
        }
        woke = true;
        return SelectStrategy.SELECT; // block until a datagram, a task or a timer
    }
}
