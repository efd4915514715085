package io.jroce.wire.pcap;

import io.netty.buffer.ByteBuf;

import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.Flushable;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Writes classic libpcap files (magic 0xa1b2c3d4, microsecond timestamps, little-endian, link type
 * Ethernet, snap length 65535), readable by tcpdump, Wireshark and every pcap library.
 *
 * <p>{@link #writeUdpIpv4} wraps a RoCEv2 UDP payload (BTH..ICRC) in Ethernet/IPv4/UDP headers exactly as
 * rdma_rxe would send it (TTL 64, TOS 0, UDP checksum 0, correct IPv4 header checksum), using the IPv4
 * Identification and flags the caller passes, i.e. the values its ICRC was computed over. An exact ICRC
 * re-check of the written frame therefore passes.
 *
 * <p>Every write method takes the record's timestamp in nanoseconds since the Unix epoch and stores it to
 * the microsecond. A recorder stamps its records with the writer's {@link #clock()} (wall-clock start,
 * monotonic advance, sub-microsecond resolution), so the records of a live capture never go backwards and
 * their spacing is real.
 *
 * <p>All write methods are synchronized, so several threads may record into one writer.
 */
public final class PcapWriter implements Closeable, Flushable {
    public static final int SNAP_LENGTH = 65535;
    private static final int ETH_HEADER = 14;
    private static final int IPV4_HEADER = 20;
    private static final int IPV6_HEADER = 40;
    private static final int UDP_HEADER = 8;

    private final OutputStream out;
    private final CaptureClock clock;
    private final byte[] recordHeader = new byte[16];
    private long frames;
    private boolean closed;

    /** Creates (or truncates) a capture file and writes the file header; its clock starts now. */
    public PcapWriter(Path file) throws IOException {
        this(Files.newOutputStream(file));
    }

    /**
     * Writes a capture to a stream, starting with the file header; its clock starts now. Closing the writer
     * closes the stream.
     */
    public PcapWriter(OutputStream stream) throws IOException {
        this(stream, CaptureClock.start());
    }

    /** Writes a capture to a stream, starting with the file header, with {@code clock} as its {@link #clock()}. */
    public PcapWriter(OutputStream stream, CaptureClock clock) throws IOException {
        this.clock = clock;
        this.out = stream instanceof BufferedOutputStream ? stream : new BufferedOutputStream(stream, 1 << 16);
        byte[] h = new byte[24];
        putLeInt(h, 0, 0xA1B2C3D4);
        putLeShort(h, 4, 2);  // version 2.4
        putLeShort(h, 6, 4);
        putLeInt(h, 8, 0);    // thiszone
        putLeInt(h, 12, 0);   // sigfigs
        putLeInt(h, 16, SNAP_LENGTH);
        putLeInt(h, 20, LinkType.ETHERNET);
        out.write(h);
    }

    /**
     * Records one IPv4/UDP datagram as an Ethernet frame.
     *
     * @param epochNanos      timestamp, nanoseconds since the Unix epoch (stored with microsecond resolution)
     * @param srcAddr         IPv4 source address as a big-endian int (192.0.2.10 = 0xC000020A)
     * @param srcPort         UDP source port
     * @param dstAddr         IPv4 destination address
     * @param dstPort         UDP destination port (4791 for RoCEv2)
     * @param ipId            IPv4 Identification (16 bits)
     * @param ipFlagsFragment IPv4 flags + fragment offset word, e.g. 0x4000 for DF
     * @param udpPayload      buffer holding the UDP payload (for RoCEv2: BTH .. ICRC); not modified
     * @param off             absolute index of the payload in {@code udpPayload}
     * @param len             payload length
     * @throws IllegalArgumentException if the datagram does not fit an IPv4 packet or the timestamp is negative
     */
    public synchronized void writeUdpIpv4(long epochNanos, int srcAddr, int srcPort, int dstAddr, int dstPort,
                                          int ipId, int ipFlagsFragment, ByteBuf udpPayload, int off, int len)
            throws IOException {
        if (len < 0 || len > 0xFFFF - IPV4_HEADER - UDP_HEADER) {
            throw new IllegalArgumentException("UDP payload length " + len + " does not fit an IPv4 packet");
        }
        byte[] f = new byte[ETH_HEADER + IPV4_HEADER + UDP_HEADER + len];
        // Ethernet: locally administered MACs 02:00:a:b:c:d derived from the IPv4 addresses
        f[0] = 0x02;
        putBeInt(f, 2, dstAddr);
        f[6] = 0x02;
        putBeInt(f, 8, srcAddr);
        putBeShort(f, 12, 0x0800);
        writeIpv4UdpHeaders(f, ETH_HEADER, srcAddr, srcPort, dstAddr, dstPort, ipId, ipFlagsFragment, len);
        udpPayload.getBytes(off, f, ETH_HEADER + IPV4_HEADER + UDP_HEADER, len);
        writeFrame(epochNanos, f, 0, f.length);
    }

