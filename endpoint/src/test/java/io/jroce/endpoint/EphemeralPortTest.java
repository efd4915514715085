package io.jroce.endpoint;

import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Devices opened on UDP port 0 (the kernel picks the port) talk to each other, and {@link Device#queuePairs()}
 * lists the QPs a device has now.
 */
class EphemeralPortTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();

    @Test
    void twoDevicesOnOneAddressWithKernelChosenPortsExchangeAWrite() throws Exception {
        try (Pair p = new Pair(new DeviceConfig(LOOPBACK).port(0), new DeviceConfig(LOOPBACK).port(0))) {
            assertTrue(p.a.port() > 0 && p.b.port() > 0);
            assertNotEquals(p.a.port(), p.b.port());
            Pair.Conn c = p.connect(Mtu.MTU_1024, 0x10, 0x20);
            MemoryRegion src = p.pdA.allocateAndRegister(2500, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(2500, Pair.QP_ACCESS);
            for (int i = 0; i < 2500; i++) src.buffer().put(i, (byte) (i * 7));
            c.qpA.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, new Sge(src.address(), 2500, src.lkey()))
                    .remote(dst.address(), dst.rkey()).signaled());
            WorkCompletion wc = Pair.awaitOne(c.cqA);
            assertTrue(wc.ok(), wc.toString());
            assertEquals(-1, src.buffer().mismatch(dst.buffer()));
            // the ICRC covers the UDP source port: computed over the configured 0, every packet was dropped
            assertEquals(0, p.b.counters().drops(DropReason.ICRC));
            assertEquals(0, p.a.counters().drops(DropReason.ICRC));
        }
    }

    @Test
    void queuePairsListsTheQpsThatExistNow() throws Exception {
        try (Device d = Device.open(new DeviceConfig(LOOPBACK).port(0))) {
            assertEquals(List.of(), d.queuePairs());
            ProtectionDomain pd = d.allocPd();
            CompletionQueue cq = d.createCq(4);
            QueuePair q1 = pd.createQp(new QpInitAttr(cq));
            QueuePair q2 = pd.createQp(new QpInitAttr(cq));
            List<QueuePair> both = d.queuePairs();
            assertEquals(2, both.size());
            assertTrue(both.contains(q1) && both.contains(q2));
            q1.destroy();
            assertEquals(List.of(q2), d.queuePairs());
            d.close();
            assertEquals(List.of(), d.queuePairs(), "a closed device has none");
        }
    }
}
