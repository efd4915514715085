package io.jroce.endpoint;

import io.jroce.endpoint.fault.Direction;
import io.jroce.endpoint.fault.FaultInjector;
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
            // every packet went out of the socket and came back in: 16 rounds of at least 22 request packets
            assertTrue(c.packetsIn >= 16 * 22 && c.packetsIn == c.packetsOut, "in " + c.packetsIn + " out " + c.packetsOut);
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
            assertEquals(0x11, pd.createQp(new QpInitAttr(cq)).qpNum(), "the first user QP number");
        }
        assertTrue(Files.size(pcap) > 0, "pcap header written");
        assertEquals(0, PcapReader.readAll(pcap).size(), "warm-up packets in the capture");
    }
}
