package io.jroce.endpoint;

import io.netty.channel.SelectStrategy;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Busy-poll mode: the select strategy polls without blocking while its time runs and blocks after; two devices in
 * busy-poll mode exchange every operation; after traffic the event loop polls, and once its time has run out it
 * sleeps.
 */
class BusyPollTest {
    @Test
    void strategyPollsWithoutBlockingWhileItsTimeRunsAndBlocksAfter() throws Exception {
        BusyPollStrategy spinning = new BusyPollStrategy(TimeUnit.SECONDS.toNanos(60));
        assertEquals(SelectStrategy.CONTINUE, spinning.calculateStrategy(() -> 0, false), "nothing ready: poll again");
        assertEquals(3, spinning.calculateStrategy(() -> 3, false), "ready datagrams are handled");
        assertEquals(0, spinning.calculateStrategy(() -> 0, true), "queued tasks run without blocking");
        assertEquals(1, spinning.idlePolls, "one poll found nothing");

        BusyPollStrategy expired = new BusyPollStrategy(1);
        pastOneMicrosecond();
        assertEquals(SelectStrategy.SELECT, expired.calculateStrategy(() -> 0, false), "time over: block");
        assertEquals(0, expired.calculateStrategy(() -> 0, false), "the call after a blocking wait is activity: handle it");
        pastOneMicrosecond();
        assertEquals(SelectStrategy.SELECT, expired.calculateStrategy(() -> 0, false), "and then, time over again, block");
        assertEquals(2, expired.calculateStrategy(() -> 2, false), "what is ready is always handled");
        assertEquals(0, expired.idlePolls);
    }

    private static void pastOneMicrosecond() {
        long t = System.nanoTime();
        while (System.nanoTime() - t < 1000) Thread.onSpinWait();
    }

    @Test
    void busyPollingDevicesExchangeEveryOperation() throws Exception {
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.14.1")).port(0).busyPollMicros(200),
                new DeviceConfig(Pair.addr("127.77.14.2")).port(0).busyPollMicros(200))) {
            assumeTrue(p.a.transport().isEpoll(), "busy-poll of the event loop needs epoll");
            Pair.exchangeEveryOperation(p, 10_000);
            assertTrue(p.a.transport().busyIdlePolls() > 0, "the loop polled without blocking");
        }
    }

    @Test
    void afterTrafficTheLoopPollsThenSleepsOnceItsTimeHasRun() throws Exception {
        long spinMicros = 200_000;
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.14.3")).port(0).busyPollMicros(spinMicros),
                new DeviceConfig(Pair.addr("127.77.14.4")).port(0))) {
            assumeTrue(p.a.transport().isEpoll(), "busy-poll of the event loop needs epoll");
            Transport t = p.a.transport();
            Pair.exchangeEveryOperation(p, 1000);
            long before = t.call(t::busyIdlePolls); // this call is itself activity: the loop polls for 200 ms from here
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20)); // a stretch of the 200 ms, not a wait for an event
            long during = t.call(t::busyIdlePolls) - before;
            assertTrue(during > 0, "polls while the time runs: " + during);

            // the read above was activity too; let its 200 ms pass (timers are idle: nothing is outstanding)
            LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(spinMicros) + TimeUnit.MILLISECONDS.toNanos(100));
            long asleep = t.busyIdlePolls();
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
            assertEquals(asleep, t.busyIdlePolls(), "no poll once the time has run: the loop blocks");
        }
    }
}
