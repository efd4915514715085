package io.jroce.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jroce.wire.GoldenVectors.Vector;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Decode, re-encode and ICRC-check the 40 golden frames of testdata/rocev2-golden.json. */
class GoldenVectorTest {
    private static final int ETH = 14;
    private static final Set<Integer> BAD_ICRC = Set.of(36, 37, 38, 39);

    @Test
    void jsonHasFortyVectorsAndBadOnesAreMarked() {
        List<Vector> all = GoldenVectors.all();
        assertEquals(40, all.size());
        for (Vector v : all) {
            assertEquals(!BAD_ICRC.contains(v.number), v.icrcValid, v.toString());
            // the UDP payload is the tail of the frame after Ethernet, IPv4 and UDP headers
            assertEquals(v.frame.length - ETH - 28, v.udpPayload.length, v.toString());
        }
    }

    @Test
    void everyFrameDecodesToTheJsonFields() {
        RocePacket p = new RocePacket();
        for (Vector v : GoldenVectors.all()) {
            // decode in place inside the whole Ethernet frame, so offsets are not 0
            ByteBuf frame = Unpooled.wrappedBuffer(v.frame);
            int off = ETH + 28;
            assertEquals(Problem.NONE, p.decode(frame, off, v.udpPayload.length), v.toString());
            Opcode op = p.opcode();
            assertEquals(v.opcode, op.code(), v.toString());
            assertEquals(v.opcodeName, op.name(), v.toString());

            BthView bth = p.bth();
            assertEquals(v.bthFlag("se"), bth.se(), v + " se");
            assertEquals(v.bthFlag("migreq"), bth.migReq(), v + " migreq");
            assertEquals(v.bth("pad"), bth.padCount(), v + " pad");
            assertEquals(v.bth("tver"), bth.tver(), v + " tver");
            assertEquals(v.bth("pkey"), bth.pkey(), v + " pkey");
            assertEquals(v.bthFlag("fecn"), bth.fecn(), v + " fecn");
            assertEquals(v.bthFlag("becn"), bth.becn(), v + " becn");
            assertEquals(v.bth("dest_qp"), bth.destQp(), v + " dest_qp");
            assertEquals(v.bthFlag("ackreq"), bth.ackReq(), v + " ackreq");
            assertEquals(v.bth("psn"), bth.psn(), v + " psn");
            assertEquals(0, bth.reserved7(), v.toString());
            assertEquals(bth.psn(), p.psn());
            assertEquals(bth.destQp(), p.destQp());
            assertEquals(bth.ackReq(), p.ackReq());
            assertEquals(bth.se(), p.se());
            assertEquals(bth.padCount(), p.padCount());
            assertEquals(bth.pkey(), p.pkey());

            checkExt(v, p);

            // The JSON counts a CNP's 16 reserved bytes as payload; Opcode counts them as header.
            int expectedPayload = op == Opcode.CNP ? v.payloadLen - Opcode.CNP_RESERVED_LENGTH : v.payloadLen;
            assertEquals(expectedPayload, p.payloadLength(), v + " payload length");
            assertEquals(off + op.headerLength(), p.payloadOffset(), v.toString());
            assertEquals(off + v.udpPayload.length - 4, p.icrcOffset(), v.toString());
            assertEquals(frame, p.buffer());
            assertEquals(off, p.offset());
            assertEquals(v.udpPayload.length, p.length());
            // decode never moves the indices
            assertEquals(0, frame.readerIndex());
            assertEquals(v.frame.length, frame.writerIndex());
        }
    }

