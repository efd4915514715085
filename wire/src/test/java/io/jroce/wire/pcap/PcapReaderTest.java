package io.jroce.wire.pcap;

import io.jroce.testkit.Hex;
import io.jroce.testkit.TestData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PcapReaderTest {

    // ---------------------------------------------------------------------------- real files

    @Test
    void readsGoldenCapture() throws Exception {
        List<GoldenFrames.Golden> expected = GoldenFrames.load();
        assertEquals(40, expected.size());
        try (PcapReader r = new PcapReader(TestData.goldenPcap())) {
            assertEquals(LinkType.ETHERNET, r.linkType());
            assertFalse(r.isNanosecond());
            assertTrue(r.isLittleEndian());
            long firstTs = -1;
            for (int i = 0; i < 40; i++) {
                PcapFrame f = r.next();
                assertNotNull(f, "frame " + (i + 1));
                GoldenFrames.Golden g = expected.get(i);
                String where = "frame " + (i + 1);
                assertEquals(i + 1, f.frameNumber());
                assertArrayEquals(g.frame(), f.data(), where);
                assertEquals(f.data().length, f.originalLength());
                assertTrue(f.isIp() && f.isUdp(), where);
                assertNull(f.anomaly(), where);
                assertFalse(f.isTruncated());
                assertEquals(4, f.ipVersion());
                assertEquals(14, f.ipOffset());
                assertEquals(20, f.ipHeaderLength());
                assertEquals(g.totalLength(), f.ipLength(), where);
                assertEquals(InetAddress.getByName(g.src()), f.srcAddress(), where);
                assertEquals(InetAddress.getByName(g.dst()), f.dstAddress(), where);
                assertEquals(17, f.protocol());
                assertEquals(g.ipId(), f.ipId(), where);
                assertEquals(g.flags() << 13, f.ipFlagsFragment(), where);
                assertFalse(f.isFragment());
                assertEquals(34, f.udpOffset());
                assertEquals(g.srcPort(), f.srcPort(), where);
                assertEquals(g.dstPort(), f.dstPort(), where);
                assertEquals(4791, f.dstPort());
                assertEquals(g.udpLength(), f.udpLength(), where);
                assertEquals(42, f.udpPayloadOffset());
                assertEquals(g.udpLength() - 8, f.udpPayloadLength(), where);
                // the headers carry correct IPv4 checksums
                assertEquals(0, PcapWriter.ipv4HeaderChecksum(f.data(), f.ipOffset(), 20), where);
                if (i == 0) {
                    firstTs = f.epochNanos();
                } else {
                    assertEquals(firstTs + i * 1_000_000L, f.epochNanos(), where);
                }
            }
            assertNull(r.next());
            assertNull(r.next());
            assertEquals(40, r.framesRead());
        }
    }

    @Test
    void readsRxeCaptures() throws Exception {
        Path dir = TestData.file("rxe");
        List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.filter(p -> p.toString().endsWith(".pcap")).sorted().toList();
        }
        assertFalse(files.isEmpty());
        for (Path p : files) {
            List<PcapFrame> frames = PcapReader.readAll(p);
            long roce = frames.stream().filter(f -> f.isUdp() && f.dstPort() == 4791).count();
            long tcp = frames.stream().filter(f -> f.isIp() && f.protocol() == 6).count();
            assertEquals(20, roce, p.toString());
            assertEquals(frames.size(), roce + tcp, p + ": only RoCEv2 and the TCP side channel");
            for (PcapFrame f : frames) {
                assertNull(f.anomaly(), p + " " + f);
                assertEquals(4, f.ipVersion());
                if (f.isUdp()) {
                    assertEquals(0x4000, f.ipFlagsFragment(), "rxe sets DF");
                    assertEquals(f.ipLength() - 28, f.udpPayloadLength());
                    assertTrue(f.udpPayloadLength() >= 16);
                    String src = f.srcAddress().getHostAddress();
                    assertTrue(src.startsWith("10.77.0."), src);
                }
            }
        }
    }

    // ---------------------------------------------------------------------------- link types

    private static final byte[] SRC4 = {10, 0, 0, 1};
    private static final byte[] DST4 = {10, 0, 0, 2};

    /** An IPv4/UDP packet (no link header) with the given UDP payload. */
    static byte[] ipv4Udp(int id, int sport, int dport, byte[] payload) {
        byte[] f = new byte[28 + payload.length];
        PcapWriter.writeIpv4UdpHeaders(f, 0, 0x0A000001, sport, 0x0A000002, dport, id, 0x4000, payload.length);
        System.arraycopy(payload, 0, f, 28, payload.length);
        return f;
    }

    /** An IPv6/UDP packet 2001:db8::1 -> 2001:db8::2 with an optional hop-by-hop header. */
    static byte[] ipv6Udp(int sport, int dport, byte[] payload, boolean hopByHop) {
        int ext = hopByHop ? 8 : 0;
        ByteBuffer b = ByteBuffer.allocate(40 + ext + 8 + payload.length);
        b.putInt(0x60000000).putShort((short) (ext + 8 + payload.length)).put((byte) (hopByHop ? 0 : 17)).put((byte) 64);
        b.put(InetAddressBytes.V6_SRC).put(InetAddressBytes.V6_DST);
        if (hopByHop) {
            b.put((byte) 17).put((byte) 0).put(new byte[] {1, 4, 0, 0, 0, 0}); // PadN
        }
        b.putShort((short) sport).putShort((short) dport).putShort((short) (8 + payload.length)).putShort((short) 0);
        b.put(payload);
        return b.array();
    }

    static final class InetAddressBytes {
        static final byte[] V6_SRC = bytes("20010db8000000000000000000000001");
        static final byte[] V6_DST = bytes("20010db8000000000000000000000002");

        static byte[] bytes(String hex) {
            return Hex.decode(hex);
        }
    }

    static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            o.writeBytes(p);
        }
        return o.toByteArray();
    }

    /** A pcap file in either byte order / timestamp resolution with the given frames. */
    static byte[] pcapFile(int linkType, boolean bigEndian, boolean nanos, byte[]... frames) {
        ByteBuffer b = ByteBuffer.allocate(24 + Arrays.stream(frames).mapToInt(f -> 16 + f.length).sum())
                .order(bigEndian ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN);
        b.putInt(nanos ? 0xA1B23C4D : 0xA1B2C3D4).putShort((short) 2).putShort((short) 4).putInt(0).putInt(0)
                .putInt(262144).putInt(linkType);
        int i = 0;
        for (byte[] f : frames) {
            b.putInt(1_700_000_000 + i).putInt(nanos ? 123_456_789 : 123_456).putInt(f.length).putInt(f.length);
            b.put(f);
            i++;
        }
        return b.array();
    }

    private static List<PcapFrame> read(byte[] file) throws IOException {
        try (PcapReader r = new PcapReader(new ByteArrayInputStream(file), "test.pcap")) {
            List<PcapFrame> out = new java.util.ArrayList<>();
            for (PcapFrame f; (f = r.next()) != null; ) {
                out.add(f);
            }
            return out;
        }
    }

    private static final byte[] PAYLOAD = "0123456789abcdef0123456789ab".getBytes(StandardCharsets.US_ASCII);

    private static void assertIpv4Udp(PcapFrame f, int ipOffset) throws Exception {
        assertNull(f.anomaly(), f.toString());
        assertEquals(ipOffset, f.ipOffset());
        assertEquals(4, f.ipVersion());
        assertEquals(InetAddress.getByAddress(SRC4), f.srcAddress());
        assertEquals(InetAddress.getByAddress(DST4), f.dstAddress());
        assertEquals(0x1234, f.ipId());
        assertEquals(ipOffset + 20, f.udpOffset());
        assertEquals(50000, f.srcPort());
        assertEquals(4791, f.dstPort());
        assertEquals(ipOffset + 28, f.udpPayloadOffset());
        assertEquals(PAYLOAD.length, f.udpPayloadLength());
        assertArrayEquals(PAYLOAD, Arrays.copyOfRange(f.data(), f.udpPayloadOffset(), f.udpPayloadOffset() + f.udpPayloadLength()));
    }

    @Test
    void parsesEthernetWithVlanTags() throws Exception {
        byte[] ip = ipv4Udp(0x1234, 50000, 4791, PAYLOAD);
        byte[] macs = new byte[12];
        byte[] plain = concat(macs, new byte[] {0x08, 0x00}, ip);
        byte[] dot1q = concat(macs, new byte[] {(byte) 0x81, 0x00, 0x00, 0x05, 0x08, 0x00}, ip);
        byte[] qinq = concat(macs, new byte[] {(byte) 0x88, (byte) 0xa8, 0x00, 0x07, (byte) 0x81, 0x00, 0x00, 0x05, 0x08, 0x00}, ip);
        List<PcapFrame> frames = read(pcapFile(LinkType.ETHERNET, false, false, plain, dot1q, qinq));
        assertEquals(3, frames.size());
        assertIpv4Udp(frames.get(0), 14);
        assertIpv4Udp(frames.get(1), 18);
        assertIpv4Udp(frames.get(2), 22);
        assertEquals(3, frames.get(2).frameNumber());
    }

    @Test
    void parsesLinuxCookedV1() throws Exception {
        byte[] sll = new byte[16];
        sll[1] = 4; // packet type: outgoing
        sll[3] = 1; // ARPHRD_ETHER
        sll[5] = 6; // address length
        sll[14] = 0x08;
        List<PcapFrame> frames = read(pcapFile(LinkType.LINUX_SLL, true, false, concat(sll, ipv4Udp(0x1234, 50000, 4791, PAYLOAD))));
        assertIpv4Udp(frames.get(0), 16);
        assertEquals(LinkType.LINUX_SLL, frames.get(0).linkType());
        assertEquals(1_700_000_000L * 1_000_000_000L + 123_456_000L, frames.get(0).epochNanos());
    }

    @Test
    void parsesLinuxCookedV2() throws Exception {
        byte[] sll2 = new byte[20];
        sll2[0] = (byte) 0x86;
        sll2[1] = (byte) 0xDD;
        sll2[7] = 3;  // interface index
        sll2[9] = 1;  // ARPHRD_ETHER
        sll2[11] = 6;
        byte[] v6 = ipv6Udp(50000, 4791, PAYLOAD, true);
        List<PcapFrame> frames = read(pcapFile(LinkType.LINUX_SLL2, false, true, concat(sll2, v6)));
        PcapFrame f = frames.get(0);
        assertNull(f.anomaly(), f.toString());
        assertEquals(6, f.ipVersion());
        assertEquals(20, f.ipOffset());
        assertEquals(48, f.ipHeaderLength());
        assertEquals(v6.length, f.ipLength());
        assertEquals(InetAddress.getByName("2001:db8::1"), f.srcAddress());
        assertEquals(17, f.protocol());
        assertEquals(-1, f.ipId());
        assertEquals(20 + 48, f.udpOffset());
        assertEquals(4791, f.dstPort());
        assertEquals(PAYLOAD.length, f.udpPayloadLength());
        assertEquals(1_700_000_000L * 1_000_000_000L + 123_456_789L, f.epochNanos());
    }

    @Test
    void parsesRawIp() throws Exception {
        byte[] v4 = ipv4Udp(0x1234, 50000, 4791, PAYLOAD);
        byte[] v6 = ipv6Udp(50000, 4791, PAYLOAD, false);
        List<PcapFrame> raw = read(pcapFile(LinkType.RAW, true, true, v4, v6));
        assertIpv4Udp(raw.get(0), 0);
        assertEquals(6, raw.get(1).ipVersion());
        assertEquals(40, raw.get(1).udpOffset());
        assertIpv4Udp(read(pcapFile(LinkType.IPV4, false, false, v4)).get(0), 0);
        PcapFrame f6 = read(pcapFile(LinkType.IPV6, false, false, v6)).get(0);
        assertEquals(6, f6.ipVersion());
        assertEquals(PAYLOAD.length, f6.udpPayloadLength());
        // an IPv4-mapped IPv6 address stays an IPv6 address
        byte[] mapped = v6.clone();
        System.arraycopy(Hex.decode("00000000000000000000ffffc000020a"), 0, mapped, 8, 16);
        PcapFrame fm = read(pcapFile(LinkType.IPV6, false, false, mapped)).get(0);
        assertEquals(16, fm.srcAddress().getAddress().length);
        // the wrong IP version for the link type is not IP
        PcapFrame bad = read(pcapFile(LinkType.IPV6, false, false, v4)).get(0);
        assertFalse(bad.isIp());
        assertNotNull(bad.anomaly());
    }

    @Test
    void parsesBsdLoopback() throws Exception {
        byte[] afLe = {2, 0, 0, 0};
        byte[] afBe = {0, 0, 0, 2};
        byte[] v4 = ipv4Udp(0x1234, 50000, 4791, PAYLOAD);
        List<PcapFrame> frames = read(pcapFile(LinkType.NULL, false, false, concat(afLe, v4), concat(afBe, v4)));
        assertIpv4Udp(frames.get(0), 4);
        assertIpv4Udp(frames.get(1), 4);
    }

    // ---------------------------------------------------------------------------- malformed frames

    @Test
    void malformedFramesAreMarkedNotThrown() throws Exception {
        byte[] ip = ipv4Udp(0x1234, 50000, 4791, PAYLOAD);
        byte[] macs = new byte[12];
        byte[] shortEth = new byte[10];
        byte[] arp = concat(macs, new byte[] {0x08, 0x06}, new byte[28]);
        byte[] badIhl = concat(macs, new byte[] {0x08, 0x00}, ip);
        badIhl[14] = 0x43;
        byte[] badVersion = concat(macs, new byte[] {0x08, 0x00}, ip);
        badVersion[14] = 0x55;
        byte[] tcp = concat(macs, new byte[] {0x08, 0x00}, ip);
        tcp[14 + 9] = 6;
        byte[] fragment = concat(macs, new byte[] {0x08, 0x00}, ip);
        fragment[14 + 6] = 0x20; // MF
        byte[] badUdpLen = concat(macs, new byte[] {0x08, 0x00}, ip);
        badUdpLen[14 + 24] = 0;
        badUdpLen[14 + 25] = 4;
        byte[] longUdpLen = concat(macs, new byte[] {0x08, 0x00}, ip);
        longUdpLen[14 + 24] = 1;
        byte[] cutVlan = concat(macs, new byte[] {(byte) 0x81, 0x00, 0x00});
        List<PcapFrame> frames = read(pcapFile(LinkType.ETHERNET, false, false,
                shortEth, arp, badIhl, badVersion, tcp, fragment, badUdpLen, longUdpLen, cutVlan, new byte[0]));
        assertEquals(10, frames.size());
        for (int i : new int[] {0, 1, 2, 3, 8, 9}) {
            assertFalse(frames.get(i).isIp(), frames.get(i).toString());
            assertNotNull(frames.get(i).anomaly(), frames.get(i).toString());
        }
        assertTrue(frames.get(4).isIp());
        assertFalse(frames.get(4).isUdp());
        assertEquals(6, frames.get(4).protocol());
        assertNull(frames.get(4).anomaly());
        assertTrue(frames.get(5).isFragment());
        assertFalse(frames.get(5).isUdp());
        assertFalse(frames.get(6).isUdp());
        assertTrue(frames.get(7).isUdp(), "UDP length too large: bounded by the IP payload");
        assertEquals(PAYLOAD.length, frames.get(7).udpPayloadLength());
        assertNotNull(frames.get(7).anomaly());
        for (PcapFrame f : frames) {
            assertFalse(f.isTruncated(), f.toString());
            assertNotNull(f.toString());
        }
    }

    @Test
    void ethernetPaddingIsNotPartOfTheIpPacket() throws Exception {
        byte[] tiny = ipv4Udp(1, 50000, 4791, new byte[4]); // 32-byte IP packet, padded to 60
        byte[] frame = concat(new byte[12], new byte[] {0x08, 0x00}, tiny, new byte[60 - 14 - tiny.length]);
        PcapFrame f = read(pcapFile(LinkType.ETHERNET, false, false, frame)).get(0);
        assertNull(f.anomaly());
        assertEquals(60, f.capturedLength());
        assertEquals(32, f.ipLength());
        assertEquals(4, f.udpPayloadLength());
    }

    @Test
    void truncatedCaptureIsReported() throws Exception {
        byte[] ip = ipv4Udp(0x1234, 50000, 4791, PAYLOAD);
        byte[] full = concat(new byte[12], new byte[] {0x08, 0x00}, ip);
        int snap = full.length - 10;
        ByteBuffer b = ByteBuffer.allocate(24 + 16 + snap).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0xA1B2C3D4).putShort((short) 2).putShort((short) 4).putInt(0).putInt(0).putInt(snap).putInt(1);
        b.putInt(1).putInt(0).putInt(snap).putInt(full.length).put(full, 0, snap);
        PcapFrame f = read(b.array()).get(0);
        assertTrue(f.isTruncated());
        assertTrue(f.isUdp());
        assertEquals(snap, f.capturedLength());
        assertEquals(full.length, f.originalLength());
        assertEquals(ip.length, f.ipLength());
        assertEquals(PAYLOAD.length - 10, f.udpPayloadLength());
        assertTrue(f.anomaly().startsWith("truncated capture"), f.anomaly());

        // cut inside the IP header: not IP, but truncated
        ByteBuffer c = ByteBuffer.allocate(24 + 16 + 20).order(ByteOrder.LITTLE_ENDIAN);
        c.putInt(0xA1B2C3D4).putShort((short) 2).putShort((short) 4).putInt(0).putInt(0).putInt(20).putInt(1);
        c.putInt(1).putInt(0).putInt(20).putInt(full.length).put(full, 0, 20);
        PcapFrame g = read(c.array()).get(0);
        assertFalse(g.isIp());
        assertTrue(g.isTruncated());
    }

    // ---------------------------------------------------------------------------- bad files

    private static IOException failure(byte[] file) {
        return assertThrows(IOException.class, () -> read(file));
    }

    @Test
    void rejectsNonPcapFilesClearly() {
        byte[] pcapng = {0x0A, 0x0D, 0x0D, 0x0A, 0x1C, 0, 0, 0, 0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0};
        assertEquals("test.pcap: pcapng, not classic pcap (open it with CaptureReader.open)", failure(pcapng).getMessage());
        assertEquals("test.pcap: not a pcap file (empty)", failure(new byte[0]).getMessage());
        assertTrue(failure("hello, this is text, not a capture".getBytes(StandardCharsets.US_ASCII)).getMessage()
                .startsWith("test.pcap: not a pcap file (magic 0x"));
        assertEquals("test.pcap: not a pcap file (2 bytes)", failure(new byte[] {1, 2}).getMessage());
        byte[] shortHeader = Arrays.copyOf(pcapFile(1, false, false), 20);
        assertTrue(failure(shortHeader).getMessage().contains("truncated pcap file header"));
        byte[] v3 = pcapFile(1, false, false);
        v3[4] = 3;
        assertTrue(failure(v3).getMessage().contains("unsupported pcap version 3.4"));
    }

    @Test
    void rejectsTruncatedRecords() throws Exception {
        byte[] frame = concat(new byte[12], new byte[] {0x08, 0x00}, ipv4Udp(1, 1, 4791, PAYLOAD));
        byte[] file = pcapFile(1, false, false, frame, frame);
        // header of the 2nd record cut
        byte[] cutHeader = Arrays.copyOf(file, 24 + 16 + frame.length + 7);
        try (PcapReader r = new PcapReader(new ByteArrayInputStream(cutHeader), "x.pcap")) {
            assertNotNull(r.next());
            IOException e = assertThrows(IOException.class, r::next);
            assertEquals("x.pcap: truncated record header of frame 2 (7 of 16 bytes)", e.getMessage());
            assertNull(r.next());
        }
        byte[] cutData = Arrays.copyOf(file, file.length - 5);
        try (PcapReader r = new PcapReader(new ByteArrayInputStream(cutData), "x.pcap")) {
            assertNotNull(r.next());
            IOException e = assertThrows(IOException.class, r::next);
            assertTrue(e.getMessage().contains("truncated record data of frame 2"), e.getMessage());
        }
        byte[] huge = file.clone();
        huge[24 + 8 + 3] = 0x7F; // captured length ~2 GiB
        IOException e = assertThrows(IOException.class, () -> read(huge));
        assertTrue(e.getMessage().contains("corrupt record header of frame 1"), e.getMessage());
    }

    @Test
    void unsupportedLinkTypeIsReadButNotIp() throws Exception {
        List<PcapFrame> frames = read(pcapFile(147, false, false, new byte[] {1, 2, 3}));
        assertEquals(1, frames.size());
        assertFalse(frames.get(0).isIp());
        assertTrue(frames.get(0).anomaly().contains("not supported"));
        assertFalse(LinkType.isSupported(147));
        assertTrue(LinkType.isSupported(LinkType.LINUX_SLL2));
    }

    @Test
    void readsFromPath(@TempDir Path tmp) throws Exception {
        Path p = tmp.resolve("a.pcap");
        Files.write(p, pcapFile(LinkType.RAW, false, false, ipv4Udp(0x1234, 50000, 4791, PAYLOAD)));
        List<PcapFrame> frames = PcapReader.readAll(p);
        assertIpv4Udp(frames.get(0), 0);
        Path missing = tmp.resolve("missing.pcap");
        assertThrows(IOException.class, () -> new PcapReader(missing));
    }
}
