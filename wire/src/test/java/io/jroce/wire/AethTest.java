package io.jroce.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import org.junit.jupiter.api.Test;

class AethTest {
    /** RNR NAK timer field encoding, in ms by code (IBA vol.1 table 45; include/rdma/ib_verbs.h enum ib_rnr_timeout). */
    private static final String[] RNR_MS = {
        "655.36", "0.01", "0.02", "0.03", "0.04", "0.06", "0.08", "0.12",
        "0.16", "0.24", "0.32", "0.48", "0.64", "0.96", "1.28", "1.92",
        "2.56", "3.84", "5.12", "7.68", "10.24", "15.36", "20.48", "30.72",
        "40.96", "61.44", "81.92", "122.88", "163.84", "245.76", "327.68", "491.52",
    };

    /** End-to-end credit count by AETH credit code (IBA vol.1 9.7.5.1.2): codes 0..30, 31 = invalid. */
    private static final int[] CREDITS = {
        0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072,
        4096, 6144, 8192, 12288, 16384, 24576, 32768,
    };

    @Test
    void rnrTimerTable() {
        assertEquals(655_360_000L, Aeth.rnrTimerNanos(0));
        assertEquals(10_000L, Aeth.rnrTimerNanos(1));
        assertEquals(640_000L, Aeth.rnrTimerNanos(12)); // rc_pingpong's min_rnr_timer
        assertEquals(1_280_000L, Aeth.rnrTimerNanos(14));
        assertEquals(1_920_000L, Aeth.rnrTimerNanos(15));
        assertEquals(61_440_000L, Aeth.rnrTimerNanos(25)); // not rxe's 61.41 ms typo
        assertEquals(491_520_000L, Aeth.rnrTimerNanos(31));
        for (int code = 0; code < 32; code++) {
            long nanos = new java.math.BigDecimal(RNR_MS[code]).movePointRight(6).longValueExact();
            assertEquals(nanos, Aeth.rnrTimerNanos(code), "code " + code);
        }
        // monotonic from code 1 up; code 0 is the longest
        for (int code = 2; code < 32; code++) {
            assertEquals(true, Aeth.rnrTimerNanos(code) > Aeth.rnrTimerNanos(code - 1));
        }
        assertEquals(true, Aeth.rnrTimerNanos(0) > Aeth.rnrTimerNanos(31));
    }

    @Test
    void creditTable() {
        for (int code = 0; code <= 30; code++) {
            assertEquals(CREDITS[code], Aeth.creditCount(code), "code " + code);
        }
        assertEquals(-1, Aeth.creditCount(31));
        assertEquals(32, Aeth.creditCount(Aeth.value(10))); // golden vector 22, rc_ack_credit32
    }

    @Test
    void syndromesOfTheGoldenAcks() {
        // vectors 21..27: 0x1F, 0x0A, 0x60, 0x2C, 0x61, 0x62, 0x63
        assertSame(Aeth.Kind.ACK, Aeth.kind(0x1F));
        assertEquals(Aeth.ACK_UNLIMITED, Aeth.ack(31));
        assertEquals(0x0A, Aeth.ack(10));
        assertSame(Aeth.Kind.ACK, Aeth.kind(0x0A));
        assertEquals(10, Aeth.value(0x0A));
        assertEquals(0x60, Aeth.nak(Aeth.NakCode.PSN_SEQUENCE_ERROR));
        assertSame(Aeth.Kind.NAK, Aeth.kind(0x60));
        assertSame(Aeth.NakCode.PSN_SEQUENCE_ERROR, Aeth.NakCode.of(Aeth.value(0x60)));
        assertEquals(0x2C, Aeth.rnrNak(12));
        assertSame(Aeth.Kind.RNR_NAK, Aeth.kind(0x2C));
        assertEquals(640_000L, Aeth.rnrTimerNanos(Aeth.value(0x2C)));
        assertEquals(0x61, Aeth.nak(Aeth.NakCode.INVALID_REQUEST));
        assertEquals(0x62, Aeth.nak(Aeth.NakCode.REMOTE_ACCESS_ERROR));
        assertEquals(0x63, Aeth.nak(Aeth.NakCode.REMOTE_OPERATIONAL_ERROR));
        assertEquals(0x64, Aeth.nak(Aeth.NakCode.INVALID_RD_REQUEST));
        assertSame(Aeth.Kind.RESERVED, Aeth.kind(0x40));
        assertSame(Aeth.Kind.RESERVED, Aeth.kind(0x5F));
        assertSame(Aeth.Kind.NAK, Aeth.kind(0x7F));
        for (Aeth.NakCode c : Aeth.NakCode.values()) {
            assertSame(c, Aeth.NakCode.of(c.code()));
        }
        assertNull(Aeth.NakCode.of(5));
        assertNull(Aeth.NakCode.of(31));
        assertNull(Aeth.NakCode.of(-1));
        assertEquals(0xFFFFFF, Aeth.MSN_MASK);
    }
}