    private static void checkExt(Vector v, RocePacket p) {
        Opcode op = p.opcode();
        assertEquals(op.hasReth(), v.hasExt("reth_va"), v.toString());
        assertEquals(op.hasAeth(), v.hasExt("aeth_syndrome"), v.toString());
        assertEquals(op.hasAtomicEth(), v.hasExt("atomic_va"), v.toString());
        assertEquals(op.hasAtomicAckEth(), v.hasExt("atomic_orig"), v.toString());
        assertEquals(op.hasImmDt(), v.hasExt("imm"), v.toString());
        assertEquals(op.hasIeth(), v.hasExt("ieth_rkey"), v.toString());
        assertEquals(op.hasDeth(), v.hasExt("deth_qkey"), v.toString());
        if (op.hasReth()) {
            assertEquals(v.ext("reth_va"), p.reth().va(), v.toString());
            assertEquals((int) v.ext("reth_rkey"), p.reth().rkey(), v.toString());
            assertEquals(v.ext("reth_len"), p.reth().dmaLengthUnsigned(), v.toString());
        } else {
            assertNull(p.reth(), v.toString());
        }
        if (op.hasAeth()) {
            assertEquals((int) v.ext("aeth_syndrome"), p.aeth().syndrome(), v.toString());
            assertEquals((int) v.ext("aeth_msn"), p.aeth().msn(), v.toString());
        } else {
            assertNull(p.aeth(), v.toString());
        }
        if (op.hasAtomicEth()) {
            assertEquals(v.ext("atomic_va"), p.atomicEth().va(), v.toString());
            assertEquals((int) v.ext("atomic_rkey"), p.atomicEth().rkey(), v.toString());
            assertEquals(v.ext("swap_add"), p.atomicEth().swapAdd(), v.toString());
            assertEquals(v.ext("compare"), p.atomicEth().compare(), v.toString());
        } else {
            assertNull(p.atomicEth(), v.toString());
        }
        if (op.hasAtomicAckEth()) {
            assertEquals(v.ext("atomic_orig"), p.atomicAckEth().originalData(), v.toString());
        } else {
            assertNull(p.atomicAckEth(), v.toString());
        }
        if (op.hasImmDt()) {
            assertEquals((int) v.ext("imm"), p.immDt().imm(), v.toString());
        } else {
            assertNull(p.immDt(), v.toString());
        }
        if (op.hasIeth()) {
            assertEquals((int) v.ext("ieth_rkey"), p.ieth().rkey(), v.toString());
        } else {
            assertNull(p.ieth(), v.toString());
        }
        if (op.hasDeth()) {
            assertEquals((int) v.ext("deth_qkey"), p.deth().qkey(), v.toString());
            assertEquals((int) v.ext("deth_src_qp"), p.deth().srcQp(), v.toString());
        } else {
            assertNull(p.deth(), v.toString());
        }
    }

    @Test
    void validFramesReencodeByteForByteFromJsonValues() {
        Icrc icrc = new Icrc();
        BthView bth = new BthView();
        int checked = 0;
        for (Vector v : GoldenVectors.all()) {
            if (!v.icrcValid) {
                continue;
            }
            Opcode op = Opcode.of(v.opcode);
            int len = v.udpPayload.length;
            ByteBuf b = Unpooled.buffer(len, len);
            bth.wrap(b, 0).write(op.code(), v.bthFlag("se"), v.bthFlag("migreq"), v.bth("pad"), v.bth("pkey"),
                    v.bth("dest_qp"), v.bthFlag("ackreq"), v.bth("psn"));
            bth.fecn(v.bthFlag("fecn")).becn(v.bthFlag("becn"));
            writeExt(v, op, b);
            int payload = op == Opcode.CNP ? 0 : v.payloadLen;
            b.setBytes(op.headerLength(), v.udpPayload, op.headerLength(), payload);
            // pad bytes and a CNP's reserved bytes stay zero (Unpooled.buffer is zeroed); the golden ones are zero too
            icrc.writeIpv4(v.srcAddr(), v.dstAddr(), v.ipId(), v.ipFlagsFragment(), v.srcPort(), v.dstPort(), b, 0, len);
            byte[] out = new byte[len];
            b.getBytes(0, out);
            assertArrayEquals(v.udpPayload, out, v.toString());
            assertEquals(v.icrcU32, Icrc.wireValue(b, 0, len), v.toString());
            assertEquals(0, b.readerIndex());
            assertEquals(0, b.writerIndex(), "write methods must not move the writer index");
            checked++;
        }
        assertEquals(36, checked);
    }

    private static void writeExt(Vector v, Opcode op, ByteBuf b) {
        if (op.hasReth()) {
            new RethView().wrap(b, op.rethOffset()).write(v.ext("reth_va"), (int) v.ext("reth_rkey"), (int) v.ext("reth_len"));
        }
        if (op.hasAeth()) {
            new AethView().wrap(b, op.aethOffset()).write((int) v.ext("aeth_syndrome"), (int) v.ext("aeth_msn"));
        }
        if (op.hasAtomicEth()) {
            new AtomicEthView().wrap(b, op.atomicEthOffset()).write(v.ext("atomic_va"), (int) v.ext("atomic_rkey"),
                    v.ext("swap_add"), v.ext("compare"));
        }
        if (op.hasAtomicAckEth()) {
            new AtomicAckEthView().wrap(b, op.atomicAckEthOffset()).originalData(v.ext("atomic_orig"));
        }
        if (op.hasImmDt()) {
            new ImmDtView().wrap(b, op.immDtOffset()).imm((int) v.ext("imm"));
        }
        if (op.hasIeth()) {
            new IethView().wrap(b, op.iethOffset()).rkey((int) v.ext("ieth_rkey"));
        }
        if (op.hasDeth()) {
            new DethView().wrap(b, op.dethOffset()).write((int) v.ext("deth_qkey"), (int) v.ext("deth_src_qp"));
        }
    }

