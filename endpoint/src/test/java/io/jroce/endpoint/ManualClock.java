package io.jroce.endpoint;

import java.util.concurrent.atomic.AtomicLong;

/** A clock the test steps by hand, so retransmit and RNR timers fire when the test says. */
final class ManualClock implements Clock {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);

    @Override
    public long nanoTime() {
        return now.get();
    }

    void advanceNanos(long nanos) {
        now.addAndGet(nanos);
    }
}
