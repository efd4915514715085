package io.jroce.wire.pcap;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads pcapng files (the default format of Wireshark, tshark and dumpcap; IETF draft "PCAP Next Generation
 * (pcapng) Capture File Format"): Section Header, Interface Description, Enhanced Packet, Simple Packet and
 * the obsolete Packet block; every other block type is skipped unread. Each section has its own byte order
 * and interface table, so one file may mix link types: every frame carries the link type of its interface.
 * Timestamps honour {@code if_tsresol} (decimal or binary) and {@code if_tsoffset}; a Simple Packet block
 * has no timestamp and gets the previous packet's.
 *
 * <p>Memory is bounded by one frame: skipped blocks and packet options are read past, not loaded. A block
 * whose length is not a multiple of 4, below 12, above {@value #MAX_BLOCK} bytes, smaller than what it
 * declares inside, or different in its trailing copy, makes {@link #next()} throw an {@link IOException}
 * with a one-line message. Not thread-safe.
 */
public final class PcapngReader implements CaptureReader {
    /** Section Header Block type; a palindrome in bytes, so it reads the same in both byte orders. */
    static final int SHB = 0x0A0D0D0A;
    static final int IDB = 1;
    static final int OBSOLETE_PB = 2;
    static final int SPB = 3;
    static final int EPB = 6;
    static final int BYTE_ORDER_MAGIC = 0x1A2B3C4D;
    /** Upper bound for one block: a 64 MiB frame plus headers; larger values mean a corrupt file. */
    static final int MAX_BLOCK = 64 * 1024 * 1024 + 1024;
    /** Upper bound for a Section Header or Interface Description block, whose bodies are loaded. */
    private static final int MAX_DESCRIPTION_BLOCK = 1024 * 1024;
    /** Upper bound for interfaces per section; a real capture has a handful. */
    private static final int MAX_INTERFACES = 1 << 16;
    private static final int OPT_ENDOFOPT = 0;
    private static final int OPT_IF_TSRESOL = 9;
    private static final int OPT_IF_TSOFFSET = 14;

    private final InputStream in;
    private final String name;
    private final byte[] header = new byte[28];
    private final List<Interface> interfaces = new ArrayList<>();
    private boolean swapped;
    private int versionMajor;
    private int versionMinor;
    private int sections;
    private long frames;
    private long blockOffset;
    private long lastEpochNanos;
    private boolean eof;

    /** One Interface Description block: link type, snap length and how to read its timestamps. */
    private record Interface(int linkType, int snapLength, boolean binaryResolution, int resolutionExponent,
                             long offsetSeconds) {
        long toEpochNanos(long ts) {
            long nanos;
            int e = resolutionExponent;
            if (binaryResolution) {
                if (e == 0) {
                    nanos = ts * 1_000_000_000L;
                } else if (e >= 64) {
                    nanos = 0;
                } else {
                    long sec = ts >>> e;
                    long frac = ts & ((1L << e) - 1);
                    // frac * 1e9 / 2^e without overflow: a 128-bit product shifted right by e
                    long lo = frac * 1_000_000_000L;
                    long hi = Math.multiplyHigh(frac, 1_000_000_000L);
                    nanos = sec * 1_000_000_000L + ((lo >>> e) | (hi << (64 - e)));
                }
            } else if (e <= 9) {
                nanos = ts * POW10[9 - e];
            } else if (e - 9 <= 18) {
                nanos = Long.divideUnsigned(ts, POW10[e - 9]);
            } else {
                nanos = 0;
            }
            return nanos + offsetSeconds * 1_000_000_000L;
        }
    }

    private static final long[] POW10 = new long[19];

    static {
        POW10[0] = 1;
        for (int i = 1; i < POW10.length; i++) {
            POW10[i] = POW10[i - 1] * 10;
        }
    }

    /** Opens a pcapng file. */
    public PcapngReader(Path file) throws IOException {
        this(Files.newInputStream(file), file.toString());
    }

    /**
     * Reads pcapng from a stream, starting with its first Section Header block; {@code name} is used in error
     * messages. Closing the reader closes the stream.
     */
    public PcapngReader(InputStream stream, String name) throws IOException {
        this.in = stream instanceof BufferedInputStream ? stream : new BufferedInputStream(stream, 1 << 16);
        this.name = name;
        try {
            int n = readUpTo(header, 0, 8);
            if (n < 4 || CaptureBytes.beInt(header, 0) != SHB) {
                throw new IOException(name + ": not a pcapng file (no Section Header block at the start)");
            }
            if (n < 8) {
                throw new IOException(name + ": truncated pcapng Section Header block (" + n + " bytes)");
            }
            readSectionHeader();
        } catch (IOException | RuntimeException e) {
            CaptureBytes.closeAfter(in, e);
            throw e;
        }
    }

    /** Whether the first four bytes of a file are a pcapng Section Header block type. */
    public static boolean isPcapng(byte[] firstBytes) {
        return firstBytes.length >= 4 && CaptureBytes.beInt(firstBytes, 0) == SHB;
    }

    @Override
    public PcapFrame next() throws IOException {
        while (!eof) {
            long start = blockOffset;
            int n = readUpTo(header, 0, 8);
            if (n == 0) {
                eof = true;
                return null;
            }
            if (n < 8) {
                throw fail("truncated block header at offset " + start + " (" + n + " of 8 bytes)");
            }
            int type = CaptureBytes.beInt(header, 0);
            if (type == SHB) {
                readSectionHeader();
                continue;
            }
            type = CaptureBytes.int32(header, 0, swapped);
            int length = blockLength(CaptureBytes.int32(header, 4, swapped), start);
            switch (type) {
                case IDB:
                    readInterface(length, start);
                    break;
                case EPB:
                    return readEnhancedPacket(length, start);
                case SPB:
                    return readSimplePacket(length, start);
                case OBSOLETE_PB:
                    return readObsoletePacket(length, start);
                default:
                    skip(length - 12L, start);
                    checkTrailer(length, start);
                    break;
            }
        }
        return null;
    }

    private int blockLength(int length, long start) throws IOException {
        if (length < 12 || length > MAX_BLOCK || (length & 3) != 0) {
            throw fail("corrupt block length " + Integer.toUnsignedString(length) + " at offset " + start);
        }
        return length;
    }

    /** Called with the block type and length in {@link #header}; reads the rest of a Section Header block. */
    private void readSectionHeader() throws IOException {
        long start = blockOffset - 8;
        readFully(header, 8, 4, "Section Header block", start);
        int magic = CaptureBytes.beInt(header, 8);
        if (magic == BYTE_ORDER_MAGIC) {
            swapped = false;
        } else if (Integer.reverseBytes(magic) == BYTE_ORDER_MAGIC) {
            swapped = true;
        } else {
            throw fail(String.format("bad byte-order magic 0x%08x in the Section Header block at offset %d", magic, start));
        }
        int length = blockLength(CaptureBytes.int32(header, 4, swapped), start);
        if (length < 28 || length > MAX_DESCRIPTION_BLOCK) {
            throw fail("implausible Section Header block length " + length + " at offset " + start);
        }
        readFully(header, 12, 4, "Section Header block", start);
        int major = CaptureBytes.u16(header, 12, swapped);
        int minor = CaptureBytes.u16(header, 14, swapped);
        if (major != 1) {
            throw fail("unsupported pcapng version " + major + "." + minor + " at offset " + start);
        }
        versionMajor = major;
        versionMinor = minor;
        skip(length - 16L - 4, start); // section length and options
        checkTrailer(length, start);
        interfaces.clear(); // interface ids count from 0 in every section
        sections++;
    }

    private void readInterface(int length, long start) throws IOException {
        if (length < 20 || length > MAX_DESCRIPTION_BLOCK) {
            throw fail("implausible Interface Description block length " + length + " at offset " + start);
        }
        if (interfaces.size() >= MAX_INTERFACES) {
            throw fail("more than " + MAX_INTERFACES + " interfaces in one section at offset " + start);
        }
        byte[] body = new byte[length - 12];
        readFully(body, 0, body.length, "Interface Description block", start);
        int linkType = CaptureBytes.u16(body, 0, swapped);
        int snapLength = CaptureBytes.int32(body, 4, swapped);
        boolean binary = false;
        int exponent = 6; // default: microseconds
        long offsetSeconds = 0;
        // options: code, length, value padded to 4; a malformed list ends the parsing, not the file
        int p = 8;
        while (p + 4 <= body.length) {
            int code = CaptureBytes.u16(body, p, swapped);
            int len = CaptureBytes.u16(body, p + 2, swapped);
            if (code == OPT_ENDOFOPT || p + 4 + len > body.length) {
                break;
            }
            if (code == OPT_IF_TSRESOL && len == 1) {
                int v = body[p + 4] & 0xFF;
                binary = (v & 0x80) != 0;
                exponent = v & 0x7F;
            } else if (code == OPT_IF_TSOFFSET && len == 8) {
                offsetSeconds = swapped
                        ? Long.reverseBytes(CaptureBytes.beLong(body, p + 4))
                        : CaptureBytes.beLong(body, p + 4);
            }
            p += 4 + ((len + 3) & ~3);
        }
        checkTrailer(length, start);
        interfaces.add(new Interface(linkType, snapLength, binary, exponent, offsetSeconds));
    }

    private PcapFrame readEnhancedPacket(int length, long start) throws IOException {
        if (length < 32) {
            throw fail("Enhanced Packet block too short (" + length + " bytes) at offset " + start);
        }
        readFully(header, 8, 20, "Enhanced Packet block", start);
        Interface itf = iface(CaptureBytes.int32(header, 8, swapped), start);
        long ts = (CaptureBytes.int32(header, 12, swapped) & 0xFFFFFFFFL) << 32 | (CaptureBytes.int32(header, 16, swapped) & 0xFFFFFFFFL);
        return readPacketData(length, start, 32, itf, itf.toEpochNanos(ts), CaptureBytes.int32(header, 20, swapped), CaptureBytes.int32(header, 24, swapped));
    }

    private PcapFrame readObsoletePacket(int length, long start) throws IOException {
        if (length < 32) {
            throw fail("Packet block too short (" + length + " bytes) at offset " + start);
        }
        readFully(header, 8, 20, "Packet block", start);
        Interface itf = iface(CaptureBytes.u16(header, 8, swapped), start);
        long ts = (CaptureBytes.int32(header, 12, swapped) & 0xFFFFFFFFL) << 32 | (CaptureBytes.int32(header, 16, swapped) & 0xFFFFFFFFL);
        return readPacketData(length, start, 32, itf, itf.toEpochNanos(ts), CaptureBytes.int32(header, 20, swapped), CaptureBytes.int32(header, 24, swapped));
    }

    private PcapFrame readSimplePacket(int length, long start) throws IOException {
        if (length < 16) {
            throw fail("Simple Packet block too short (" + length + " bytes) at offset " + start);
        }
        readFully(header, 8, 4, "Simple Packet block", start);
        Interface itf = iface(0, start);
        int orig = CaptureBytes.int32(header, 8, swapped);
        // no captured-length field: the frame is cut at the snap length of interface 0 and fills the block
        long incl = Math.min(orig & 0xFFFFFFFFL, length - 16L);
        if (itf.snapLength() > 0) {
            incl = Math.min(incl, itf.snapLength() & 0xFFFFFFFFL);
        }
        return readPacketData(length, start, 16, itf, lastEpochNanos, (int) incl, orig);
    }

    private PcapFrame readPacketData(int length, long start, int fixed, Interface itf, long epochNanos,
                                     int incl, int orig) throws IOException {
        if (incl < 0 || incl > length - fixed) {
            throw fail("captured length " + Integer.toUnsignedString(incl) + " exceeds the packet block of "
                    + length + " bytes at offset " + start);
        }
        byte[] data = new byte[incl];
        readFully(data, 0, incl, "packet data", start);
        skip((long) length - fixed - incl, start); // padding and options
        checkTrailer(length, start);
        frames++;
        lastEpochNanos = epochNanos;
        int originalLength = orig < 0 ? Integer.MAX_VALUE : orig;
        return PcapFrame.parse(frames, epochNanos, itf.linkType(), data, originalLength);
    }

    private Interface iface(int id, long start) throws IOException {
        if (id < 0 || id >= interfaces.size()) {
            throw fail("packet block at offset " + start + " refers to interface " + Integer.toUnsignedString(id)
                    + " but the section describes " + interfaces.size());
        }
        return interfaces.get(id);
    }

    private void checkTrailer(int length, long start) throws IOException {
        readFully(header, 0, 4, "block trailer", start);
        int trailer = CaptureBytes.int32(header, 0, swapped);
        if (trailer != length) {
            throw fail("block at offset " + start + " has length " + length + " but its trailing copy says "
                    + Integer.toUnsignedString(trailer));
        }
    }

    private IOException fail(String why) {
        eof = true;
        return new IOException(name + ": " + why);
    }

    // ------------------------------------------------------------------------------------------ accessors

    @Override
    public long framesRead() {
        return frames;
    }

    @Override
    public String format() {
        return "pcapng";
    }

    /** Interfaces described so far in the current section. */
    public int interfaceCount() {
        return interfaces.size();
    }

    /** Link type of interface {@code id} of the current section. */
    public int linkType(int id) {
        return interfaces.get(id).linkType();
    }

    /** Section Header blocks read so far. */
    public int sections() {
        return sections;
    }

    /** True when the current section is little-endian. */
    public boolean isLittleEndian() {
        return swapped;
    }

    public int versionMajor() {
        return versionMajor;
    }

    public int versionMinor() {
        return versionMinor;
    }

    @Override
    public void close() throws IOException {
        eof = true;
        in.close();
    }

    // ------------------------------------------------------------------------------------------ bytes

    private void readFully(byte[] b, int off, int len, String what, long start) throws IOException {
        int n = readUpTo(b, off, len);
        if (n < len) {
            throw fail("file ends inside the " + what + " of the block at offset " + start
                    + " (" + n + " of " + len + " bytes)");
        }
    }

    private void skip(long n, long start) throws IOException {
        long left = n;
        while (left > 0) {
            long s = in.skip(left);
            if (s <= 0) {
                if (in.read() < 0) {
                    throw fail("file ends inside the block at offset " + start);
                }
                s = 1;
            }
            left -= s;
            blockOffset += s;
        }
    }

    private int readUpTo(byte[] b, int off, int len) throws IOException {
        int total = in.readNBytes(b, off, len);
        blockOffset += total;
        return total;
    }

}
