package io.jroce.endpoint;

import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Test helpers for memory contents: seeded random data, canary-filled regions and a whole-region check
 * that names the first wrong byte and whether it lies in the target range or in a canary.
 */
final class Bytes {
    /** Canary bytes on each side of every target range. */
    static final int CANARY = 64;

    private Bytes() {
    }

    /**
     * The seed for a randomised test: the system property {@code jroce.seed} if set, otherwise a fresh
     * random one. Printed, so a failing run can be replayed with {@code -Djroce.seed=...}.
     */
    static long seed(String test) {
        String p = System.getProperty("jroce.seed");
        long s = p != null && !p.isBlank() ? Long.decode(p.trim()) : new SecureRandom().nextLong();
        System.out.println(test + ": seed " + s + " (replay with -Djroce.seed=" + s + ")");
        return s;
    }

    static byte[] random(Random r, int n) {
        byte[] b = new byte[n];
        r.nextBytes(b);
        return b;
    }

    /** The whole region's current bytes. */
    static byte[] image(MemoryRegion mr) {
        byte[] b = new byte[mr.length()];
        mr.buffer().get(b);
        return b;
    }

    static void write(MemoryRegion mr, int offset, byte[] data) {
        ByteBuffer b = mr.buffer();
        b.position(offset);
        b.put(data);
    }

    static byte[] read(MemoryRegion mr, int offset, int len) {
        byte[] b = new byte[len];
        ByteBuffer bb = mr.buffer();
        bb.position(offset);
        bb.get(b);
        return b;
    }

    /** Fills the whole region with random canary bytes and returns them (the expected image). */
    static byte[] fillCanary(MemoryRegion mr, Random r) {
        byte[] c = random(r, mr.length());
        write(mr, 0, c);
        return c;
    }

    /** Asserts the region equals {@code expected} byte for byte, naming the first difference. */
    static void assertRegion(String what, byte[] expected, MemoryRegion mr, int targetOff, int targetLen) {
        byte[] got = image(mr);
        assertEquals(expected.length, got.length, what + ": region length");
        for (int i = 0; i < got.length; i++) {
            if (got[i] != expected[i]) {
                String where = i < targetOff ? "canary before the target (" + (targetOff - i) + " bytes before it)"
                        : i >= targetOff + targetLen ? "canary after the target (" + (i - targetOff - targetLen) + " bytes after it)"
                        : "target byte " + (i - targetOff) + " of " + targetLen;
                fail(what + ": byte " + i + " of the region, " + where + ", is 0x" + Integer.toHexString(got[i] & 0xFF)
                        + ", expected 0x" + Integer.toHexString(expected[i] & 0xFF));
            }
        }
    }

    /** A copy of {@code image} with {@code data} placed at {@code off}. */
    static byte[] with(byte[] image, int off, byte[] data) {
        byte[] e = image.clone();
        System.arraycopy(data, 0, e, off, data.length);
        return e;
    }

    /** The region offset of the first 8-byte aligned virtual address at or after {@code from}. */
    static int alignedOffset(MemoryRegion mr, int from) {
        long va = mr.address() + from;
        return from + (int) ((8 - (va & 7)) & 7);
    }
}
