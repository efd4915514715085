package io.jroce.wire.pcap;

import java.io.Closeable;
import java.io.IOException;

/** Byte-order helpers and error handling the capture readers share (pcap and pcapng headers are in the writer's order). */
final class CaptureBytes {
    private CaptureBytes() {
    }

    /** A 32-bit field written in the file's byte order: big-endian unless {@code swapped}. */
    static int int32(byte[] b, int off, boolean swapped) {
        int v = beInt(b, off);
        return swapped ? Integer.reverseBytes(v) : v;
    }

    /** A 16-bit field written in the file's byte order, unsigned. */
    static int u16(byte[] b, int off, boolean swapped) {
        int v = (b[off] & 0xFF) << 8 | (b[off + 1] & 0xFF);
        return swapped ? Integer.reverseBytes(v) >>> 16 : v;
    }

    static int beInt(byte[] b, int off) {
        return (b[off] & 0xFF) << 24 | (b[off + 1] & 0xFF) << 16 | (b[off + 2] & 0xFF) << 8 | (b[off + 3] & 0xFF);
    }

    static long beLong(byte[] b, int off) {
        return (beInt(b, off) & 0xFFFFFFFFL) << 32 | (beInt(b, off + 4) & 0xFFFFFFFFL);
    }

    /** Closes {@code in} after {@code failure} to open a capture; a failure to close is added to it as suppressed. */
    static void closeAfter(Closeable in, Exception failure) {
        try {
            in.close();
        } catch (IOException suppressed) {
            failure.addSuppressed(suppressed);
        }
    }
}
