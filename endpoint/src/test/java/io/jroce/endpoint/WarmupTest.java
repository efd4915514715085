package io.jroce.endpoint;

import io.jroce.endpoint.fault.Direction;
import io.jroce.endpoint.fault.FaultInjector;
import io.jroce.wire.pcap.PcapFrame;
import io.jroce.wire.pcap.PcapReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The warm-up inside {@link Device#open}: it runs the data path, and leaves no trace a user can see. */
class WarmupTest {
    private static final InetAddress ADDR = Pair.addr("127.0.7.1");

    @Test
    void exchangesEveryOperationOverTheDevicesOwnSocket() throws Exception {
        try (Device dev = Device.open(new DeviceConfig(ADDR).warmUp(false))) {
            int completions = Warmup.run(dev);
            // per round 8 signaled send WRs (SEND, SEND_WITH_IMM, WRITE, WRITE_WITH_IMM, 2 READs, 2 atomics)
            // and 3 receives (the two SENDs and the WRITE_WITH_IMM)
            assertEquals(16 * 11, completions);
            DeviceCounters c = dev.counters();
            // every packet went out of the socket and came back in: per round 12 request packets, 4 READ responses,
            // 2 atomic ACKs and 1 to 4 ACKs of the SENDs and WRITEs (coalesced when they arrive in one burst; the
            // READ response sends the pending one first, so there is at least one)
            assertTrue(c.packetsIn >= 16 * 19 && c.packetsIn == c.packetsOut,
                    "in " + c.packetsIn + " out " + c.packetsOut);
            assertEquals(0, c.totalDrops(), "drops");
            assertEquals(0, dev.qpCount(), "the warm-up's QPs are destroyed");
        }
    }

    @Test
    void leavesNoCountersNoCaptureNoQpnsAndBypassesTheFilter(@TempDir Path dir) throws Exception {
        Path pcap = dir.resolve("dev.pcap");
        FaultInjector chaos = FaultInjector.builder().seed(1).drop(1.0).build(); // would stall any warm-up traffic
        try (Device dev = Device.open(new DeviceConfig(ADDR).pcap(pcap).filter(chaos))) {
            DeviceCounters c = dev.counters();
            assertEquals(0, c.packetsIn, "packets in");
            assertEquals(0, c.packetsOut, "packets out");
            assertEquals(0, c.totalDrops(), "drops");
            assertEquals(0, chaos.arrived(Direction.IN) + chaos.arrived(Direction.OUT), "the filter saw warm-up traffic");
            ProtectionDomain pd = dev.allocPd();
            CompletionQueue cq = dev.createCq(4);
            assertEquals(dev.firstQpn(), pd.createQp(new QpInitAttr(cq)).qpNum(), "the first user QP number");
        }
        assertTrue(Files.size(pcap) > 0, "pcap header written");
        assertEquals(0, PcapReader.readAll(pcap).size(), "warm-up packets in the capture");
    }

    /**
     * A warm-up cut short (here after 50 us, as a busy machine would cut it after its 2 s budget) leaves its last
     * packets on their way; the device waits for them before it goes live, so none is counted, captured or
     * delivered to the user's first QP, which gets the first QP number again and works.
     */
    @Test
    void aWarmupCutShortLeavesNoTrafficBehind(@TempDir Path dir) throws Exception {
        Path pcap = dir.resolve("dev.pcap");
        DeviceConfig config = new DeviceConfig(ADDR).pcap(pcap);
        config.warmUpBudgetNanos = 50_000;
        try (Device dev = Device.open(config)) {
            assertEquals(0, dev.counters().packetsIn, "packets in");
            ProtectionDomain pd = dev.allocPd();
            CompletionQueue cq = dev.createCq(8);
            QueuePair a = pd.createQp(new QpInitAttr(cq));
            QueuePair b = pd.createQp(new QpInitAttr(cq));
            assertEquals(dev.firstQpn(), a.qpNum(), "the first user QP number");
            RcConnect.connectPair(a, 0x100, b, 0x200, RcConnect.Params.defaults());
            MemoryRegion mr = pd.allocateAndRegister(64, Access.LOCAL_WRITE);
            b.postRecv(new ReceiveWorkRequest(1, Sge.of(mr, 32, 32)));
            a.postSend(new SendWorkRequest(2, WrOpcode.SEND, Sge.of(mr, 0, 32)).signaled());
            // the user's datagrams queue behind anything of the warm-up's still on its way
            assertEquals(2, Pair.await(cq, 2, 10_000).size());
            assertEquals(0, dev.counters().totalDrops(), "drops (a late warm-up packet is an unknown QP's)");
        }
        // the warm-up's PSNs start at 0, the user's at 0x100 and 0x200
        for (PcapFrame f : PcapReader.readAll(pcap)) {
            byte[] d = f.data();
            int psn = (d[f.udpPayloadOffset() + 9] & 0xFF) << 16 | (d[f.udpPayloadOffset() + 10] & 0xFF) << 8
                    | (d[f.udpPayloadOffset() + 11] & 0xFF);
            assertTrue(psn >= 0x100, "a warm-up packet in the live device's capture: " + f + " PSN " + psn);
        }
    }
}
