package io.jroce.wire;

import io.jroce.testkit.TestData;
import io.jroce.wire.pcap.PcapFrame;
import io.jroce.wire.pcap.PcapReader;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jroce.wire.GoldenVectors.Vector;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.net.InetAddress;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32;
import org.junit.jupiter.api.Test;

class IcrcTest {
    private static final int ETH = 14;
    private static final int BTH_BYTE4 = 4;

    @Test
    void inverseOfXIsRight() {
        assertEquals(IcrcIdSolver.ONE, IcrcIdSolver.mulmod(IcrcIdSolver.X, IcrcIdSolver.X_INV));
        // x^8 is what feeding one zero byte does to the register
        assertEquals(IcrcIdSolver.raw(0x80, 0), IcrcIdSolver.mulmod(IcrcIdSolver.raw(0x80), IcrcIdSolver.pow(IcrcIdSolver.X, 8)));
    }

    @Test
    void writeStoresLeastSignificantByteFirst() {
        Vector v = GoldenVectors.get(1);
        ByteBuf b = Unpooled.copiedBuffer(v.udpPayload);
        int len = v.udpPayload.length;
        b.setInt(len - 4, 0);
        new Icrc().writeIpv4(v.srcAddr(), v.dstAddr(), 0, Icrc.IPV4_DF, v.srcPort(), v.dstPort(), b, 0, len);
        assertEquals(0xbc, b.getUnsignedByte(len - 4)); // icrc_on_wire_hex "bceefd5a", value 0x5afdeebc
        assertEquals(0x5afdeebc, Icrc.wireValue(b, 0, len));
    }

    @Test
    void rejectsImpossibleSlices() {
        Icrc icrc = new Icrc();
        ByteBuf b = Unpooled.buffer(64, 64);
        assertThrows(IllegalArgumentException.class, () -> icrc.computeIpv4(1, 2, 0, 0x4000, 3, 4791, b, 0, 15));
        assertThrows(IndexOutOfBoundsException.class, () -> icrc.computeIpv4(1, 2, 0, 0x4000, 3, 4791, b, 50, 16));
        assertEquals(-1, icrc.verifyIpv4UnknownId(1, 2, 3, 4791, b, 50, 16));
        assertEquals(-1, icrc.verifyIpv4UnknownId(1, 2, 3, 4791, b, 0, 15));
        assertEquals(-1, icrc.verifyIpv4UnknownId(1, 2, 3, 4791, b, -1, 16));
        assertFalse(icrc.verifyIpPacket(b, 60, 10));
        assertFalse(icrc.verifyIpPacket(null, 0, 10));
    }

    @Test
    void hardwareFrame40IdIsRecovered() {
        Vector v = GoldenVectors.get(40);
        ByteBuf b = Unpooled.wrappedBuffer(v.udpPayload);
        Icrc icrc = new Icrc();
        assertEquals(0x718c, icrc.verifyIpv4UnknownId(v.srcAddr(), v.dstAddr(), v.srcPort(), v.dstPort(), b, 0, v.udpPayload.length));
        assertEquals(0x718c, icrc.verifyIpv4UnknownId(v.srcAddr(), v.dstAddr(), v.srcPort(), v.dstPort(), b, 0, v.udpPayload.length, false));
    }