    @Test
    void computeMatchesExpectedCorrectIcrcForAllFrames() {
        Icrc icrc = new Icrc();
        for (Vector v : GoldenVectors.all()) {
            ByteBuf b = Unpooled.wrappedBuffer(v.udpPayload);
            int crc = icrc.computeIpv4(v.srcAddr(), v.dstAddr(), v.ipId(), v.ipFlagsFragment(), v.srcPort(), v.dstPort(),
                    b, 0, v.udpPayload.length);
            assertEquals(v.icrcU32, crc, v.toString());
            assertEquals(v.icrcValid, crc == Icrc.wireValue(b, 0, v.udpPayload.length), v.toString());
        }
    }

    @Test
    void exactCheckAcceptsValidFramesAndRejects36To39() {
        Icrc icrc = new Icrc();
        for (Vector v : GoldenVectors.all()) {
            ByteBuf frame = Unpooled.wrappedBuffer(v.frame);
            assertEquals(v.icrcValid, icrc.verifyIpPacket(frame, ETH, v.frame.length - ETH), v.toString());
            // same answer from a direct buffer (NIO path) and a composite (chunked path)
            ByteBuf direct = Unpooled.directBuffer(v.frame.length).writeBytes(v.frame);
            assertEquals(v.icrcValid, icrc.verifyIpPacket(direct, ETH, v.frame.length - ETH), v + " direct");
            ByteBuf composite = Unpooled.wrappedBuffer(Unpooled.wrappedBuffer(v.frame, 0, 50),
                    Unpooled.wrappedBuffer(v.frame, 50, v.frame.length - 50));
            assertEquals(v.icrcValid, icrc.verifyIpPacket(composite, ETH, v.frame.length - ETH), v + " composite");
            direct.release();
        }
    }

    @Test
    void frame38IsTheIpIdTrap() {
        Vector v = GoldenVectors.get(38);
        assertEquals(0x4d2e, v.ipId());
        Icrc icrc = new Icrc();
        ByteBuf b = Unpooled.wrappedBuffer(v.udpPayload);
        int len = v.udpPayload.length;
        // The ICRC is right for ID 0 ...
        assertTrue(icrc.verifyIpv4(v.srcAddr(), v.dstAddr(), 0, Icrc.IPV4_DF, v.srcPort(), v.dstPort(), b, 0, len));
        // ... but the frame carries 0x4d2e, so a receiver that sees the IP header drops it.
        assertFalse(icrc.verifyIpv4(v.srcAddr(), v.dstAddr(), v.ipId(), Icrc.IPV4_DF, v.srcPort(), v.dstPort(), b, 0, len));
        assertFalse(icrc.verifyIpPacket(Unpooled.wrappedBuffer(v.frame), ETH, v.frame.length - ETH));
        // A receiver behind a UDP socket cannot tell: it recovers ID 0, the ID the ICRC was made for.
        assertEquals(0, icrc.verifyIpv4UnknownId(v.srcAddr(), v.dstAddr(), v.srcPort(), v.dstPort(), b, 0, len));
    }

    @Test
    void masksAndIdCoverageMatchVectors33And34() {
        // 33 differs from 1 in TTL, TOS, FECN and UDP checksum (all masked) and has the same ICRC;
        // 34 differs from 1 only in the IPv4 ID (covered) and has a different one.
        assertEquals(GoldenVectors.get(1).icrcU32, GoldenVectors.get(33).icrcU32);
        assertFalse(GoldenVectors.get(1).icrcU32 == GoldenVectors.get(34).icrcU32);
    }

    @Test
    void unknownIdCheckRecoversEveryValidFramesId() {
        Icrc icrc = new Icrc();
        for (Vector v : GoldenVectors.all()) {
            ByteBuf b = Unpooled.wrappedBuffer(v.udpPayload);
            int id = icrc.verifyIpv4UnknownId(v.srcAddr(), v.dstAddr(), v.srcPort(), v.dstPort(), b, 0, v.udpPayload.length);
            if (v.icrcValid) {
                assertEquals(v.ipId(), id, v.toString());
            } else if (v.number != 38) {
                assertEquals(-1, id, v.toString());
            }
        }
        Vector hw = GoldenVectors.get(40);
        assertEquals(0x718c, hw.ipId());
        assertNotNull(Opcode.of(hw.opcode));
    }
}
