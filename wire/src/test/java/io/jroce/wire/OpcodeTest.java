package io.jroce.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class OpcodeTest {
    /** include/rdma/ib_pack.h names and values, and the header lengths of rdma_rxe's opcode table (rxe_opcode.c rxe_opcode[]) */
    private static final Object[][] TABLE = {
        {"RC_SEND_FIRST", 0x00, 12},
        {"RC_SEND_MIDDLE", 0x01, 12},
        {"RC_SEND_LAST", 0x02, 12},
        {"RC_SEND_LAST_WITH_IMMEDIATE", 0x03, 16},
        {"RC_SEND_ONLY", 0x04, 12},
        {"RC_SEND_ONLY_WITH_IMMEDIATE", 0x05, 16},
        {"RC_RDMA_WRITE_FIRST", 0x06, 28},
        {"RC_RDMA_WRITE_MIDDLE", 0x07, 12},
        {"RC_RDMA_WRITE_LAST", 0x08, 12},
        {"RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", 0x09, 16},
        {"RC_RDMA_WRITE_ONLY", 0x0A, 28},
        {"RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", 0x0B, 32},
        {"RC_RDMA_READ_REQUEST", 0x0C, 28},
        {"RC_RDMA_READ_RESPONSE_FIRST", 0x0D, 16},
        {"RC_RDMA_READ_RESPONSE_MIDDLE", 0x0E, 12},
        {"RC_RDMA_READ_RESPONSE_LAST", 0x0F, 16},
        {"RC_RDMA_READ_RESPONSE_ONLY", 0x10, 16},
        {"RC_ACKNOWLEDGE", 0x11, 16},
        {"RC_ATOMIC_ACKNOWLEDGE", 0x12, 24},
        {"RC_COMPARE_SWAP", 0x13, 40},
        {"RC_FETCH_ADD", 0x14, 40},
        {"RC_SEND_LAST_WITH_INVALIDATE", 0x16, 16},
        {"RC_SEND_ONLY_WITH_INVALIDATE", 0x17, 16},
        {"UD_SEND_ONLY", 0x64, 20},
        {"UD_SEND_ONLY_WITH_IMMEDIATE", 0x65, 24},
        {"CNP", 0x81, 28},
    };

    @Test
    void namesValuesAndHeaderLengths() {
        assertEquals(TABLE.length, Opcode.values().length);
        for (Object[] row : TABLE) {
            Opcode op = Opcode.valueOf((String) row[0]);
            assertEquals((int) row[1], op.code(), op.name());
            assertEquals((int) row[2], op.headerLength(), op.name());
            assertSame(op, Opcode.of(op.code()));
        }
    }

    @Test
    void ofIsNullForEverythingElse() {
        Map<Integer, Opcode> known = new LinkedHashMap<>();
        for (Opcode op : Opcode.values()) {
            known.put(op.code(), op);
        }
        for (int code = 0; code < 256; code++) {
            assertSame(known.get(code), Opcode.of(code), Integer.toHexString(code));
        }
        // reserved RC values, UC, RD, FLUSH / ATOMIC_WRITE, other UD
        for (int code : new int[] {0x15, 0x18, 0x1C, 0x1D, 0x1F, 0x20, 0x24, 0x40, 0x60, 0x66, 0x80, 0x82, 0xFF}) {
            assertNull(Opcode.of(code), Integer.toHexString(code));
        }
        assertNull(Opcode.of(-1));
        assertNull(Opcode.of(256));
        assertNull(Opcode.of(0x104)); // no aliasing of the low byte
    }

    @Test
    void extensionHeaderOffsetsFollowIbtaOrder() {
        assertEquals(12, Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE.rethOffset());
        assertEquals(28, Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE.immDtOffset());
        assertEquals(12, Opcode.RC_ATOMIC_ACKNOWLEDGE.aethOffset());
        assertEquals(16, Opcode.RC_ATOMIC_ACKNOWLEDGE.atomicAckEthOffset());
        assertEquals(12, Opcode.UD_SEND_ONLY_WITH_IMMEDIATE.dethOffset());
        assertEquals(20, Opcode.UD_SEND_ONLY_WITH_IMMEDIATE.immDtOffset());
        assertEquals(12, Opcode.RC_COMPARE_SWAP.atomicEthOffset());
        assertEquals(12, Opcode.RC_SEND_ONLY_WITH_INVALIDATE.iethOffset());
        assertEquals(-1, Opcode.RC_RDMA_READ_RESPONSE_MIDDLE.aethOffset());
        for (Opcode op : Opcode.values()) {
            int sum = BthView.LENGTH
                    + (op.hasReth() ? RethView.LENGTH : 0) + (op.hasAeth() ? AethView.LENGTH : 0)
                    + (op.hasAtomicEth() ? AtomicEthView.LENGTH : 0) + (op.hasAtomicAckEth() ? AtomicAckEthView.LENGTH : 0)
                    + (op.hasImmDt() ? ImmDtView.LENGTH : 0) + (op.hasIeth() ? IethView.LENGTH : 0)
                    + (op.hasDeth() ? DethView.LENGTH : 0) + (op == Opcode.CNP ? 16 : 0);
            assertEquals(sum, op.headerLength(), op.name());
            assertEquals(op.hasReth(), op.rethOffset() >= 0);
            assertEquals(op.hasAeth(), op.aethOffset() >= 0);
            assertEquals(op.hasAtomicEth(), op.atomicEthOffset() >= 0);
            assertEquals(op.hasAtomicAckEth(), op.atomicAckEthOffset() >= 0);
            assertEquals(op.hasImmDt(), op.immDtOffset() >= 0);
            assertEquals(op.hasIeth(), op.iethOffset() >= 0);
            assertEquals(op.hasDeth(), op.dethOffset() >= 0);
            assertEquals(op.name().contains("IMMEDIATE"), op.hasImmDt(), op.name());
            assertEquals(op.name().contains("INVALIDATE"), op.hasIeth(), op.name());
            assertEquals(op.isUd(), op.hasDeth(), op.name());
        }
    }

    @Test
    void classification() {
        for (Opcode op : Opcode.values()) {
            String n = op.name();
            assertEquals(n.contains("SEND") || n.contains("WRITE") || n.contains("READ_RESPONSE"), op.hasPayload(), n);
            assertEquals(op.operation() != Operation.CNP, op.isRequest() ^ op.isResponse(), n);
            assertEquals(n.endsWith("FIRST") || n.contains("ONLY") || op.position() == Position.ONLY, op.startsMessage(), n);
            assertEquals(op.position() == Position.LAST || op.position() == Position.ONLY, op.endsMessage(), n);
            assertEquals(n.startsWith("RC_"), op.isRc(), n);
            assertEquals(n.startsWith("UD_"), op.isUd(), n);
            if (n.contains("FIRST")) {
                assertEquals(Position.FIRST, op.position(), n);
            } else if (n.contains("MIDDLE")) {
                assertEquals(Position.MIDDLE, op.position(), n);
            } else if (n.contains("LAST")) {
                assertEquals(Position.LAST, op.position(), n);
            } else {
                assertEquals(Position.ONLY, op.position(), n);
            }
        }
        assertTrue(Opcode.RC_RDMA_READ_REQUEST.isRequest());
        assertFalse(Opcode.RC_RDMA_READ_REQUEST.hasPayload());
        assertTrue(Opcode.RC_ATOMIC_ACKNOWLEDGE.isResponse());
        assertTrue(Opcode.UD_SEND_ONLY.isRequest());
        assertEquals(Operation.FETCH_ADD, Opcode.RC_FETCH_ADD.operation());
        assertEquals(Operation.CNP, Opcode.CNP.operation());
        assertFalse(Opcode.CNP.isRc() || Opcode.CNP.isUd() || Opcode.CNP.hasPayload());
    }

    @Test
    void builders() {
        assertSame(Opcode.RC_SEND_ONLY, Opcode.rcSend(true, true, false, false));
        assertSame(Opcode.RC_SEND_ONLY_WITH_IMMEDIATE, Opcode.rcSend(true, true, true, false));
        assertSame(Opcode.RC_SEND_ONLY_WITH_INVALIDATE, Opcode.rcSend(true, true, false, true));
        assertSame(Opcode.RC_SEND_FIRST, Opcode.rcSend(true, false, true, false));
        assertSame(Opcode.RC_SEND_MIDDLE, Opcode.rcSend(false, false, false, true));
        assertSame(Opcode.RC_SEND_LAST, Opcode.rcSend(false, true, false, false));
        assertSame(Opcode.RC_SEND_LAST_WITH_IMMEDIATE, Opcode.rcSend(false, true, true, false));
        assertSame(Opcode.RC_SEND_LAST_WITH_INVALIDATE, Opcode.rcSend(false, true, false, true));
        assertThrows(IllegalArgumentException.class, () -> Opcode.rcSend(true, true, true, true));

        assertSame(Opcode.RC_RDMA_WRITE_ONLY, Opcode.rcWrite(true, true, false));
        assertSame(Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, Opcode.rcWrite(true, true, true));
        assertSame(Opcode.RC_RDMA_WRITE_FIRST, Opcode.rcWrite(true, false, true));
        assertSame(Opcode.RC_RDMA_WRITE_MIDDLE, Opcode.rcWrite(false, false, true));
        assertSame(Opcode.RC_RDMA_WRITE_LAST, Opcode.rcWrite(false, true, false));
        assertSame(Opcode.RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, Opcode.rcWrite(false, true, true));

        assertSame(Opcode.RC_RDMA_READ_RESPONSE_ONLY, Opcode.rcReadResponse(true, true));
        assertSame(Opcode.RC_RDMA_READ_RESPONSE_FIRST, Opcode.rcReadResponse(true, false));
        assertSame(Opcode.RC_RDMA_READ_RESPONSE_MIDDLE, Opcode.rcReadResponse(false, false));
        assertSame(Opcode.RC_RDMA_READ_RESPONSE_LAST, Opcode.rcReadResponse(false, true));

        // builders agree with position()
        for (boolean first : new boolean[] {true, false}) {
            for (boolean last : new boolean[] {true, false}) {
                Opcode s = Opcode.rcSend(first, last, false, false);
                assertEquals(first, s.startsMessage());
                assertEquals(last, s.endsMessage());
                assertEquals(first, Opcode.rcWrite(first, last, false).startsMessage());
                assertEquals(last, Opcode.rcReadResponse(first, last).endsMessage());
            }
        }
    }
}
