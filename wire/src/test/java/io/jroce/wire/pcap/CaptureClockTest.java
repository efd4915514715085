package io.jroce.wire.pcap;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CaptureClockTest {

    @Test
    void advancesByTheMonotonicCounterFromItsStart() {
        AtomicLong ticks = new AtomicLong(-5_000);  // nanoTime may be negative: only differences count
        CaptureClock c = CaptureClock.of(1_700_000_000_000_000_000L, ticks::get);
        assertEquals(1_700_000_000_000_000_000L, c.epochNanos());
        ticks.addAndGet(12_345);
        assertEquals(1_700_000_000_000_012_345L, c.epochNanos());
        ticks.addAndGet(1);
        assertEquals(1_700_000_000_000_012_346L, c.epochNanos());
    }

    @Test
    void neverGoesBackwardsNorRepeats() {
        AtomicLong ticks = new AtomicLong(1_000_000);
        CaptureClock c = CaptureClock.of(5_000_000_000L, ticks::get);
        ticks.set(1_000_500);
        assertEquals(5_000_000_500L, c.epochNanos());
        assertEquals(5_000_000_501L, c.epochNanos(), "a counter that stands still: the next nanosecond");
        ticks.set(1_000_100);                          // a counter that steps back
        assertEquals(5_000_000_502L, c.epochNanos());
        ticks.set(999_000);                            // even before the start
        assertEquals(5_000_000_503L, c.epochNanos());
        ticks.set(1_002_000);
        assertEquals(5_000_002_000L, c.epochNanos(), "and resumes with the counter");
        assertThrows(IllegalArgumentException.class, () -> CaptureClock.of(-1, ticks::get));
    }

    @Test
    void startsAtTheWallClock() {
        long before = nanos(Instant.now());
        long stamp = CaptureClock.start().epochNanos();
        long after = nanos(Instant.now());
        assertTrue(stamp >= before - 1_000_000 && stamp <= after + 1_000_000,
                before + " <= " + stamp + " <= " + after);
    }

    /**
     * What a live capture gets: several threads record through one writer, each stamping under the writer's
     * lock with its clock (as the endpoint's transport does). Read back, the records never go backwards and
     * their microsecond fields are not whole milliseconds (a millisecond clock would leave every one a
     * multiple of 1000).
     */
    @Test
    void writerStampsAreMonotonicWithSubMillisecondResolution() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int threads = 3;
        int each = 400;
        long start = nanos(Instant.now());
        try (PcapWriter w = new PcapWriter(bytes)) {
            List<Thread> ts = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                Thread th = new Thread(() -> {
                    ByteBuf buf = Unpooled.buffer(32).writeZero(32);
                    for (int i = 0; i < each; i++) {
                        try {
                            synchronized (w) {
                                w.writeUdpIpv4(w.clock().epochNanos(), 0x7F000001, 1000, 0x7F000002, 4791, i, 0x4000,
                                        buf, 0, 32);
                            }
                        } catch (IOException e) {
                            throw new UncheckedIOException(e);
                        }
                    }
                });
                ts.add(th);
                th.start();
            }
            for (Thread th : ts) {
                th.join();
            }
        }
        long end = nanos(Instant.now());
        long previous = Long.MIN_VALUE;
        int frames = 0;
        Set<Long> subMillisecond = new HashSet<>();
        try (PcapReader r = new PcapReader(new ByteArrayInputStream(bytes.toByteArray()), "mem")) {
            for (PcapFrame f; (f = r.next()) != null; frames++) {
                long t = f.epochNanos();
                assertTrue(t >= previous, "frame " + f.frameNumber() + " goes back: " + t + " < " + previous);
                assertTrue(t >= start - 1_000_000 && t <= end + 1_000_000, "frame " + f.frameNumber() + " at " + t);
                previous = t;
                subMillisecond.add(t / 1000 % 1000);
            }
        }
        assertEquals(threads * each, frames);
        assertTrue(subMillisecond.size() > 10,
                "distinct microsecond-within-millisecond values: " + subMillisecond.size());
    }

    private static long nanos(Instant i) {
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }
}
