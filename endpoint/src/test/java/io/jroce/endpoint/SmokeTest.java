package io.jroce.endpoint;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.*;

/** Every operation between two devices on loopback, 100,000 bytes across the PSN wrap, on the epoll transport. */
class SmokeTest {
    @Test
    void sendWriteReadAtomicsBetweenTwoDevices() throws Exception {
        try (Pair p = new Pair()) {
            assertTrue(p.a.isEpoll(), "epoll transport expected on Linux");
            Pair.exchangeEveryOperation(p, 100_000);
            assertEquals(0, p.a.counters().drops(DropReason.ICRC));
            assertEquals(0, p.b.counters().drops(DropReason.ICRC));
        }
    }
}
