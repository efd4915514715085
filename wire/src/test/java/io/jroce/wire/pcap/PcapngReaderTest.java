package io.jroce.wire.pcap;

import io.jroce.testkit.Hex;
import io.jroce.testkit.TestData;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PcapngReaderTest {

    // ---------------------------------------------------------------------------- editcap conversions

    /** testdata/pcapng/X.pcapng was written by {@code editcap -F pcapng} from the classic pcap named here. */
    private static void assertSameFrames(String pcap, String pcapng) throws IOException {
        List<PcapFrame> expected = PcapReader.readAll(TestData.file(pcap));
        List<PcapFrame> actual;
        try (CaptureReader r = CaptureReader.open(TestData.file(pcapng))) {
            assertInstanceOf(PcapngReader.class, r);
            assertEquals("pcapng", r.format());
            actual = new ArrayList<>();
            for (PcapFrame f; (f = r.next()) != null; ) {
                actual.add(f);
            }
            assertEquals(expected.size(), r.framesRead());
        }
        assertFalse(expected.isEmpty());
        assertEquals(expected.size(), actual.size(), pcapng);
        for (int i = 0; i < expected.size(); i++) {
            PcapFrame e = expected.get(i);
            PcapFrame a = actual.get(i);
            String where = pcapng + " frame " + (i + 1);
            assertEquals(e.frameNumber(), a.frameNumber(), where);
            assertArrayEquals(e.data(), a.data(), where);
            assertEquals(e.originalLength(), a.originalLength(), where);
            assertEquals(e.epochNanos(), a.epochNanos(), where);
            assertEquals(e.linkType(), a.linkType(), where);
            assertEquals(e.isUdp(), a.isUdp(), where);
        }
    }

    @Test
    void goldenPcapngMatchesThePcap() throws IOException {
        assertSameFrames("rocev2-golden.pcap", "pcapng/rocev2-golden.pcapng");
    }

    @Test
    void rxePcapngMatchesThePcaps() throws IOException {
        for (String n : List.of("rc_pingpong", "write_bw", "send_bw", "host_peer_rc_pingpong")) {
            assertSameFrames("rxe/" + n + ".pcap", "pcapng/rxe-" + n + ".pcapng");
        }
    }

    /**
     * pcapng/dumpcap-lo-send.pcapng: 50 frames that dumpcap captured on lo (nanosecond if_tsresol, interface
     * name option); the timestamps are tshark's frame.time_epoch of frames 1 and 2.
     */
    @Test
    void dumpcapNanosecondCapture() throws IOException {
        List<PcapFrame> frames = CaptureReader.readAll(TestData.file("pcapng/dumpcap-lo-send.pcapng"));
        assertEquals(50, frames.size());
        assertEquals(1_796_138_143_321_608_185L, frames.get(0).epochNanos());
        assertEquals(1_796_138_143_329_378_519L, frames.get(1).epochNanos());
        for (PcapFrame f : frames) {
            assertEquals(LinkType.ETHERNET, f.linkType());
            assertTrue(f.isUdp() && f.dstPort() == 4791, f.toString());
        }
    }

    @Test
    void openReadsClassicPcapToo() throws IOException {
        try (CaptureReader r = CaptureReader.open(TestData.goldenPcap())) {
            assertInstanceOf(PcapReader.class, r);
            assertEquals("pcap", r.format());
        }
        assertEquals(40, CaptureReader.readAll(TestData.goldenPcap()).size());
    }

    // ---------------------------------------------------------------------------- hand-built files

    /** Builds pcapng blocks in one byte order. */
    static final class Builder {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();
        private final ByteOrder order;

        Builder(ByteOrder order) {
            this.order = order;
        }

        ByteBuffer buf(int n) {
            return ByteBuffer.allocate(n).order(order);
        }

        Builder block(int type, byte[] body) {
            int padded = (body.length + 3) & ~3;
            ByteBuffer b = buf(12 + padded);
            b.putInt(type).putInt(12 + padded).put(body).position(8 + padded);
            b.putInt(12 + padded);
            out.writeBytes(b.array());
            return this;
        }

        Builder section() {
            ByteBuffer b = buf(16);
            b.putInt(0x1A2B3C4D).putShort((short) 1).putShort((short) 0).putLong(-1);
            return block(PcapngReader.SHB, b.array());
        }

        /** An Interface Description block; {@code tsresol} < 0 means no if_tsresol option. */
        Builder iface(int linkType, int tsresol, long tsoffset) {
            ByteBuffer b = buf(8 + 8 + 12 + 4);
            b.putShort((short) linkType).putShort((short) 0).putInt(65535);
            if (tsresol >= 0) {
                b.putShort((short) 9).putShort((short) 1).put((byte) tsresol).put(new byte[3]);
            }
            if (tsoffset != 0) {
                b.putShort((short) 14).putShort((short) 8).putLong(tsoffset);
            }
            b.putShort((short) 0).putShort((short) 0); // opt_endofopt
            return block(PcapngReader.IDB, Arrays.copyOf(b.array(), b.position()));
        }

        Builder epb(int ifId, long ts, byte[] data, boolean withOption) {
            int padded = (data.length + 3) & ~3;
            ByteBuffer b = buf(20 + padded + (withOption ? 12 : 0));
            b.putInt(ifId).putInt((int) (ts >>> 32)).putInt((int) ts).putInt(data.length).putInt(data.length);
            b.put(data).position(20 + padded);
            if (withOption) {
                b.putShort((short) 1).putShort((short) 4).put("note".getBytes()).putShort((short) 0).putShort((short) 0);
            }
            return block(PcapngReader.EPB, b.array());
        }

        Builder spb(byte[] data) {
            ByteBuffer b = buf(4 + data.length);
            b.putInt(data.length).put(data);
            return block(PcapngReader.SPB, b.array());
        }

        byte[] bytes() {
            return out.toByteArray();
        }
    }

    private static final byte[] ETHERNET_FRAME = Hex.decode(
            "020000000002" + "020000000001" + "0800"
            + "4500001c1234400040110000c0000201c0000202" + "c00012b70008" + "0000");
    /** The same IPv4/UDP packet without the Ethernet header, for a raw-IP interface. */
    private static final byte[] RAW_IP_PACKET = Arrays.copyOfRange(ETHERNET_FRAME, 14, ETHERNET_FRAME.length);

    private static List<PcapFrame> read(byte[] file) throws IOException {
        List<PcapFrame> out = new ArrayList<>();
        try (CaptureReader r = CaptureReader.open(new ByteArrayInputStream(file), "test.pcapng")) {
            for (PcapFrame f; (f = r.next()) != null; ) {
                out.add(f);
            }
        }
        return out;
    }

    private static void twoInterfaces(ByteOrder order) throws IOException {
        byte[] file = new Builder(order).section()
                .iface(LinkType.ETHERNET, -1, 0)          // default resolution: microseconds
                .iface(LinkType.RAW, 9, 0)                // nanoseconds
                .block(0x00000004, new byte[] {0, 0, 0, 0}) // Name Resolution block: skipped
                .epb(0, 1_700_000_000_123_456L, ETHERNET_FRAME, true)
                .epb(1, 1_700_000_000_123_456_789L, RAW_IP_PACKET, false)
                .block(0x40000BAD, new byte[20])          // a custom block type: skipped
                .spb(ETHERNET_FRAME)
                .bytes();
        List<PcapFrame> frames = read(file);
        assertEquals(3, frames.size());
        PcapFrame eth = frames.get(0);
        PcapFrame raw = frames.get(1);
        PcapFrame simple = frames.get(2);
        assertEquals(LinkType.ETHERNET, eth.linkType());
        assertEquals(LinkType.RAW, raw.linkType());
        assertEquals(LinkType.ETHERNET, simple.linkType());
        assertEquals(List.of(1L, 2L, 3L), frames.stream().map(PcapFrame::frameNumber).toList());
        assertArrayEquals(ETHERNET_FRAME, eth.data());
        assertArrayEquals(RAW_IP_PACKET, raw.data());
        assertArrayEquals(ETHERNET_FRAME, simple.data());
        for (PcapFrame f : frames) {
            assertTrue(f.isUdp(), f.toString());
            assertEquals(4791, f.dstPort());
            assertEquals(0x1234, f.ipId());
        }
        assertEquals(14, eth.ipOffset());
        assertEquals(0, raw.ipOffset());
        assertEquals(1_700_000_000_123_456_000L, eth.epochNanos());
        assertEquals(1_700_000_000_123_456_789L, raw.epochNanos());
        assertEquals(raw.epochNanos(), simple.epochNanos(), "a Simple Packet block takes the previous timestamp");
    }

    @Test
    void twoInterfacesWithDifferentLinkTypesLittleEndian() throws IOException {
        twoInterfaces(ByteOrder.LITTLE_ENDIAN);
    }

    @Test
    void twoInterfacesWithDifferentLinkTypesBigEndian() throws IOException {
        twoInterfaces(ByteOrder.BIG_ENDIAN);
    }

    @Test
    void binaryResolutionAndOffset() throws IOException {
        // 2^-20 s units: 3.5 s = 3.5 * 2^20; plus if_tsoffset of 1000 s
        byte[] file = new Builder(ByteOrder.LITTLE_ENDIAN).section()
                .iface(LinkType.ETHERNET, 0x80 | 20, 1000)
                .epb(0, 7L << 19, ETHERNET_FRAME, false)
                .bytes();
        assertEquals(1003_500_000_000L, read(file).get(0).epochNanos());
    }

    @Test
    void eachSectionHasItsOwnByteOrderAndInterfaces() throws IOException {
        ByteArrayOutputStream file = new ByteArrayOutputStream();
        file.writeBytes(new Builder(ByteOrder.LITTLE_ENDIAN).section().iface(LinkType.RAW, 9, 0)
                .epb(0, 5, RAW_IP_PACKET, false).bytes());
        file.writeBytes(new Builder(ByteOrder.BIG_ENDIAN).section().iface(LinkType.ETHERNET, 9, 0)
                .epb(0, 6, ETHERNET_FRAME, false).bytes());
        try (PcapngReader r = new PcapngReader(new ByteArrayInputStream(file.toByteArray()), "two.pcapng")) {
            assertTrue(r.isLittleEndian());
            assertEquals(LinkType.RAW, r.next().linkType());
            PcapFrame second = r.next();
            assertEquals(LinkType.ETHERNET, second.linkType());
            assertEquals(6, second.epochNanos());
            assertEquals(2, second.frameNumber());
            assertFalse(r.isLittleEndian());
            assertEquals(2, r.sections());
            assertEquals(1, r.interfaceCount());
            assertNull(r.next());
        }
    }

    // ---------------------------------------------------------------------------- malformed files

    private static IOException failure(byte[] file) {
        return assertThrows(IOException.class, () -> read(file));
    }

    private static byte[] goodFile() {
        return new Builder(ByteOrder.LITTLE_ENDIAN).section().iface(LinkType.ETHERNET, -1, 0)
                .epb(0, 1, ETHERNET_FRAME, false).bytes();
    }

    /** Offset of the Enhanced Packet block in {@link #goodFile()}: after the 28-byte SHB and the IDB. */
    private static int epbOffset(byte[] file) {
        int idbLength = ByteBuffer.wrap(file, 28 + 4, 4).order(ByteOrder.LITTLE_ENDIAN).getInt();
        return 28 + idbLength;
    }

    private static byte[] withInt(byte[] file, int off, int value) {
        byte[] b = file.clone();
        ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putInt(off, value);
        return b;
    }

    @Test
    void hugeBlockLengthIsAnErrorNotAnAllocation() {
        byte[] good = goodFile();
        int epb = epbOffset(good);
        for (int length : new int[] {0xFFFFFFF0, 0x7FFFFFFC, -4}) {
            String msg = failure(withInt(good, epb + 4, length)).getMessage();
            assertEquals("test.pcapng: corrupt block length " + Integer.toUnsignedString(length) + " at offset "
                    + epb, msg);
        }
    }

    @Test
    void badBlockLengthsGiveOneLineErrors() {
        byte[] good = goodFile();
        int epb = epbOffset(good);
        List<String> messages = new ArrayList<>();
        messages.add(failure(withInt(good, epb + 4, 8)).getMessage());          // below the minimum
        messages.add(failure(withInt(good, epb + 4, 61)).getMessage());         // not a multiple of 4
        messages.add(failure(withInt(good, epb + 4, 16)).getMessage());         // too short for an EPB
        messages.add(failure(withInt(good, epb + 20, 1 << 20)).getMessage());   // captured length beyond the block
        messages.add(failure(withInt(good, good.length - 4, 999)).getMessage()); // trailer disagrees
        messages.add(failure(withInt(good, epb + 8, 3)).getMessage());          // unknown interface
        messages.add(failure(Arrays.copyOf(good, good.length - 6)).getMessage()); // file ends inside a block
        messages.add(failure(withInt(good, 8, 0x11223344)).getMessage());       // bad byte-order magic
        for (String m : messages) {
            assertTrue(m.startsWith("test.pcapng: "), m);
            assertFalse(m.contains("\n"), m);
        }
        assertEquals("test.pcapng: corrupt block length 8 at offset " + epb, messages.get(0));
        assertEquals("test.pcapng: corrupt block length 61 at offset " + epb, messages.get(1));
        assertEquals("test.pcapng: Enhanced Packet block too short (16 bytes) at offset " + epb, messages.get(2));
        assertTrue(messages.get(3).startsWith("test.pcapng: captured length 1048576 exceeds the packet block"));
        assertTrue(messages.get(4).contains("trailing copy says 999"), messages.get(4));
        assertTrue(messages.get(5).contains("refers to interface 3 but the section describes 1"), messages.get(5));
        assertTrue(messages.get(6).contains("file ends inside"), messages.get(6));
        assertEquals("test.pcapng: bad byte-order magic 0x44332211 in the Section Header block at offset 0", messages.get(7));
    }

    @Test
    void framesBeforeTheErrorAreDelivered() throws IOException {
        byte[] good = goodFile();
        // a second copy of the Enhanced Packet block, with a broken trailer
        byte[] twice = PcapReaderTest.concat(good, Arrays.copyOfRange(good, epbOffset(good), good.length));
        twice = withInt(twice, twice.length - 4, 12);
        try (CaptureReader r = CaptureReader.open(new ByteArrayInputStream(twice), "x.pcapng")) {
            assertEquals(ETHERNET_FRAME.length, r.next().capturedLength());
            assertThrows(IOException.class, r::next);
            assertNull(r.next(), "after an error the reader stays at its end");
        }
    }

    @Test
    void streamsWithoutLoadingTheFile() throws IOException {
        // 20,000 frames from a stream that is generated on the fly: the reader must not need them all at once
        byte[] head = new Builder(ByteOrder.LITTLE_ENDIAN).section().iface(LinkType.ETHERNET, -1, 0).bytes();
        byte[] epb = new Builder(ByteOrder.LITTLE_ENDIAN).epb(0, 1, ETHERNET_FRAME, false).bytes();
        int count = 20_000;
        InputStream gen = new InputStream() {
            long pos;
            final long total = head.length + (long) epb.length * count;

            @Override
            public int read() {
                if (pos >= total) {
                    return -1;
                }
                long p = pos++;
                return (p < head.length ? head[(int) p] : epb[(int) ((p - head.length) % epb.length)]) & 0xFF;
            }
        };
        long n = 0;
        try (CaptureReader r = CaptureReader.open(gen, "gen.pcapng")) {
            for (PcapFrame f; (f = r.next()) != null; ) {
                n++;
                assertEquals(n, f.frameNumber());
            }
        }
        assertEquals(count, n);
    }

    @Test
    void notPcapng() {
        IOException e = assertThrows(IOException.class,
                () -> new PcapngReader(new ByteArrayInputStream(new byte[] {1, 2, 3, 4, 5, 6, 7, 8}), "x"));
        assertEquals("x: not a pcapng file (no Section Header block at the start)", e.getMessage());
    }
}
