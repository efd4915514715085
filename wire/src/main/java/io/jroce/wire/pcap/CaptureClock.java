package io.jroce.wire.pcap;

import java.time.Instant;
import java.util.function.LongSupplier;

/**
 * Timestamps for capture records: the wall-clock time read once, when the clock is made, advanced by
 * {@link System#nanoTime()}. Two reasons not to read the wall clock per record: {@code currentTimeMillis}
 * has millisecond resolution (a round trip on loopback is tens of microseconds), and the wall clock may be
 * stepped back by NTP, while a capture's records must never go backwards (Wireshark's delta columns and
 * {@code inspect --flows}' round trips are differences of them).
 *
 * <p>Stamps are nanoseconds since the Unix epoch. They are strictly increasing: two reads in the same
 * nanosecond (or a {@code nanoTime} that stands still) get consecutive values, so records keep the order
 * they were written in. Thread-safe.
 */
public final class CaptureClock {
    private final long epochNanosAtStart;
    private final long ticksAtStart;
    private final LongSupplier ticks;
    private long last = Long.MIN_VALUE;

    private CaptureClock(long epochNanosAtStart, LongSupplier ticks) {
        if (epochNanosAtStart < 0) {
            throw new IllegalArgumentException("a capture cannot start before 1970: " + epochNanosAtStart);
        }
        this.epochNanosAtStart = epochNanosAtStart;
        this.ticks = ticks;
        this.ticksAtStart = ticks.getAsLong();
    }

    /** A clock starting now: the wall clock read once (at its full resolution), then {@code System.nanoTime()}. */
    public static CaptureClock start() {
        Instant now = Instant.now();
        return new CaptureClock(now.getEpochSecond() * 1_000_000_000L + now.getNano(), System::nanoTime);
    }

    /**
     * A clock for tests: starts at {@code epochNanos} and advances with {@code ticks} (any monotonic
     * nanosecond counter; only differences of its values are used).
     */
    public static CaptureClock of(long epochNanos, LongSupplier ticks) {
        return new CaptureClock(epochNanos, ticks);
    }

    /** Now, in nanoseconds since the Unix epoch; greater than every earlier value of this clock. */
    public synchronized long epochNanos() {
        long t = epochNanosAtStart + Math.max(0, ticks.getAsLong() - ticksAtStart);
        if (t <= last) {
            t = last + 1;
        }
        last = t;
        return t;
    }
}