    /** Every single-bit corruption of frame 40's covered bytes, and of its ICRC, is rejected by every check. */
    @Test
    void everySingleBitErrorInFrame40IsRejected() {
        Vector v = GoldenVectors.get(40);
        Icrc icrc = new Icrc();
        byte[] frame = v.frame.clone();
        ByteBuf f = Unpooled.wrappedBuffer(frame);
        int udpPayload = ETH + 28;
        int len = v.udpPayload.length;
        int flips = 0;
        for (int i = 0; i < len; i++) {
            for (int bit = 0; bit < 8; bit++) {
                frame[udpPayload + i] ^= (byte) (1 << bit);
                boolean exact = icrc.verifyIpPacket(f, ETH, frame.length - ETH);
                int id = icrc.verifyIpv4UnknownId(v.srcAddr(), v.dstAddr(), v.srcPort(), v.dstPort(), f, udpPayload, len);
                int idDfOnly = icrc.verifyIpv4UnknownId(v.srcAddr(), v.dstAddr(), v.srcPort(), v.dstPort(), f, udpPayload, len, false);
                frame[udpPayload + i] ^= (byte) (1 << bit);
                if (i == BTH_BYTE4) {
                    // FECN/BECN/resv6a are masked: flipping them is not corruption
                    assertTrue(exact);
                    assertEquals(0x718c, id);
                    continue;
                }
                assertFalse(exact, "byte " + i + " bit " + bit);
                assertEquals(-1, id, "byte " + i + " bit " + bit);
                assertEquals(-1, idDfOnly, "byte " + i + " bit " + bit);
                flips++;
            }
        }
        assertEquals((len - 1) * 8, flips);
    }

    @Test
    void randomIdsAndDfStatesAreRecoveredOnHeapDirectAndCompositeBuffers() {
        long seed = Seeds.seed();
        Random rnd = new Random(seed);
        Icrc icrc = new Icrc();
        for (int round = 0; round < 500; round++) {
            int len = 16 + rnd.nextInt(rnd.nextBoolean() ? 64 : 4200);
            byte[] bytes = new byte[len];
            rnd.nextBytes(bytes);
            bytes[1] &= 0xF0; // tver 0, not that the ICRC cares
            int src = rnd.nextInt();
            int dst = rnd.nextInt();
            int sport = rnd.nextInt(0x10000);
            int id = rnd.nextInt(0x10000);
            boolean df = rnd.nextInt(4) != 0;
            ByteBuf b = buffer(rnd.nextInt(3), bytes);
            int off = b.readerIndex();
            icrc.writeIpv4(src, dst, id, df ? Icrc.IPV4_DF : 0, sport, RoceV2.UDP_PORT, b, off, len);
            String ctx = "seed " + seed + " round " + round + " len " + len + " id " + id + " df " + df;
            assertEquals(id, icrc.verifyIpv4UnknownId(src, dst, sport, RoceV2.UDP_PORT, b, off, len), ctx);
            assertEquals(df ? id : -1, icrc.verifyIpv4UnknownId(src, dst, sport, RoceV2.UDP_PORT, b, off, len, false), ctx);
            assertTrue(icrc.verifyIpv4(src, dst, id, df ? Icrc.IPV4_DF : 0, sport, RoceV2.UDP_PORT, b, off, len), ctx);
            // a different source port is a different packet
            assertFalse(icrc.verifyIpv4(src, dst, id, df ? Icrc.IPV4_DF : 0, sport ^ 1, RoceV2.UDP_PORT, b, off, len), ctx);
            b.release();
        }
    }

    /** heap (with a non-zero array offset), direct, or composite of three pieces. */
    private static ByteBuf buffer(int kind, byte[] bytes) {
        switch (kind) {
            case 0: {
                ByteBuf big = Unpooled.buffer(bytes.length + 10);
                big.writeZero(5).writeBytes(bytes).writeZero(5);
                return big.slice(5, bytes.length);
            }
            case 1:
                return Unpooled.directBuffer(bytes.length).writeBytes(bytes);
            default: {
                int a = bytes.length / 3;
                return Unpooled.wrappedBuffer(Unpooled.copiedBuffer(bytes, 0, a),
                        Unpooled.directBuffer(a).writeBytes(bytes, a, a),
                        Unpooled.copiedBuffer(bytes, 2 * a, bytes.length - 2 * a));
            }
        }
    }

