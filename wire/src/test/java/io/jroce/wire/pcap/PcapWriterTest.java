package io.jroce.wire.pcap;

import io.jroce.testkit.Hex;
import io.jroce.testkit.TestData;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PcapWriterTest {

    private static int addr(String dotted) throws Exception {
        return ByteBuffer.wrap(InetAddress.getByName(dotted).getAddress()).getInt();
    }

    @Test
    void fileHeaderIsClassicMicrosecondEthernet() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        new PcapWriter(bytes).close();
        assertArrayEquals(Hex.decode("d4c3b2a1020004000000000000000000ffff000001000000"), bytes.toByteArray());
    }

    /** Re-creating every golden frame with rxe's header values gives the golden IP/UDP/RoCE bytes exactly. */
    @Test
    void reproducesGoldenFramesBeyondTheMacs() throws Exception {
        List<GoldenFrames.Golden> golden = GoldenFrames.load();
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        List<GoldenFrames.Golden> used = new ArrayList<>();
        try (PcapWriter w = new PcapWriter(bytes)) {
            long t = 1_700_000_000_123_456_000L;
            for (GoldenFrames.Golden g : golden) {
                if (g.ttl() != 64 || g.tos() != 0 || g.udpChecksum() != 0) {
                    continue; // deliberately unusual headers (mask demos, hardware frame)
                }
                ByteBuf payload = Unpooled.wrappedBuffer(new byte[3], Arrays.copyOfRange(g.frame(), 42, g.frame().length));
                w.writeUdpIpv4(t, addr(g.src()), g.srcPort(), addr(g.dst()), g.dstPort(), g.ipId(), g.flags() << 13,
                        payload, 3, g.frame().length - 42);
                used.add(g);
            }
        }
        assertTrue(used.size() >= 35, "vectors used: " + used.size());
        try (PcapReader r = new PcapReader(new ByteArrayInputStream(bytes.toByteArray()), "mem")) {
            for (GoldenFrames.Golden g : used) {
                PcapFrame f = r.next();
                byte[] d = f.data();
                assertArrayEquals(Arrays.copyOfRange(g.frame(), 14, g.frame().length), Arrays.copyOfRange(d, 14, d.length),
                        "frame " + f.frameNumber());
                // MACs 02:00:a:b:c:d and EtherType IPv4
                assertArrayEquals(concat(new byte[] {2, 0}, InetAddress.getByName(g.dst()).getAddress(),
                        new byte[] {2, 0}, InetAddress.getByName(g.src()).getAddress(), new byte[] {8, 0}),
                        Arrays.copyOf(d, 14));
                assertEquals(1_700_000_000_123_456_000L, f.epochNanos());
            }
            assertNull(r.next());
        }
    }

    private static byte[] concat(byte[]... parts) {
        return PcapReaderTest.concat(parts);
    }

    @Test
    void roundTripThroughAFile(@TempDir Path tmp) throws Exception {
        Path p = tmp.resolve("rt.pcap");
        byte[] payload = new byte[300];
        for (int i = 0; i < payload.length; i++) {
            payload[i] = (byte) i;
        }
        ByteBuf buf = Unpooled.buffer(400).writeZero(17).writeBytes(payload);
        long t0 = 1_700_000_000_000_000_000L;
        try (PcapWriter w = new PcapWriter(p)) {
            w.writeUdpIpv4(t0 + 1_999, addr("127.0.0.1"), 52000, addr("127.0.0.2"), 4791, 0, 0x4000, buf, 17, 300);
            w.writeUdpIpv4(t0 + 1_000_000, addr("10.77.0.12"), 50447, addr("10.77.0.11"), 4791, 0xbeef, 0x4000, buf, 17, 0);
            w.writeFrame(t0 + 2_000_000, new byte[] {1, 2, 3});
            w.writeUdpIpv4(4_294_967_295_999_999_999L, addr("192.0.2.1"), 1, addr("192.0.2.2"), 2, 0xffff, 0, buf, 17, 16);
            assertThrows(IllegalArgumentException.class, () -> w.writeFrame(-1, new byte[1]));
            assertEquals(4, w.framesWritten());
        }
        List<PcapFrame> frames = PcapReader.readAll(p);
        assertEquals(4, frames.size());

        PcapFrame a = frames.get(0);
        assertNull(a.anomaly());
        assertEquals(t0 + 1_000, a.epochNanos(), "microsecond resolution");
        assertEquals(InetAddress.getByName("127.0.0.1"), a.srcAddress());
        assertEquals(InetAddress.getByName("127.0.0.2"), a.dstAddress());
        assertTrue(a.srcAddress() instanceof Inet4Address);
        assertEquals(52000, a.srcPort());
        assertEquals(4791, a.dstPort());
        assertEquals(0, a.ipId());
        assertEquals(0x4000, a.ipFlagsFragment());
        assertEquals(14 + 20 + 8 + 300, a.capturedLength());
        assertEquals(328, a.ipLength());
        assertEquals(300, a.udpPayloadLength());
        assertArrayEquals(payload, Arrays.copyOfRange(a.data(), a.udpPayloadOffset(), a.udpPayloadOffset() + 300));
        assertEquals(0, PcapWriter.ipv4HeaderChecksum(a.data(), 14, 20));
        assertEquals(64, a.data()[14 + 8]);
        assertEquals(0, a.data()[14 + 1]);
        assertEquals(0, a.data()[34 + 6] | a.data()[34 + 7], "UDP checksum 0 as rxe sends");

        PcapFrame b = frames.get(1);
        assertEquals(0xbeef, b.ipId());
        assertEquals(0, b.udpPayloadLength());
        assertEquals(0, PcapWriter.ipv4HeaderChecksum(b.data(), 14, 20));

        PcapFrame c = frames.get(2);
        assertEquals(3, c.capturedLength());
        assertTrue(!c.isIp());

        PcapFrame d = frames.get(3);
        assertEquals(4_294_967_295_999_999_000L, d.epochNanos(), "unsigned 32-bit seconds");
        assertEquals(0, d.ipFlagsFragment());
        assertEquals(0xffff, d.ipId());
        assertEquals(0, PcapWriter.ipv4HeaderChecksum(d.data(), 14, 20));
        assertEquals(1, buf.readerIndex() + 1, "source buffer indices untouched");
    }

    @Test
    void rejectsOversizeDatagramsAndWritesAfterClose() throws Exception {
        PcapWriter w = new PcapWriter(new ByteArrayOutputStream());
        ByteBuf big = Unpooled.buffer(70000).writeZero(70000);
        assertThrows(IllegalArgumentException.class, () -> w.writeUdpIpv4(0, 1, 1, 2, 4791, 0, 0x4000, big, 0, 65508));
        w.writeUdpIpv4(0, 1, 1, 2, 4791, 0, 0x4000, big, 0, 65507);
        w.close();
        w.close();
        assertThrows(java.io.IOException.class, () -> w.writeFrame(0, new byte[1]));
    }

    @Test
    void severalThreadsMayRecord() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int threads = 4;
        int each = 500;
        try (PcapWriter w = new PcapWriter(bytes)) {
            List<Thread> ts = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int id = t;
                Thread th = new Thread(() -> {
                    ByteBuf buf = Unpooled.buffer(64);
                    for (int i = 0; i < each; i++) {
                        buf.clear().writeInt(id).writeInt(i).writeZero(24 + (i % 7));
                        try {
                            w.writeUdpIpv4(i, 0x7F000001, 1000 + id, 0x7F000002, 4791, i, 0x4000, buf, 0, buf.readableBytes());
                        } catch (java.io.IOException e) {
                            throw new java.io.UncheckedIOException(e);
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
        Set<Long> seen = new HashSet<>();
        try (PcapReader r = new PcapReader(new ByteArrayInputStream(bytes.toByteArray()), "mem")) {
            for (PcapFrame f; (f = r.next()) != null; ) {
                assertNull(f.anomaly());
                ByteBuffer p = ByteBuffer.wrap(f.data(), f.udpPayloadOffset(), 8);
                int id = p.getInt();
                int i = p.getInt();
                assertEquals(1000 + id, f.srcPort());
                assertEquals(i, f.ipId());
                assertEquals(24 + (i % 7) + 8, f.udpPayloadLength());
                assertTrue(seen.add(((long) id << 32) | i));
            }
        }
        assertEquals(threads * each, seen.size());
    }
}
