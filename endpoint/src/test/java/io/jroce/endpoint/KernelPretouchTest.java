package io.jroce.endpoint;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

class KernelPretouchTest {
    private static final int PAGE = KernelPretouch.PAGE;

    /** A direct buffer whose first byte lies {@code skew} bytes past a page boundary, {@code length} bytes long. */
    private static ByteBuffer at(int skew, int length) {
        ByteBuffer big = ByteBuffer.allocateDirect(length + 2 * PAGE);
        long base = MemoryRegion.nativeAddress(big);
        int toBoundary = (int) ((PAGE - (base & (PAGE - 1))) & (PAGE - 1));
        return big.slice(toBoundary + skew, length);
    }

    @Test
    void readsOneByteOfEveryPageTheRegionSpans() {
        assertEquals(3, KernelPretouch.touch(at(0, 3 * PAGE)));
        assertEquals(4, KernelPretouch.touch(at(100, 3 * PAGE)));
        assertEquals(1, KernelPretouch.touch(at(PAGE - 1, 1)));
        assertEquals(2, KernelPretouch.touch(at(PAGE - 1, 2)));
        assertEquals(0, KernelPretouch.touch(at(0, 0)));
        // more pages than one gathering write takes, and a last call of one piece
        assertEquals(KernelPretouch.PIECES + 1, KernelPretouch.touch(at(0, (KernelPretouch.PIECES + 1) * PAGE)));
        assertEquals(2 * KernelPretouch.PIECES, KernelPretouch.touch(at(0, 2 * KernelPretouch.PIECES * PAGE)));
    }

    @Test
    void nextPageIsTheNextBoundaryOfTheAddress() {
        assertEquals(PAGE, KernelPretouch.nextPage(0x10000, 0));
        assertEquals(PAGE - 100, KernelPretouch.nextPage(0x10000 + 100, 0));
        assertEquals(2 * PAGE - 100, KernelPretouch.nextPage(0x10000 + 100, PAGE - 100));
        assertEquals(Integer.MAX_VALUE, KernelPretouch.nextPage(0x10000, Integer.MAX_VALUE - 10));
    }

    @Test
    void leavesTheRegionAsItWas() {
        long seed = Bytes.seed("leavesTheRegionAsItWas");
        ByteBuffer region = at(123, 5 * PAGE + 17);
        byte[] before = Bytes.random(new Random(seed), region.capacity());
        region.duplicate().put(before);
        KernelPretouch.touch(region);
        byte[] after = new byte[region.capacity()];
        region.duplicate().get(after);
        assertArrayEquals(before, after);
        assertEquals(0, region.position());
        assertEquals(region.capacity(), region.limit());
    }
}
