package io.jroce.endpoint;

import io.jroce.wire.pcap.CaptureReader;
import io.jroce.wire.pcap.PcapFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * UDP GSO on send between two loopback devices: the data arrives, the receiver drops nothing, and the
 * sender's pcap holds one record per segment whose IPv4 ID is its position in the super-datagram, with an
 * ICRC that an independent CRC-32 over the masked pseudo-packet (IBA A17.4.1) confirms for that ID.
 */
class GsoTest {
    private static final int SIZE = 256 * 1024;

    @Test
    void writeAndReadLeaveAsSuperDatagramsWithTheIcrcOfEachSegmentsId(@TempDir Path dir) throws Exception {
        Path pcap = dir.resolve("gso.pcap");
        long seed = System.nanoTime();
        System.out.println("GsoTest seed " + seed);
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.13.1")).port(0).pcap(pcap).gso(true),
                new DeviceConfig(Pair.addr("127.77.13.2")).port(0).gso(true))) {
            assertTrue(p.a.transport().isEpoll(), "GSO needs the epoll transport");
            assertTrue(p.a.transport().call(() -> p.a.transport().isGso()), "GSO in use");
            byte[] data = writeAndReadBack(p, seed);
            assertTrue(data.length == SIZE);
            DeviceCounters ca = p.a.counters();
            DeviceCounters cb = p.b.counters();
            assertTrue(ca.gsoDatagrams > 0 && ca.gsoSegments > 2 * ca.gsoDatagrams, "super-datagrams sent: " + ca);
            assertTrue(cb.gsoDatagrams > 0, "READ responses leave as super-datagrams too: " + cb);
            assertEquals(0, cb.totalDrops(), "receiver drops: " + cb);
            assertEquals(0, ca.totalDrops(), "sender drops: " + ca);
        }
        List<PcapFrame> frames = CaptureReader.readAll(pcap);
        int maxId = 0;
        int sent = 0;
        for (PcapFrame f : frames) {
            assertTrue(f.isUdp(), f.toString());
            assertTrue(icrcMatches(f), "ICRC of frame " + f.frameNumber() + " (ID " + f.ipId() + ") " + f);
            if (f.srcAddress().getHostAddress().equals("127.77.13.1")) {
                sent++;
                maxId = Math.max(maxId, f.ipId());
            }
        }
        assertTrue(sent > 64, "sent frames recorded: " + sent);
        assertEquals(14, maxId, "a 4112-byte WRITE middle run holds 15 packets: IDs 0..14");
    }

    @Test
    void runsCarryTheirPayloadFromTheRegions() throws Exception {
        // no capture, so the payload stays in the regions: each run is one message of header, region and ICRC pieces
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.13.5")).port(0).gso(true),
                new DeviceConfig(Pair.addr("127.77.13.6")).port(0).gso(true))) {
            GatherSend a = p.a.transport().port().gather();
            GatherSend b = p.b.transport().port().gather();
            assertTrue(a != null && b != null, "gathered send in use");
            writeAndReadBack(p, 5);
            DeviceCounters ca = p.a.counters();
            DeviceCounters cb = p.b.counters();
            assertTrue(ca.gsoSegments > 10 * ca.gsoDatagrams && ca.gsoDatagrams > 0, "WRITE middles in runs: " + ca);
            assertTrue(cb.gsoSegments > 10 * cb.gsoDatagrams && cb.gsoDatagrams > 0, "READ middles in runs: " + cb);
            assertTrue(p.a.transport().call(() -> a.gathered) > SIZE / 4096 / 2, "WRITE packets sent with region pieces");
            assertTrue(p.b.transport().call(() -> b.gathered) > SIZE / 4096 / 2, "READ responses sent with region pieces");
            assertEquals(0, ca.totalDrops() + cb.totalDrops(), "drops: " + ca + " " + cb);
        }
    }

    @Test
    void ipv6SuperDatagramsArriveIntact() throws Exception {
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("::1")).port(0).gso(true), new DeviceConfig(Pair.addr("::1")).port(0).gso(true))) {
            writeAndReadBack(p, 3);
            assertTrue(p.a.counters().gsoDatagrams > 0, p.a.counters().toString());
            assertTrue(p.b.counters().gsoDatagrams > 0, p.b.counters().toString());
            assertEquals(0, p.a.counters().totalDrops(), p.a.counters().toString());
            assertEquals(0, p.b.counters().totalDrops(), p.b.counters().toString());
        }
    }

    @Test
    void offSendsEveryPacketWithIdZero(@TempDir Path dir) throws Exception {
        Path pcap = dir.resolve("nogso.pcap");
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.13.3")).port(0).pcap(pcap).gso(false),
                new DeviceConfig(Pair.addr("127.77.13.4")).port(0).gso(false))) {
            assertFalse(p.a.transport().call(() -> p.a.transport().isGso()));
            writeAndReadBack(p, 1);
            assertEquals(0, p.a.counters().gsoDatagrams);
            assertEquals(0, p.b.counters().totalDrops());
        }
        for (PcapFrame f : CaptureReader.readAll(pcap)) {
            assertEquals(0, f.ipId(), f.toString());
            assertTrue(icrcMatches(f), f.toString());
        }
    }

    private static byte[] writeAndReadBack(Pair p, long seed) {
        Pair.Conn c = p.connect(Mtu.MTU_4096, 100, 200);
        MemoryRegion src = p.pdA.allocateAndRegister(SIZE, Access.LOCAL_WRITE);
        MemoryRegion dst = p.pdB.allocateAndRegister(SIZE, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
        MemoryRegion back = p.pdA.allocateAndRegister(SIZE, Access.LOCAL_WRITE);
        byte[] data = new byte[SIZE];
        new Random(seed).nextBytes(data);
        src.buffer().put(data);
        c.qpA.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
        WorkCompletion w = Pair.awaitOne(c.cqA);
        assertEquals(WcStatus.SUCCESS, w.status(), w.toString());
        byte[] got = new byte[SIZE];
        dst.buffer().get(got);
        assertArrayEquals(data, got, "WRITE");
        c.qpA.postSend(new SendWorkRequest(2, WrOpcode.RDMA_READ, Sge.of(back)).remote(dst.address(), dst.rkey()).signaled());
        WorkCompletion r = Pair.awaitOne(c.cqA);
        assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
        back.buffer().get(got);
        assertArrayEquals(data, got, "READ");
        return Arrays.copyOf(got, got.length);
    }

    /**
     * The RoCEv2 ICRC written out by hand (not with the wire module's Icrc): CRC-32 over 8 bytes of 0xFF, the
     * IPv4 header with TOS, TTL and checksum set to ones, the UDP header with its checksum set to ones, the
     * BTH with byte 4 set to ones, and the rest of the packet before the ICRC; stored least significant byte first.
     */
    static boolean icrcMatches(PcapFrame f) {
        byte[] d = f.data();
        int ip = f.ipOffset();
        int udpLen = f.udpLength();
        byte[] pseudo = new byte[8 + 20 + udpLen - 4];
        Arrays.fill(pseudo, 0, 8, (byte) 0xFF);
        System.arraycopy(d, ip, pseudo, 8, 20 + udpLen - 4);
        pseudo[8 + 1] = (byte) 0xFF;                       // TOS
        pseudo[8 + 8] = (byte) 0xFF;                       // TTL
        pseudo[8 + 10] = pseudo[8 + 11] = (byte) 0xFF;     // IP checksum
        pseudo[8 + 20 + 6] = pseudo[8 + 20 + 7] = (byte) 0xFF; // UDP checksum
        pseudo[8 + 28 + 4] = (byte) 0xFF;                  // BTH FECN/BECN/resv6a
        CRC32 crc = new CRC32();
        crc.update(pseudo);
        int wire = ByteBuffer.wrap(d, ip + 20 + udpLen - 4, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
        return (int) crc.getValue() == wire;
    }
}
