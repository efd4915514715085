package io.jroce.cli.node;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** The bytes behind fill, compare and dump: patterns that two nodes (two JVMs) generate alike. */
class SessionBytesTest {

    private static byte[] bytes(SessionBytes.Source s, int n) {
        byte[] b = new byte[n];
        s.next(b, n);
        return b;
    }

    @Test
    void theRandomPatternIsTheSameStreamEverywhere() {
        // fixed forever: the example sessions carry SHA-256s of these streams
        assertArrayEquals(new byte[] {(byte) 0x95, 0x6e, (byte) 0xeb, 0x2f, 0x26, 0x32, (byte) 0xd7, (byte) 0xbd, 0x03},
                bytes(SessionBytes.pattern("random", 42), 9));
        // chunking does not change the stream
        SessionBytes.Source s = SessionBytes.pattern("random", 42);
        byte[] a = bytes(s, 3);
        byte[] b = bytes(s, 6);
        assertArrayEquals(bytes(SessionBytes.pattern("random", 42), 9), ByteBuffer.allocate(9).put(a).put(b).array());
    }

    @Test
    void sequencesAndRepeatsFillAnyLength() {
        assertArrayEquals(new byte[] {(byte) 0xfe, (byte) 0xff, 0, 1}, java.util.Arrays.copyOfRange(bytes(SessionBytes.pattern("seq", 0), 258), 254, 258));
        assertArrayEquals("abcab".getBytes(), bytes(SessionBytes.repeat("abc".getBytes()), 5));
        assertArrayEquals(new byte[4], bytes(SessionBytes.pattern("zero", 0), 4));
        assertEquals(-1, SessionBytes.pattern("seq", 0).length());
        assertEquals(3, SessionBytes.repeat("abc".getBytes()).length());
    }

    @Test
    void u64IsInHostOrderLikeTheAtomics() {
        assertEquals(0x0102030405060708L, ByteBuffer.wrap(SessionBytes.u64(0x0102030405060708L)).order(ByteOrder.nativeOrder()).getLong());
    }

    @Test
    void fillAndCompareWorkOnARangeInChunks() {
        ByteBuffer region = ByteBuffer.allocateDirect(200_000);
        SessionBytes.fill(region, 10, 150_000, SessionBytes.pattern("random", 5));
        assertNull(SessionBytes.compare(region, 10, 150_000, SessionBytes.pattern("random", 5)));
        region.put(100_000, (byte) ~region.get(100_000));
        String diff = SessionBytes.compare(region, 10, 150_000, SessionBytes.pattern("random", 5));
        assertEquals("byte at offset 100000 is 0x", diff.substring(0, 27));
        assertEquals("; 1 of 150000 bytes differ", diff.substring(diff.indexOf(';')));
        assertEquals(0, region.position(), "the caller's buffer is untouched");
    }

    @Test
    void dumpsShowHexTextAndWords() {
        ByteBuffer region = ByteBuffer.allocateDirect(32);
        region.put(0, "Hi\n\u0001".getBytes());
        assertEquals("  00000000  48 69 0a 01 00 00 00 00  00 00 00 00 00 00 00 00  |Hi..............|\n"
                + "  00000010  00 00 00                                          |...|\n", SessionBytes.hexDump(region, 0, 19));
        assertEquals("Hi\\n\\x01", SessionBytes.text(region, 0, 4));
        assertEquals(String.format("  00000008  0 (0x0000000000000000)%n"), SessionBytes.words(region, 8, 8));
        assertEquals("9d908ecfb6b256def8b49a7c504e6c889c4b0e41fe6ce3e01863dd7b61a20aa0",
                SessionBytes.hex(SessionBytes.sha256(region, 8, 24)));
    }
}
