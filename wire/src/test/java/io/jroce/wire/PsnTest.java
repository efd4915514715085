package io.jroce.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

class PsnTest {
    @Test
    void wrapAround() {
        assertEquals(0, Psn.next(0xFFFFFF));
        assertEquals(0xFFFFFF, Psn.next(0xFFFFFE));
        assertEquals(0x000001, Psn.add(0xFFFFFE, 3));
        assertEquals(0xFFFFFF, Psn.add(0, -1));
        assertEquals(0xFFFFFE, Psn.add(0x000001, -3));
        assertEquals(3, Psn.distance(0xFFFFFE, 0x000001));
        assertEquals(0xFFFFFD, Psn.distance(0x000001, 0xFFFFFE));
        assertEquals(0, Psn.distance(0x123456, 0x123456));
        // golden vectors 3-5 cross the wrap: 0xFFFFFE, 0xFFFFFF, 0x000000
        assertTrue(Psn.isAfter(0x000000, 0xFFFFFF));
        assertTrue(Psn.isAfter(0xFFFFFF, 0xFFFFFE));
        assertTrue(Psn.isBefore(0xFFFFFE, 0x000000));
        assertEquals(2, Psn.distance(0xFFFFFE, 0x000000));
    }

    @Test
    void halfWindowBoundaries() {
        for (int a : new int[] {0, 1, 0x7FFFFF, 0x800000, 0xFFFFFF, 0xABCDEF}) {
            int nearEdge = Psn.add(a, Psn.HALF_WINDOW - 1);
            assertTrue(Psn.compare(a, nearEdge) < 0, "a is before a+2^23-1");
            assertTrue(Psn.compare(nearEdge, a) > 0, "a+2^23-1 is after a");
            assertTrue(Psn.isAfter(nearEdge, a));
            assertTrue(Psn.isBefore(a, nearEdge));

            int behind = Psn.add(a, -(Psn.HALF_WINDOW - 1));
            assertTrue(Psn.isBefore(behind, a));
            assertTrue(Psn.isAfter(a, behind));

            // exactly half a window apart: rxe's psn_compare calls each one "before" the other
            int opposite = Psn.add(a, Psn.HALF_WINDOW);
            assertTrue(Psn.compare(a, opposite) < 0);
            assertTrue(Psn.compare(opposite, a) < 0);
            assertEquals(Integer.MIN_VALUE, Psn.compare(a, opposite));

            assertEquals(0, Psn.compare(a, a));
            assertTrue(Psn.isAtOrBefore(a, a));
            assertTrue(Psn.isAtOrAfter(a, a));
            assertFalse(Psn.isAfter(a, a));
            assertFalse(Psn.isBefore(a, a));
            assertTrue(Psn.isAtOrAfter(Psn.next(a), a));
            assertFalse(Psn.isAtOrBefore(Psn.next(a), a));
            assertTrue(Psn.isAtOrBefore(a, Psn.next(a)));
        }
    }

    @Test
    void bitsAbove24AreIgnored() {
        assertEquals(0, Psn.compare(0x1000005, 5));
        assertEquals(0, Psn.compare(0xFF000000, 0));
        assertTrue(Psn.isAfter(0x7F000001, 0));
    }

    @Test
    void compareAgreesWithDistance() {
        Random rnd = new Random(Seeds.seed());
        for (int i = 0; i < 100_000; i++) {
            int a = rnd.nextInt() & Psn.MASK;
            int b = rnd.nextInt() & Psn.MASK;
            int d = Psn.distance(b, a); // steps from b forward to a
            int c = Psn.compare(a, b);
            if (d == 0) {
                assertEquals(0, c);
            } else if (d < Psn.HALF_WINDOW) {
                assertTrue(c > 0, a + " vs " + b);
            } else {
                assertTrue(c < 0, a + " vs " + b);
            }
            assertEquals(a, Psn.add(b, d));
        }
    }
}