    /**
     * Records one IPv6/UDP datagram as an Ethernet frame (ethertype 0x86DD). The synthesized IPv6 header has
     * traffic class 0, flow label 0 and hop limit 64, none of which the ICRC covers; the UDP checksum is the
     * correct one (RFC 8200 section 8.1 makes it mandatory over IPv6, and the kernel writes it on our sends).
     *
     * @param src16 IPv6 source address, 16 bytes
     * @param dst16 IPv6 destination address, 16 bytes
     * @throws IllegalArgumentException if an address is not 16 bytes, the datagram does not fit, or the timestamp is negative
     */
    public synchronized void writeUdpIpv6(long epochNanos, byte[] src16, int srcPort, byte[] dst16, int dstPort,
                                          ByteBuf udpPayload, int off, int len) throws IOException {
        if (src16.length != 16 || dst16.length != 16) {
            throw new IllegalArgumentException("IPv6 addresses are 16 bytes");
        }
        if (len < 0 || len > 0xFFFF - UDP_HEADER) {
            throw new IllegalArgumentException("UDP payload length " + len + " does not fit an IPv6 packet");
        }
        byte[] f = new byte[ETH_HEADER + IPV6_HEADER + UDP_HEADER + len];
        // Ethernet: locally administered MACs 02:00 + the last 4 bytes of the IPv6 addresses
        f[0] = 0x02;
        System.arraycopy(dst16, 12, f, 2, 4);
        f[6] = 0x02;
        System.arraycopy(src16, 12, f, 8, 4);
        putBeShort(f, 12, 0x86DD);
        int ip = ETH_HEADER;
        f[ip] = 0x60;                                   // version 6, traffic class 0, flow label 0
        putBeShort(f, ip + 4, UDP_HEADER + len);        // payload length: the UDP datagram
        f[ip + 6] = 17;                                 // next header: UDP
        f[ip + 7] = 64;                                 // hop limit
        System.arraycopy(src16, 0, f, ip + 8, 16);
        System.arraycopy(dst16, 0, f, ip + 24, 16);
        int udp = ip + IPV6_HEADER;
        putBeShort(f, udp, srcPort);
        putBeShort(f, udp + 2, dstPort);
        putBeShort(f, udp + 4, UDP_HEADER + len);
        udpPayload.getBytes(off, f, udp + UDP_HEADER, len);
        putBeShort(f, udp + 6, udp6Checksum(f, ip, UDP_HEADER + len));
        writeFrame(epochNanos, f, 0, f.length);
    }