    /**
     * The strength claims of Icrc's javadoc, derived exactly: a flip of bit mask m in UDP payload byte i
     * changes the unshifted difference by raw(m) * x^-8(21+i) whatever the packet length, so a flip goes
     * undetected iff that value is in the solution space. Walk every position of a 26,744-byte payload.
     */
    @Test
    void singleBitBlindSpotsAreExactlyTheDocumentedOnes() {
        int xInv8 = IcrcIdSolver.pow(IcrcIdSolver.X_INV, 8);
        int[] w = new int[8];
        for (int k = 0; k < 8; k++) {
            w[k] = IcrcIdSolver.mulmod(IcrcIdSolver.raw(1 << k), IcrcIdSolver.pow(xInv8, 21));
        }
        List<String> dfSet = new ArrayList<>();
        List<String> dfClear = new ArrayList<>();
        for (int i = 0; i < 26_744; i++) {
            for (int k = 0; k < 8; k++) {
                if (IcrcIdSolver.solve(w[k]) >= 0) {
                    dfSet.add(i + "/" + (1 << k));
                }
                if (IcrcIdSolver.solve(w[k] ^ IcrcIdSolver.DF_DELTA) >= 0) {
                    dfClear.add(i + "/" + (1 << k));
                }
                w[k] = IcrcIdSolver.mulmod(w[k], xInv8);
            }
        }
        assertEquals(List.of(), dfSet);
        assertEquals(List.of("173/8", "1834/64"), dfClear);

        // ICRC bit flips depend on the length
        List<String> icrcDfSet = new ArrayList<>();
        List<String> icrcDfClear = new ArrayList<>();
        for (int len = 16; len <= 26_744; len++) {
            for (int bit = 0; bit < 32; bit++) {
                int u = IcrcIdSolver.unshift(len, 1 << bit);
                if (IcrcIdSolver.solve(u) >= 0) {
                    icrcDfSet.add(len + "/" + bit);
                }
                if (IcrcIdSolver.solve(u ^ IcrcIdSolver.DF_DELTA) >= 0) {
                    icrcDfClear.add(len + "/" + bit);
                }
            }
        }
        assertEquals(List.of(), icrcDfSet);
        assertEquals(List.of("174/27", "175/19", "176/11", "177/3", "1835/30", "1836/22", "1837/14", "1838/6"), icrcDfClear);
        // and just past the documented range the DF-only check has its first blind spot
        assertTrue(IcrcIdSolver.solve(IcrcIdSolver.unshift(26_745, 1 << 30)) >= 0);
    }

    /** Brute-force confirmation on a real 4 KiB rxe packet: flip every bit, compare with the derivation above. */
    @Test
    void bruteForceSingleBitSweepOfALargeRxePacket() throws IOException {
        PcapFrame big = null;
        for (PcapFrame p : rocePackets(TestData.file("rxe/write_bw.pcap"))) {
            if (big == null || p.udpPayloadLength() > big.udpPayloadLength()) {
                big = p;
            }
        }
        assertTrue(big.udpPayloadLength() > 4096, "expected a PMTU-4096 packet");
        Icrc icrc = new Icrc();
        byte[] f = big.data().clone();
        ByteBuf b = Unpooled.wrappedBuffer(f);
        int off = big.udpPayloadOffset();
        int len = big.udpPayloadLength();
        int trueId = big.ipId();
        int src = ipv4(big.srcAddress());
        int dst = ipv4(big.dstAddress());
        List<String> accepted = new ArrayList<>();
        for (int i = 0; i < len; i++) {
            if (i == BTH_BYTE4) {
                continue;
            }
            for (int k = 0; k < 8; k++) {
                f[off + i] ^= (byte) (1 << k);
                int id = icrc.verifyIpv4UnknownId(src, dst, big.srcPort(), big.dstPort(), b, off, len);
                int strict = icrc.verifyIpv4UnknownId(src, dst, big.srcPort(), big.dstPort(), b, off, len, false);
                f[off + i] ^= (byte) (1 << k);
                assertEquals(-1, strict, "byte " + i + " bit " + k);
                if (id >= 0) {
                    accepted.add(i + "/" + (1 << k) + "->" + (id ^ trueId));
                }
            }
        }
        // accepted only where predicted, with the ID off by the DF-clear solution 14262 / 33032
        assertEquals(List.of("173/8->14262", "1834/64->33032"), accepted);
    }

