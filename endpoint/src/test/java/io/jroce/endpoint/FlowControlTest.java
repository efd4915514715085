package io.jroce.endpoint;

import org.junit.jupiter.api.Test;

import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Flow control: a QP's window is capped by what the device's receive buffer holds at the QP's path MTU, so that a
 * peer like us never overruns it; a large transfer between two devices with small buffers then runs without a drop.
 */
class FlowControlTest {
    @Test
    void theWindowIsCappedByTheReceiveBufferAndNothingIsDropped() throws Exception {
        int asked = 100_000;
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.15.1")).port(0).socketBufferBytes(asked).tailProbeMicros(0),
                new DeviceConfig(Pair.addr("127.77.15.2")).port(0).socketBufferBytes(asked).tailProbeMicros(0))) {
            Transport t = p.a.transport();
            int granted = t.receiveBufferBytes();
            // the kernel doubles what is asked (for its bookkeeping) within net.core.rmem_max, or past it with SO_RCVBUFFORCE
            assertTrue(granted >= asked && granted <= 2 * asked, "receive buffer " + granted);
            assertEquals(Math.max(Transport.MIN_WINDOW, granted / (8192 + 256)), t.windowFor(4096), "MTU 4096: about 8.4 KB per datagram");
            assertEquals(Math.min(128, granted / (2048 + 256)), t.windowFor(1024), "MTU 1024: about 2.3 KB per datagram");
            assertEquals(128, new DeviceConfig(Pair.addr("127.77.15.3")).maxUnackedPsns, "the device window the cap applies to");

            Pair.Conn c = p.connect(Mtu.MTU_4096, 0x10, 0x20);
            int n = 4 << 20;
            MemoryRegion src = p.pdA.allocateAndRegister(n, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(n, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            byte[] data = new byte[n];
            new Random(9).nextBytes(data);
            src.buffer().put(data);
            for (int i = 0; i < 4; i++) {
                c.qpA.postSend(new SendWorkRequest(i, WrOpcode.RDMA_WRITE, Sge.of(src, i * (n / 4), n / 4))
                        .remote(dst.address() + i * (n / 4), dst.rkey()).signaled());
            }
            for (WorkCompletion wc : Pair.await(c.cqA, 4, 30_000)) assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            byte[] got = new byte[n];
            dst.buffer().get(got);
            assertArrayEquals(data, got);
            assertEquals(0, p.a.counters().retransmits, "no drop at the receiver's socket, so nothing resent: " + p.a.counters());
            assertEquals(0, c.qpB.counters().seqNaksSent, "no gap seen by the responder: " + c.qpB.counters());
        }
    }
}
