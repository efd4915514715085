package io.jroce.cli.perf;

import java.time.Duration;

/**
 * The part of a timed run (-D) that its figures come from, as perftest measures it: the first and the last
 * {@code margin} of the duration are left out (the start's warm-up and the end's drain), and only what completes in
 * between counts, over the window's own length (perftest's {@code catch_alarm}: START_STATE to SAMPLE_STATE after
 * the margin, to STOP_SAMPLE_STATE at the duration less the margin; its default margin is a quarter of the duration,
 * in whole seconds).
 */
final class SampleWindow {
    private final long from;
    private final long to;
    private long count;

    SampleWindow(long start, Duration duration, Duration margin) {
        this.from = start + margin.toNanos();
        this.to = start + duration.toNanos() - margin.toNanos();
    }

    /** The margin of a run of {@code duration}: {@code given}, or perftest's default, a quarter of it in whole seconds. */
    static Duration margin(Duration duration, Duration given) {
        return given != null ? given : Duration.ofSeconds(duration.toSeconds() / 4);
    }

    /** Counts {@code n} completions that happened at {@code now} if that is inside the window. */
    void count(long now, long n) {
        if (now - from >= 0 && now - to < 0) count += n;
    }

    long count() {
        return count;
    }

    /** When the window opens (System.nanoTime). */
    long from() {
        return from;
    }

    /** When it closes. */
    long to() {
        return to;
    }

    /** How long it is open (ns). */
    long length() {
        return to - from;
    }
}
