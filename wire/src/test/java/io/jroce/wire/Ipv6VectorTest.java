package io.jroce.wire;

import io.jroce.testkit.TestData;
import io.jroce.wire.pcap.PcapFrame;
import io.jroce.wire.pcap.PcapReader;
import io.jroce.wire.pcap.PcapWriter;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.net.InetAddress;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/**
 * RoCEv2 over IPv6: testdata/ipv6/rocev2-ipv6.pcap holds RC SEND, SEND with immediate, WRITE, READ request and
 * response, ACK, CMP_SWAP and its atomic ACK between 2001:db8::a and 2001:db8::b. Their ICRCs were computed
 * outside jroce, by Python's zlib.crc32 over the masked IPv6 pseudo-header of IBA RoCEv2 annex A17.4.1 (8 x FF,
 * IPv6 header with traffic class, flow label and hop limit all ones, UDP checksum FFFF, BTH byte 4 FF), and are
 * pinned here; tshark decodes every frame as InfiniBand with a good UDP checksum (testdata/README.md).
 */
class Ipv6VectorTest {
    /** zlib.crc32 of each frame's pseudo-packet, as the 32-bit value (on the wire least significant byte first). */
    private static final int[] ICRC = {
            0xc1bd5070, 0xa89f1984, 0x5034bb48, 0xd3d73332, 0x2c3ba418, 0xc894d823, 0xccd135d2, 0x3f4e4bc5, 0xc1bd5070};
    private static final Opcode[] OPCODE = {
            Opcode.RC_SEND_ONLY, Opcode.RC_SEND_ONLY_WITH_IMMEDIATE, Opcode.RC_RDMA_WRITE_ONLY, Opcode.RC_RDMA_READ_REQUEST,
            Opcode.RC_RDMA_READ_RESPONSE_ONLY, Opcode.RC_ACKNOWLEDGE, Opcode.RC_COMPARE_SWAP, Opcode.RC_ATOMIC_ACKNOWLEDGE,
            Opcode.RC_SEND_ONLY};
    private static final byte[] A = addr("2001:db8::a");
    private static final byte[] B = addr("2001:db8::b");

    private static byte[] addr(String s) {
        try {
            return InetAddress.getByName(s).getAddress();
        } catch (java.net.UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    private static List<PcapFrame> frames() throws Exception {
        return PcapReader.readAll(TestData.file("ipv6/rocev2-ipv6.pcap"));
    }

    @Test
    void icrcMatchesTheIndependentValueAndChecksExactly() throws Exception {
        List<PcapFrame> frames = frames();
        assertEquals(ICRC.length, frames.size());
        Icrc icrc = new Icrc();
        RocePacket p = new RocePacket();
        for (int i = 0; i < frames.size(); i++) {
            PcapFrame f = frames.get(i);
            assertEquals(6, f.ipVersion(), f.toString());
            assertEquals(RoceV2.UDP_PORT, f.dstPort());
            ByteBuf buf = f.asByteBuf();
            int off = f.udpPayloadOffset();
            int len = f.udpPayloadLength();
            byte[] src = f.srcAddress().getAddress();
            byte[] dst = f.dstAddress().getAddress();
            assertTrue(Arrays.equals(src, A) || Arrays.equals(src, B), f.toString());
            assertEquals(Problem.NONE, p.decode(buf, off, len), f.toString());
            assertEquals(OPCODE[i], p.opcode(), "frame " + (i + 1));
            assertEquals(ICRC[i], Icrc.wireValue(buf, off, len), "frame " + (i + 1) + " as recorded");
            assertEquals(ICRC[i], icrc.computeIpv6(src, dst, f.srcPort(), f.dstPort(), buf, off, len), "frame " + (i + 1));
            assertTrue(icrc.verifyIpv6(src, dst, f.srcPort(), f.dstPort(), buf, off, len), "frame " + (i + 1));
            assertTrue(icrc.verifyIpPacket(buf, f.ipOffset(), f.ipLength()), "frame " + (i + 1));
            // the addresses are covered: the same bytes to the other peer do not check
            assertFalse(icrc.verifyIpv6(dst, src, f.srcPort(), f.dstPort(), buf, off, len), "frame " + (i + 1) + " reversed");
        }
    }

    @Test
    void trafficClassFlowLabelAndHopLimitAreMasked() throws Exception {
        List<PcapFrame> frames = frames();
        byte[] plain = frames.get(0).data();
        byte[] marked = frames.get(8).data();
        int ip = 14;
        assertNotEquals(plain[ip + 1], marked[ip + 1], "frame 9 differs in traffic class / flow label");
        assertNotEquals(plain[ip + 7], marked[ip + 7], "frame 9 differs in hop limit");
        assertArrayEquals(Arrays.copyOfRange(plain, ip + 40, plain.length), Arrays.copyOfRange(marked, ip + 40, marked.length),
                "same UDP datagram, ICRC included");
        assertTrue(new Icrc().verifyIpPacket(Unpooled.wrappedBuffer(marked), ip, marked.length - ip));
    }

    @Test
    void everySingleBitErrorIsDetected() throws Exception {
        Icrc icrc = new Icrc();
        for (PcapFrame f : frames()) {
            byte[] d = f.data().clone();
            ByteBuf buf = Unpooled.wrappedBuffer(d);
            int off = f.udpPayloadOffset();
            int len = f.udpPayloadLength();
            byte[] src = f.srcAddress().getAddress();
            byte[] dst = f.dstAddress().getAddress();
            for (int i = 0; i < len; i++) {
                if (i == 4) continue; // BTH byte 4 (FECN, BECN, reserved) is masked
                for (int bit = 0; bit < 8; bit++) {
                    d[off + i] ^= (byte) (1 << bit);
                    assertFalse(icrc.verifyIpv6(src, dst, f.srcPort(), f.dstPort(), buf, off, len), f + " byte " + i + " bit " + bit);
                    d[off + i] ^= (byte) (1 << bit);
                }
            }
            d[off + 4] ^= (byte) 0xC0; // FECN and BECN, which switches may set
            assertTrue(icrc.verifyIpv6(src, dst, f.srcPort(), f.dstPort(), buf, off, len), f + " with FECN/BECN");
        }
    }

    /** jroce's writer and ICRC rebuild frames 1-8 byte for byte from their UDP payloads (UDP checksum included). */
    @Test
    void writerAndIcrcReproduceTheFrames() throws Exception {
        List<PcapFrame> frames = frames();
        for (int i = 0; i < 8; i++) {
            PcapFrame f = frames.get(i);
            byte[] payload = Arrays.copyOfRange(f.data(), f.udpPayloadOffset(), f.udpPayloadOffset() + f.udpPayloadLength());
            Arrays.fill(payload, payload.length - 4, payload.length, (byte) 0);
            ByteBuf b = Unpooled.wrappedBuffer(payload);
            byte[] src = f.srcAddress().getAddress();
            byte[] dst = f.dstAddress().getAddress();
            new Icrc().writeIpv6(src, dst, f.srcPort(), f.dstPort(), b, 0, payload.length);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            try (PcapWriter w = new PcapWriter(out)) {
                w.writeUdpIpv6(f.epochNanos(), src, f.srcPort(), dst, f.dstPort(), b, 0, payload.length);
            }
            byte[] file = out.toByteArray();
            byte[] frame = Arrays.copyOfRange(file, 24 + 16, file.length);
            assertArrayEquals(f.data(), frame, "frame " + (i + 1));
        }
    }
}
