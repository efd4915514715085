package io.jroce.endpoint;

import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class QpnAllocatorTest {
    @Test
    void handsOutConsecutiveNumbersFromItsStart() {
        QpnAllocator a = new QpnAllocator(0x123456);
        assertEquals(0x123456, a.start());
        assertEquals(0x123456, a.next());
        assertEquals(0x123457, a.next());
        assertEquals(0x123458, a.next());
    }

    @Test
    void wrapsPastTheTopToTheFirstOrdinaryNumberNeverToTheSpecialQps() {
        QpnAllocator a = new QpnAllocator(QpnAllocator.LAST - 1);
        assertEquals(0xFFFFFE, a.next());
        assertEquals(0xFFFFFF, a.next());
        assertEquals(0x11, a.next());
        // a start below the ordinary range wraps into it rather than handing out 0 or 1
        for (int s : new int[] {0, 1, 0x10, -5, Integer.MAX_VALUE}) {
            int q = new QpnAllocator(s).next();
            assertTrue(q >= 0x11 && q <= 0xFFFFFF, "start " + s + " gave 0x" + Integer.toHexString(q));
        }
    }

    @Test
    void aNumberComesBackOnlyAfterTheWholeSpace() {
        QpnAllocator a = new QpnAllocator(0x11);
        int first = a.next();
        int n = 1;
        while (a.next() != first) n++;
        assertEquals(0xFFFFFF - 0x11 + 1, n);
    }

    @Test
    void rewindRepeatsFromTheStart() {
        QpnAllocator a = new QpnAllocator(0x500);
        a.next();
        a.next();
        a.rewind();
        assertEquals(0x500, a.next());
    }

    /**
     * The property a restart relies on: two allocators (two lives of a process) do not begin with the same
     * numbers. With random starts over 2^24 numbers, 200 pairs of 16 QPs overlap with probability about
     * 200 * 32 / 2^24 = 0.0004: a failure here means the starts are not random.
     */
    @Test
    void twoLivesRarelyShareANumber() {
        int overlaps = 0;
        Set<Integer> starts = new HashSet<>();
        for (int pair = 0; pair < 200; pair++) {
            QpnAllocator before = QpnAllocator.spread();
            QpnAllocator after = QpnAllocator.spread();
            starts.add(before.start());
            Set<Integer> old = new HashSet<>();
            for (int i = 0; i < 16; i++) old.add(before.next());
            for (int i = 0; i < 16; i++) if (old.contains(after.next())) overlaps++;
        }
        assertTrue(overlaps <= 16, overlaps + " numbers reused across lives");
        assertTrue(starts.size() > 190, "starts are spread: " + starts.size() + " distinct of 200");
        assertFalse(starts.contains(0) || starts.contains(1));
    }
}