    /**
     * The UDP checksum over IPv6 (RFC 8200 section 8.1 pseudo-header: addresses, upper-layer length, next
     * header 17) of the UDP datagram after the 40-byte IPv6 header at {@code ip}, its checksum field zero. A
     * result of 0 is sent as 0xFFFF (RFC 768).
     */
    static int udp6Checksum(byte[] f, int ip, int udpLength) {
        long sum = 0;
        for (int i = ip + 8; i < ip + 40; i += 2) {
            sum += (f[i] & 0xFF) << 8 | (f[i + 1] & 0xFF);
        }
        sum += udpLength;
        sum += 17;
        int udp = ip + IPV6_HEADER;
        for (int i = 0; i < udpLength; i += 2) {
            int hi = f[udp + i] & 0xFF;
            int lo = i + 1 < udpLength ? f[udp + i + 1] & 0xFF : 0;
            sum += hi << 8 | lo;
        }
        while ((sum >>> 16) != 0) {
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        int c = (int) ~sum & 0xFFFF;
        return c == 0 ? 0xFFFF : c;
    }

    /**
     * Fills in a 20-byte IPv4 header (TOS 0, TTL 64, protocol UDP, correct header checksum) and a UDP header
     * (checksum 0) at {@code off} for a UDP payload of {@code payloadLength} bytes.
     */
    static void writeIpv4UdpHeaders(byte[] f, int off, int srcAddr, int srcPort, int dstAddr, int dstPort,
                                    int ipId, int ipFlagsFragment, int payloadLength) {
        int ip = off;
        f[ip] = 0x45;          // version 4, IHL 5
        f[ip + 1] = 0;         // TOS
        putBeShort(f, ip + 2, IPV4_HEADER + UDP_HEADER + payloadLength);
        putBeShort(f, ip + 4, ipId);
        putBeShort(f, ip + 6, ipFlagsFragment);
        f[ip + 8] = 64;        // TTL
        f[ip + 9] = 17;        // UDP
        putBeShort(f, ip + 10, 0);
        putBeInt(f, ip + 12, srcAddr);
        putBeInt(f, ip + 16, dstAddr);
        putBeShort(f, ip + 10, ipv4HeaderChecksum(f, ip, IPV4_HEADER));
        int udp = ip + IPV4_HEADER;
        putBeShort(f, udp, srcPort);
        putBeShort(f, udp + 2, dstPort);
        putBeShort(f, udp + 4, UDP_HEADER + payloadLength);
        putBeShort(f, udp + 6, 0); // as rxe sends over IPv4
    }

    /**
     * The Internet checksum of an IPv4 header whose checksum field holds zero (or, on verification, the
     * value to check: then the result is 0 for a correct header).
     */
    public static int ipv4HeaderChecksum(byte[] b, int off, int headerLength) {
        int sum = 0;
        for (int i = 0; i < headerLength; i += 2) {
            sum += (b[off + i] & 0xFF) << 8 | (b[off + i + 1] & 0xFF);
        }
        while ((sum >>> 16) != 0) {
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        return ~sum & 0xFFFF;
    }

    /** Records a complete link-layer (Ethernet) frame as it is. */
    public void writeFrame(long epochNanos, byte[] frame) throws IOException {
        writeFrame(epochNanos, frame, 0, frame.length);
    }

    /**
     * Records {@code frame[off, off+len)} as one Ethernet frame; frames above the snap length are cut.
     *
     * @throws IllegalArgumentException for a negative timestamp (pcap stores unsigned seconds)
     */
    public synchronized void writeFrame(long epochNanos, byte[] frame, int off, int len) throws IOException {
        if (closed) {
            throw new IOException("pcap writer is closed");
        }
        if (epochNanos < 0) {
            throw new IllegalArgumentException("pcap cannot store a timestamp before 1970: " + epochNanos);
        }
        int incl = Math.min(len, SNAP_LENGTH);
        long sec = epochNanos / 1_000_000_000L; // unsigned 32 bits: good until 2106
        long usec = epochNanos % 1_000_000_000L / 1000L;
        putLeInt(recordHeader, 0, (int) sec);
        putLeInt(recordHeader, 4, (int) usec);
        putLeInt(recordHeader, 8, incl);
        putLeInt(recordHeader, 12, len);
        out.write(recordHeader);
        out.write(frame, off, incl);
        frames++;
    }

    /**
     * The clock to stamp this capture's records with: {@code writeUdpIpv4(writer.clock().epochNanos(), ...)}.
     * Read it under the writer's lock when several threads record, so the records are written in the order of
     * their stamps.
     */
    public CaptureClock clock() {
        return clock;
    }

    /** Frames written so far. */
    public synchronized long framesWritten() {
        return frames;
    }

    @Override
    public synchronized void flush() throws IOException {
        if (!closed) {
            out.flush();
        }
    }

    @Override
    public synchronized void close() throws IOException {
        if (!closed) {
            closed = true;
            out.close();
        }
    }

    private static void putLeInt(byte[] b, int off, int v) {
        b[off] = (byte) v;
        b[off + 1] = (byte) (v >>> 8);
        b[off + 2] = (byte) (v >>> 16);
        b[off + 3] = (byte) (v >>> 24);
    }

    private static void putLeShort(byte[] b, int off, int v) {
        b[off] = (byte) v;
        b[off + 1] = (byte) (v >>> 8);
    }

    private static void putBeInt(byte[] b, int off, int v) {
        b[off] = (byte) (v >>> 24);
        b[off + 1] = (byte) (v >>> 16);
        b[off + 2] = (byte) (v >>> 8);
        b[off + 3] = (byte) v;
    }

    private static void putBeShort(byte[] b, int off, int v) {
        b[off] = (byte) (v >>> 8);
        b[off + 1] = (byte) v;
    }
}
