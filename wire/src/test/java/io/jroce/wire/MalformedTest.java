package io.jroce.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.EnumSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class MalformedTest {
    /** A datagram: opcode byte, pad count, bytes after the BTH (ext headers + payload + pad), ICRC included. */
    private static byte[] datagram(int opcode, int pad, int afterBth) {
        byte[] d = new byte[BthView.LENGTH + afterBth + RoceV2.ICRC_LENGTH];
        ByteBuf b = Unpooled.wrappedBuffer(d);
        new BthView().wrap(b, 0).write(opcode, false, false, pad, 0xFFFF, 0x11, true, 5);
        return d;
    }

    private static Object[] row(Problem expected, String what, byte[] datagram) {
        return new Object[] {expected, what, datagram};
    }

    private static Object[][] table() {
        byte[] tver1 = datagram(0x04, 0, 4);
        tver1[1] |= 1;
        return new Object[][] {
            row(Problem.TOO_SHORT, "empty", new byte[0]),
            row(Problem.TOO_SHORT, "15 bytes", new byte[15]),
            row(Problem.BAD_TVER, "TVer 1", tver1),
            row(Problem.UNKNOWN_OPCODE, "reserved 0x15", datagram(0x15, 0, 0)),
            row(Problem.UNKNOWN_OPCODE, "reserved 0x18", datagram(0x18, 0, 0)),
            row(Problem.UNKNOWN_OPCODE, "reserved 0x1F", datagram(0x1F, 0, 0)),
            row(Problem.UNKNOWN_OPCODE, "UC SEND_ONLY 0x24", datagram(0x24, 0, 0)),
            row(Problem.UNKNOWN_OPCODE, "RD 0x44", datagram(0x44, 0, 8)),
            row(Problem.UNKNOWN_OPCODE, "0xFF", datagram(0xFF, 0, 0)),
            row(Problem.NONE, "SEND_ONLY without payload", datagram(0x04, 0, 0)),
            row(Problem.TRUNCATED_HEADERS, "WRITE_ONLY with 15 of 16 RETH bytes", datagram(0x0A, 0, 15)),
            row(Problem.NONE, "WRITE_ONLY with a RETH and no payload", datagram(0x0A, 0, 16)),
            row(Problem.TRUNCATED_HEADERS, "ATOMIC_ACK with only the AETH", datagram(0x12, 0, 4)),
            row(Problem.TRUNCATED_HEADERS, "CMP_SWAP with 27 of 28 bytes", datagram(0x13, 0, 27)),
            row(Problem.TRUNCATED_HEADERS, "CNP with 10 of 16 reserved bytes", datagram(0x81, 0, 10)),
            row(Problem.TRUNCATED_HEADERS, "UD SEND_ONLY_WITH_IMM without ImmDt", datagram(0x65, 0, 8)),
            row(Problem.PAD_EXCEEDS_PAYLOAD, "SEND_ONLY pad 3, 2 bytes", datagram(0x04, 3, 2)),
            row(Problem.PAD_EXCEEDS_PAYLOAD, "SEND_ONLY pad 1, nothing", datagram(0x04, 1, 0)),
            row(Problem.PAD_EXCEEDS_PAYLOAD, "ACK pad 2", datagram(0x11, 2, 4)),
            row(Problem.NONE, "SEND_ONLY 1 byte + pad 3", datagram(0x04, 3, 4)),
            row(Problem.NONE, "SEND_LAST 1 byte + pad 3", datagram(0x02, 3, 4)),
            row(Problem.BAD_PAYLOAD_LENGTH, "ACK with 4 payload bytes", datagram(0x11, 0, 8)),
            row(Problem.BAD_PAYLOAD_LENGTH, "ACK with a pad byte", datagram(0x11, 1, 5)),
            row(Problem.BAD_PAYLOAD_LENGTH, "READ_REQUEST with payload", datagram(0x0C, 0, 20)),
            row(Problem.BAD_PAYLOAD_LENGTH, "CMP_SWAP with payload", datagram(0x13, 0, 32)),
            row(Problem.BAD_PAYLOAD_LENGTH, "ATOMIC_ACK with payload", datagram(0x12, 0, 16)),
            row(Problem.BAD_PAYLOAD_LENGTH, "CNP with extra bytes", datagram(0x81, 0, 20)),
            row(Problem.BAD_PAYLOAD_LENGTH, "SEND_FIRST empty", datagram(0x00, 0, 0)),
            row(Problem.BAD_PAYLOAD_LENGTH, "SEND_MIDDLE empty", datagram(0x01, 0, 0)),
            row(Problem.BAD_PAYLOAD_LENGTH, "SEND_LAST empty", datagram(0x02, 0, 0)),
            row(Problem.BAD_PAYLOAD_LENGTH, "WRITE_LAST_WITH_IMM empty", datagram(0x09, 0, 4)),
            row(Problem.BAD_PAYLOAD_LENGTH, "READ_RESPONSE_MIDDLE empty", datagram(0x0E, 0, 0)),
            row(Problem.BAD_PAYLOAD_LENGTH, "SEND_FIRST padded", datagram(0x00, 1, 4)),
            row(Problem.BAD_PAYLOAD_LENGTH, "WRITE_MIDDLE padded", datagram(0x07, 2, 8)),
            row(Problem.NONE, "READ_RESPONSE_ONLY empty", datagram(0x10, 0, 4)),
            row(Problem.NONE, "UD SEND_ONLY empty", datagram(0x64, 0, 8)),
            row(Problem.NONE, "CNP", datagram(0x81, 0, 16)),
        };
    }

    @Test
    void eachMalformedDatagramYieldsItsProblem() {
        RocePacket p = new RocePacket();
        Set<Problem> seen = EnumSet.noneOf(Problem.class);
        for (Object[] row : table()) {
            Problem expected = (Problem) row[0];
            byte[] d = (byte[]) row[2];
            // exact capacity: reading a byte outside the datagram would throw
            ByteBuf exact = Unpooled.buffer(d.length, d.length).writeBytes(d);
            Problem got = p.decode(exact, 0, d.length);
            assertEquals(expected, got, (String) row[1]);
            if (got == Problem.NONE) {
                assertNotNull(p.opcode());
            } else {
                assertNull(p.opcode(), "opcode is cleared when decode fails");
            }
            seen.add(got);
        }
        assertEquals(EnumSet.allOf(Problem.class), seen);
        for (Problem problem : Problem.values()) {
            assertNotNull(problem.reason());
        }
    }

    @Test
    void slicesOutsideTheBufferAreTooShortNotExceptions() {
        RocePacket p = new RocePacket();
        ByteBuf b = Unpooled.wrappedBuffer(datagram(0x04, 0, 0));
        assertEquals(Problem.NONE, p.decode(b, 0, 16));
        assertEquals(Problem.TOO_SHORT, p.decode(b, 1, 16));
        assertEquals(Problem.TOO_SHORT, p.decode(b, -1, 16));
        assertEquals(Problem.TOO_SHORT, p.decode(b, 0, -1));
        assertEquals(Problem.TOO_SHORT, p.decode(b, Integer.MAX_VALUE, 16));
        assertEquals(Problem.TOO_SHORT, p.decode(null, 0, 16));
    }

    /**
     * Random bytes of random lengths, each decoded twice: from a buffer of exactly that capacity (a read
     * outside would throw) and as a slice of a larger buffer with random surroundings (a read outside would
     * change the outcome). Both must agree, and never throw.
     */
    @Test
    void fuzzNeverThrowsNorReadsOutsideTheSlice() {
        long seed = Seeds.seed();
        Random rnd = new Random(seed);
        Opcode[] ops = Opcode.values();
        RocePacket a = new RocePacket();
        RocePacket b = new RocePacket();
        EnumSet<Problem> seen = EnumSet.noneOf(Problem.class);
        for (int i = 0; i < 200_000; i++) {
            int len = rnd.nextInt(101);
            byte[] d = new byte[len];
            rnd.nextBytes(d);
            // bias towards plausible BTHs so every branch is reached
            if (len > 1 && rnd.nextInt(4) != 0) {
                d[0] = (byte) ops[rnd.nextInt(ops.length)].code();
                d[1] &= (byte) (rnd.nextInt(8) == 0 ? 0xFF : 0xF0);
            }
            String ctx = "seed " + seed + " iteration " + i;
            ByteBuf exact = Unpooled.buffer(len, len).writeBytes(d);
            Problem pa = a.decode(exact, 0, len);

            int before = rnd.nextInt(8);
            int after = rnd.nextInt(8);
            byte[] big = new byte[before + len + after];
            rnd.nextBytes(big);
            System.arraycopy(d, 0, big, before, len);
            ByteBuf outer = Unpooled.wrappedBuffer(big);
            Problem pb = b.decode(outer, before, len);
            assertEquals(pa, pb, ctx);
            seen.add(pa);
            if (pa == Problem.NONE) {
                assertEquals(a.opcode(), b.opcode(), ctx);
                assertEquals(a.payloadLength(), b.payloadLength(), ctx);
                assertEquals(a.payloadOffset() + before, b.payloadOffset(), ctx);
                assertEquals(len, a.payloadOffset() + a.payloadLength() + a.padCount() + RoceV2.ICRC_LENGTH, ctx);
                touchEveryView(a);
            }
        }
        assertEquals(EnumSet.allOf(Problem.class), seen, "seed " + seed);
    }

    /** Reads every field of every present header; on an exact-capacity buffer anything out of range throws. */
    private static void touchEveryView(RocePacket p) {
        BthView bth = p.bth();
        long sink = bth.opcode() + bth.psn() + bth.destQp() + bth.pkey() + bth.padCount() + bth.tver() + bth.reserved7()
                + (bth.se() ? 1 : 0) + (bth.migReq() ? 1 : 0) + (bth.fecn() ? 1 : 0) + (bth.becn() ? 1 : 0) + (bth.ackReq() ? 1 : 0);
        Opcode op = p.opcode();
        if (op.hasReth()) {
            sink += p.reth().va() + p.reth().rkey() + p.reth().dmaLengthUnsigned();
        }
        if (op.hasAeth()) {
            sink += p.aeth().syndrome() + p.aeth().msn();
        }
        if (op.hasAtomicEth()) {
            sink += p.atomicEth().va() + p.atomicEth().rkey() + p.atomicEth().swapAdd() + p.atomicEth().compare();
        }
        if (op.hasAtomicAckEth()) {
            sink += p.atomicAckEth().originalData();
        }
        if (op.hasImmDt()) {
            sink += p.immDt().imm();
        }
        if (op.hasIeth()) {
            sink += p.ieth().rkey();
        }
        if (op.hasDeth()) {
            sink += p.deth().qkey() + p.deth().srcQp();
        }
        if (p.payloadLength() > 0) {
            sink += p.buffer().getByte(p.payloadOffset()) + p.buffer().getByte(p.payloadOffset() + p.payloadLength() - 1);
        }
        sink += Icrc.wireValue(p.buffer(), p.offset(), p.length());
        if (sink == 42) {
            System.out.print(""); // keep the reads
        }
    }
}