    /** Every RoCE packet of the real rdma_rxe captures passes the exact check, and its ID is recovered. */
    @Test
    void rxeCapturesVerifyAndTheirIdsAreRecovered() throws IOException {
        Icrc icrc = new Icrc();
        RocePacket decoder = new RocePacket();
        int total = 0;
        int nonZeroIds = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(TestData.file("rxe"), "*.pcap")) {
            for (Path file : files) {
                List<PcapFrame> packets = rocePackets(file);
                // testdata/README.md: 20 RoCEv2 packets per capture
                assertEquals(20, packets.size(), file.toString());
                for (PcapFrame p : packets) {
                    String ctx = file.getFileName() + " frame " + p.frameNumber();
                    assertEquals(4, p.ipVersion(), ctx);
                    ByteBuf b = Unpooled.wrappedBuffer(p.data());
                    assertTrue(icrc.verifyIpPacket(b, p.ipOffset(), p.data().length - p.ipOffset()), ctx);
                    assertEquals(Icrc.IPV4_DF, p.ipFlagsFragment(), ctx);
                    assertEquals(p.ipId(), icrc.verifyIpv4UnknownId(ipv4(p.srcAddress()), ipv4(p.dstAddress()), p.srcPort(), p.dstPort(),
                            b, p.udpPayloadOffset(), p.udpPayloadLength()), ctx);
                    assertEquals(Problem.NONE, decoder.decode(b, p.udpPayloadOffset(), p.udpPayloadLength()), ctx);
                    total++;
                    nonZeroIds += p.ipId() != 0 ? 1 : 0;
                }
            }
        }
        System.out.println("IcrcTest: " + total + " RoCE packets in rxe captures verified, " + nonZeroIds + " with a non-zero IPv4 ID");
        assertEquals(80, total, "four captures of 20 RoCE packets each");
        assertTrue(nonZeroIds > 0);
    }

    @Test
    void ipv6IcrcMatchesAnIndependentPseudoPacket() {
        Random rnd = new Random(Seeds.seed());
        Icrc icrc = new Icrc();
        byte[] src = new byte[16];
        byte[] dst = new byte[16];
        rnd.nextBytes(src);
        rnd.nextBytes(dst);
        int len = 16 + 36;
        byte[] udpPayload = new byte[len];
        rnd.nextBytes(udpPayload);
        int sport = 0xC123;

        // the pseudo-packet spelled out as IBA RoCEv2 annex A17.4.1 masks it (rxe_icrc.c rxe_icrc_hdr): FF x8, IPv6 (6F FF FF FF, plen, nh 17, hop FF, addrs),
        // UDP (checksum FFFF), BTH with byte 4 FF, rest without the ICRC
        ByteBuf pseudo = Unpooled.buffer();
        pseudo.writeLong(-1L).writeInt(0x6FFFFFFF).writeShort(8 + len).writeByte(17).writeByte(0xFF)
                .writeBytes(src).writeBytes(dst)
                .writeShort(sport).writeShort(RoceV2.UDP_PORT).writeShort(8 + len).writeShort(0xFFFF)
                .writeBytes(udpPayload, 0, len - 4);
        pseudo.setByte(8 + 40 + 8 + 4, 0xFF);
        CRC32 crc = new CRC32();
        crc.update(pseudo.nioBuffer());
        int expected = (int) crc.getValue();

        ByteBuf b = Unpooled.wrappedBuffer(udpPayload);
        assertEquals(expected, icrc.computeIpv6(src, dst, sport, RoceV2.UDP_PORT, b, 0, len));

        // a whole IPv6 packet, with arbitrary traffic class / flow label / hop limit (all masked)
        icrc.writeIpv6(src, dst, sport, RoceV2.UDP_PORT, b, 0, len);
        ByteBuf ip = Unpooled.buffer();
        ip.writeInt(0x6AB12345).writeShort(8 + len).writeByte(17).writeByte(3).writeBytes(src).writeBytes(dst)
                .writeShort(sport).writeShort(RoceV2.UDP_PORT).writeShort(8 + len).writeShort(0x1234)
                .writeBytes(udpPayload);
        assertTrue(icrc.verifyIpPacket(ip, 0, ip.readableBytes()));
        ip.setByte(8, ip.getByte(8) ^ 1); // source address is covered
        assertFalse(icrc.verifyIpPacket(ip, 0, ip.readableBytes()));
    }

    @Test
    void exactCheckRejectsMalformedIpPackets() {
        Vector v = GoldenVectors.get(1);
        Icrc icrc = new Icrc();
        int ipLen = v.frame.length - ETH;
        ByteBuf ok = Unpooled.copiedBuffer(v.frame, ETH, ipLen);
        assertTrue(icrc.verifyIpPacket(ok, 0, ipLen));
        // trailing link-layer padding after the IP packet is fine
        ByteBuf padded = Unpooled.buffer().writeBytes(ok.duplicate()).writeZero(6);
        assertTrue(icrc.verifyIpPacket(padded, 0, ipLen + 6));

        assertFalse(icrc.verifyIpPacket(mutate(ok, 0, 0x46), 0, ipLen), "IHL 6");
        assertFalse(icrc.verifyIpPacket(mutate(ok, 0, 0x55), 0, ipLen), "version 5");
        assertFalse(icrc.verifyIpPacket(mutate(ok, 9, 6), 0, ipLen), "TCP");
        assertFalse(icrc.verifyIpPacket(mutate(ok, 6, 0x60), 0, ipLen), "MF set");
        assertFalse(icrc.verifyIpPacket(mutate(ok, 7, 0x01), 0, ipLen), "fragment offset");
        assertFalse(icrc.verifyIpPacket(mutate(ok, 3, 0x7F), 0, ipLen), "total length beyond the buffer");
        assertFalse(icrc.verifyIpPacket(mutate(ok, 25, 0x10), 0, ipLen), "UDP length disagrees");
        assertFalse(icrc.verifyIpPacket(ok, 0, ipLen - 1), "truncated");
        assertTrue(icrc.verifyIpPacket(mutate(ok, 8, 1), 0, ipLen), "TTL is masked");
        assertTrue(icrc.verifyIpPacket(mutate(ok, 1, 0xB8), 0, ipLen), "TOS is masked");
        assertTrue(icrc.verifyIpPacket(mutate(ok, 26, 0x55), 0, ipLen), "UDP checksum is masked");

        // garbage never throws
        Random rnd = new Random(Seeds.seed());
        for (int i = 0; i < 20_000; i++) {
            byte[] g = new byte[rnd.nextInt(120)];
            rnd.nextBytes(g);
            if (g.length > 0 && rnd.nextBoolean()) {
                g[0] = (byte) (rnd.nextBoolean() ? 0x45 : 0x60);
            }
            ByteBuf gb = Unpooled.wrappedBuffer(g);
            icrc.verifyIpPacket(gb, 0, g.length);
            icrc.verifyIpPacket(gb, rnd.nextInt(130) - 5, rnd.nextInt(130) - 5);
        }
    }

    private static ByteBuf mutate(ByteBuf b, int index, int value) {
        ByteBuf c = b.copy();
        c.setByte(index, value);
        return c;
    }

    /** The UDP/4791 frames of a capture, read with the project's pcap reader. */
    private static List<PcapFrame> rocePackets(Path file) throws IOException {
        List<PcapFrame> out = new ArrayList<>();
        for (PcapFrame f : PcapReader.readAll(file)) {
            if (f.isUdp() && f.dstPort() == RoceV2.UDP_PORT) out.add(f);
        }
        return out;
    }

    private static int ipv4(InetAddress a) {
        return ByteBuffer.wrap(a.getAddress()).getInt();
    }
}
