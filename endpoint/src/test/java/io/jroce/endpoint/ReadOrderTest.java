package io.jroce.endpoint;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A READ answered in several event-loop passes (64 responses) and a WRITE to the same bytes right behind it, arriving
 * at the responder in one burst: the READ returns the bytes as they were before the WRITE (the responder sends all of
 * the READ's responses before it executes the next request), and the responses and the WRITE's ACK leave in PSN order,
 * so the requester completes both without asking for anything again.
 */
class ReadOrderTest {
    private static final int SIZE = 64 * 256;
    private Pair p;

    @AfterEach
    void close() {
        if (p != null) p.close();
    }

    @Test
    void aWriteBehindALongReadDoesNotChangeWhatTheReadReturns() throws Exception {
        p = new Pair(new DeviceConfig(Pair.addr("127.77.16.1")).port(0), new DeviceConfig(Pair.addr("127.77.16.2")).port(0));
        Pair.Conn c = p.connect(Mtu.MTU_256, 0x40, 0x80);
        MemoryRegion remote = p.pdB.allocateAndRegister(SIZE, Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE);
        MemoryRegion readInto = p.pdA.allocateAndRegister(SIZE, Access.LOCAL_WRITE);
        MemoryRegion newBytes = p.pdA.allocateAndRegister(SIZE, Access.LOCAL_WRITE);
        for (int i = 0; i < SIZE; i++) {
            remote.buffer().put(i, (byte) 0x11);
            newBytes.buffer().put(i, (byte) 0x22);
        }
        SendWorkRequest chain = Pair.chain(new SendWorkRequest[] {
                new SendWorkRequest(1, WrOpcode.RDMA_READ, Sge.of(readInto)).remote(remote.address(), remote.rkey()).signaled(),
                new SendWorkRequest(2, WrOpcode.RDMA_WRITE, Sge.of(newBytes)).remote(remote.address(), remote.rkey()).signaled()});
        // hold B's event loop until A has sent the READ request and the WRITE: B reads them in one burst
        Pair.whileLoopHeld(p.b, () -> {
            c.qpA.postSend(chain);
            Pair.until("the READ request and the 64 WRITE packets out of A", () -> c.qpA.counters().packetsOut >= 65);
            Pair.barrier(p.a);
        });
        List<WorkCompletion> wcs = Pair.await(c.cqA, 2, 20_000);
        assertEquals(1, wcs.get(0).wrId(), "the READ completes first: " + wcs);
        assertEquals(WcStatus.SUCCESS, wcs.get(0).status(), wcs.toString());
        assertEquals(WcStatus.SUCCESS, wcs.get(1).status(), wcs.toString());
        for (int i = 0; i < SIZE; i++) {
            assertEquals((byte) 0x11, readInto.buffer().get(i), "byte " + i + " the READ returned: as before the WRITE");
            assertEquals((byte) 0x22, remote.buffer().get(i), "byte " + i + " of the region after the WRITE");
        }
        assertEquals(0, c.qpA.counters().retries + c.qpA.counters().timeouts, "nothing asked again: " + c.qpA.counters());
    }
}
