package io.jroce.wire.pcap;

import java.io.BufferedInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads classic libpcap files: both byte orders, microsecond (0xa1b2c3d4) and nanosecond (0xa1b23c4d)
 * timestamps, and the link types listed in {@link LinkType}. pcapng is recognised and refused with a hint:
 * {@link CaptureReader#open} reads both formats.
 *
 * <p>A file that is not pcap, or ends inside a record, makes the constructor or {@link #next()} throw an
 * {@link IOException} with a one-line message. A malformed frame inside a valid file never throws: see
 * {@link PcapFrame#anomaly()}. Not thread-safe.
 */
public final class PcapReader implements CaptureReader {
    private static final int MAGIC_MICROS = 0xA1B2C3D4;
    private static final int MAGIC_NANOS = 0xA1B23C4D;
    private static final int PCAPNG_SHB = 0x0A0D0D0A;
    /** Upper bound for one record; larger values mean a corrupt file, not a real frame. */
    private static final int MAX_RECORD = 64 * 1024 * 1024;

    private final InputStream in;
    private final String name;
    private final boolean swapped;
    private final boolean nanos;
    private final int versionMajor;
    private final int versionMinor;
    private final int snapLength;
    private final int linkType;
    private final byte[] recordHeader = new byte[16];
    private long frames;
    private boolean eof;

    /** Opens a capture file. */
    public PcapReader(Path file) throws IOException {
        this(Files.newInputStream(file), file.toString());
    }

    /** Reads a capture from a stream; {@code name} is used in error messages. Closing the reader closes the stream. */
    public PcapReader(InputStream stream, String name) throws IOException {
        this.in = stream instanceof BufferedInputStream ? stream : new BufferedInputStream(stream, 1 << 16);
        this.name = name;
        try {
            byte[] h = new byte[24];
            int n = readUpTo(h, 0, 24);
            if (n == 0) {
                throw new IOException(name + ": not a pcap file (empty)");
            }
            if (n >= 4) {
                int be = CaptureBytes.beInt(h, 0);
                if (be == PCAPNG_SHB) {
                    throw new IOException(name + ": pcapng, not classic pcap (open it with CaptureReader.open)");
                }
            }
            int magic = n >= 4 ? CaptureBytes.beInt(h, 0) : 0;
            if (magic == MAGIC_MICROS || magic == MAGIC_NANOS) {
                swapped = false;
            } else if (Integer.reverseBytes(magic) == MAGIC_MICROS || Integer.reverseBytes(magic) == MAGIC_NANOS) {
                swapped = true;
                magic = Integer.reverseBytes(magic);
            } else {
                throw new IOException(String.format("%s: not a pcap file (%s)", name,
                        n < 4 ? n + " bytes" : String.format("magic 0x%08x", magic)));
            }
            if (n < 24) {
                throw new IOException(name + ": truncated pcap file header (" + n + " of 24 bytes)");
            }
            nanos = magic == MAGIC_NANOS;
            versionMajor = CaptureBytes.u16(h, 4, swapped);
            versionMinor = CaptureBytes.u16(h, 6, swapped);
            if (versionMajor != 2) {
                throw new IOException(name + ": unsupported pcap version " + versionMajor + "." + versionMinor);
            }
            snapLength = CaptureBytes.int32(h, 16, swapped);
            // the upper bits of the link-type word may carry FCS information (pcap spec); the type is the low 16
            linkType = CaptureBytes.int32(h, 20, swapped) & 0xFFFF;
        } catch (IOException | RuntimeException e) {
            CaptureBytes.closeAfter(in, e);
            throw e;
        }
    }

    /** Reads every frame of a file. */
    public static List<PcapFrame> readAll(Path file) throws IOException {
        try (PcapReader r = new PcapReader(file)) {
            List<PcapFrame> out = new ArrayList<>();
            for (PcapFrame f; (f = r.next()) != null; ) {
                out.add(f);
            }
            return out;
        }
    }

    /**
     * The next frame, or null at the end of the file.
     *
     * @throws IOException if the file ends inside a record or a record header is implausible
     */
    @Override
    public PcapFrame next() throws IOException {
        if (eof) {
            return null;
        }
        long number = frames + 1;
        int n = readUpTo(recordHeader, 0, 16);
        if (n == 0) {
            eof = true;
            return null;
        }
        if (n < 16) {
            eof = true;
            throw new IOException(name + ": truncated record header of frame " + number + " (" + n + " of 16 bytes)");
        }
        long sec = CaptureBytes.int32(recordHeader, 0, swapped) & 0xFFFFFFFFL;
        long frac = CaptureBytes.int32(recordHeader, 4, swapped) & 0xFFFFFFFFL;
        int incl = CaptureBytes.int32(recordHeader, 8, swapped);
        int orig = CaptureBytes.int32(recordHeader, 12, swapped);
        if (incl < 0 || incl > MAX_RECORD) {
            eof = true;
            throw new IOException(name + ": corrupt record header of frame " + number
                    + " (captured length " + Integer.toUnsignedString(incl) + ")");
        }
        byte[] data = new byte[incl];
        int got = readUpTo(data, 0, incl);
        if (got < incl) {
            eof = true;
            throw new IOException(name + ": truncated record data of frame " + number + " (" + got + " of " + incl + " bytes)");
        }
        frames = number;
        long epochNanos = sec * 1_000_000_000L + (nanos ? frac : frac * 1000L);
        int originalLength = orig < 0 ? Integer.MAX_VALUE : orig;
        return PcapFrame.parse(number, epochNanos, linkType, data, originalLength);
    }

    /** The file's link type ({@link LinkType}). */
    public int linkType() {
        return linkType;
    }

    public int snapLength() {
        return snapLength;
    }

    /** True for the 0xa1b23c4d variant. */
    public boolean isNanosecond() {
        return nanos;
    }

    /** True when the file's header fields are little-endian (written on a little-endian host). */
    public boolean isLittleEndian() {
        return swapped;
    }

    public int versionMajor() {
        return versionMajor;
    }

    public int versionMinor() {
        return versionMinor;
    }

    /** Frames returned so far. */
    @Override
    public long framesRead() {
        return frames;
    }

    @Override
    public String format() {
        return "pcap";
    }

    @Override
    public void close() throws IOException {
        eof = true;
        in.close();
    }

    private int readUpTo(byte[] b, int off, int len) throws IOException {
        int total = 0;
        while (total < len) {
            int r;
            try {
                r = in.read(b, off + total, len - total);
            } catch (EOFException e) {
                break;
            }
            if (r < 0) {
                break;
            }
            total += r;
        }
        return total;
    }

}
