package io.jroce.wire;

import io.netty.buffer.ByteBuf;
import java.nio.ByteBuffer;
import java.util.zip.CRC32;

/**
 * RoCEv2 Invariant CRC (IBA RoCEv2 annex A17.4.1; rxe_icrc.c {@code rxe_icrc_hdr}). Plain IEEE 802.3 CRC-32,
 * i.e. {@link CRC32}, not CRC32C, over a masked pseudo-packet:
 *
 * <pre>
 * 8 x 0xFF (the pseudo LRH)
 * IPv4 header, 20 bytes: TOS, TTL and header checksum forced to all-ones; ID and flags are covered
 *   (or IPv6 header, 40 bytes: first word 6F FF FF FF, hop limit FF)
 * UDP header: checksum forced to 0xFFFF; ports and length covered
 * BTH with byte 4 (FECN, BECN, resv6a) forced to 0xFF
 * extension headers, payload, pad -- everything up to, not including, the 4 ICRC bytes
 * </pre>
 *
 * The 32-bit value goes on the wire least significant byte first. Only the pseudo-header is copied (into a
 * reusable array); the packet bytes are fed to {@link CRC32} in place, so nothing is allocated per packet.
 *
 * <p><b>Receiving without the IPv4 ID.</b> A receiver behind a UDP socket never sees the IPv4 ID or DF bit,
 * yet both are covered. {@link #verifyIpv4UnknownId} therefore solves for them (see {@link IcrcIdSolver}):
 * a datagram is accepted iff some 16-bit ID with DF set, or failing that with DF clear, yields the stored
 * ICRC.
 *
 * <p><b>Strength.</b> That accepts 2 x 2^16 of the 2^32 possible ICRC values, so a random corruption passes
 * with probability about 2 x 2^16 / 2^32 = 2^-15 (2^-16 with DF set only; 2^-32 for an exact check with a
 * known ID). Single-bit errors, computed exactly over all positions (IcrcTest re-derives this, and confirms
 * it by flipping every bit of captured packets):
 * <ul>
 *   <li>DF set only ({@code tryDfClear = false}): every single-bit error in the UDP payload (ICRC included;
 *       BTH byte 4 is masked, so flipping it is no error),
 *       is detected for every UDP payload of up to 26,744 bytes, which covers every IB path MTU and 9000-byte
 *       jumbo frames.</li>
 *   <li>With the DF-clear retry (the default): a flip of bit mask 0x08 of UDP payload byte 173 (counting the
 *       BTH's first byte as 0) or of mask 0x40 of byte 1834 is accepted, as is one particular ICRC bit at
 *       payload lengths 174-177 and 1835-1838; all other single-bit errors up to 26,744 bytes are detected.
 *       Such a corrupt packet is reported with a wrong ID and DF clear.</li>
 * </ul>
 * rxe always sets DF (testdata/rxe) and so does jroce, so a peer known to set DF is better checked
 * with {@code tryDfClear = false}.
 *
 * <p><b>A packet in pieces.</b> A sender that gathers a packet from several buffers (headers in one, the payload
 * from the registered memory it is sent from, pad and ICRC in another) computes the same value without joining
 * them: {@link #beginIpv4} or {@link #beginIpv6} takes the pseudo-header and the BTH, {@link #update(ByteBuf, int,
 * int)} and {@link #update(ByteBuffer)} continue over the bytes that follow the BTH, in order, up to (not
 * including) the ICRC, and {@link #value()} gives the result. CRC-32 is a running state, so the pieces can be cut
 * anywhere.
 *
 * <p>Not thread-safe: holds a {@link CRC32} and scratch arrays. Use one instance per thread.
 */
public final class Icrc {
    /** The IPv4 flags+fragment word with only DF set: what rxe and jroce send. */
    public static final int IPV4_DF = 0x4000;

    private static final int LRH_LENGTH = 8;
    private static final int IPV4_HEADER = 20;
    private static final int IPV6_HEADER = 40;
    private static final int UDP_HEADER = 8;
    private static final int BTH_BYTE4 = 4;
    private static final int MIN_UDP_PAYLOAD = BthView.LENGTH + RoceV2.ICRC_LENGTH;
    private static final int MAX_IPV6_UDP_PAYLOAD = 0xFFFF - UDP_HEADER;
    private static final int IP_PROTO_UDP = 17;

    /** Offsets inside the IPv4 pseudo-header array. */
    private static final int V4_IP = LRH_LENGTH;
    private static final int V4_UDP = V4_IP + IPV4_HEADER;
    private static final int V4_BTH = V4_UDP + UDP_HEADER;
    private static final int V4_LENGTH = V4_BTH + BthView.LENGTH;

    /** Offsets inside the IPv6 pseudo-header array. */
    private static final int V6_IP = LRH_LENGTH;
    private static final int V6_UDP = V6_IP + IPV6_HEADER;
    private static final int V6_BTH = V6_UDP + UDP_HEADER;
    private static final int V6_LENGTH = V6_BTH + BthView.LENGTH;

    private static final int CHUNK = 2048;

    private final CRC32 crc = new CRC32();
    private final byte[] v4 = new byte[V4_LENGTH];
    private final byte[] v6 = new byte[V6_LENGTH];
    /** Only for buffers that are neither heap- nor single-NIO-buffer-backed (e.g. composites). */
    private byte[] chunk;

    public Icrc() {
        // The constant and masked bytes are written once; per packet only the real fields are filled in.
        for (int i = 0; i < LRH_LENGTH; i++) {
            v4[i] = (byte) 0xFF;
            v6[i] = (byte) 0xFF;
        }
        v4[V4_IP] = 0x45;                    // version 4, IHL 5: covered
        v4[V4_IP + 1] = (byte) 0xFF;         // TOS (DSCP+ECN): masked, routers rewrite it
        v4[V4_IP + 8] = (byte) 0xFF;         // TTL: masked
        v4[V4_IP + 9] = IP_PROTO_UDP;        // protocol: covered
        v4[V4_IP + 10] = (byte) 0xFF;        // header checksum: masked, changes with TTL
        v4[V4_IP + 11] = (byte) 0xFF;
        v4[V4_UDP + 6] = (byte) 0xFF;        // UDP checksum: masked
        v4[V4_UDP + 7] = (byte) 0xFF;

        v6[V6_IP] = 0x6F;                    // version 6, traffic class and flow label: masked
        v6[V6_IP + 1] = (byte) 0xFF;
        v6[V6_IP + 2] = (byte) 0xFF;
        v6[V6_IP + 3] = (byte) 0xFF;
        v6[V6_IP + 6] = IP_PROTO_UDP;        // next header: covered
        v6[V6_IP + 7] = (byte) 0xFF;         // hop limit: masked
        v6[V6_UDP + 6] = (byte) 0xFF;
        v6[V6_UDP + 7] = (byte) 0xFF;
    }

    /**
     * The ICRC of a RoCEv2 packet carried in IPv4.
     *
     * @param srcAddr         IPv4 source, big-endian int (as the bytes of an {@code Inet4Address})
     * @param dstAddr         IPv4 destination
     * @param ipId            the IPv4 Identification the packet is (or will be) sent with
     * @param ipFlagsFragment the 16-bit flags+fragment-offset word, {@link #IPV4_DF} normally
     * @param buf             holds the UDP payload at [off, off+len): BTH .. ICRC inclusive
     * @return the CRC-32 value, as {@code (int) CRC32.getValue()}
     * @throws IllegalArgumentException if len is below 16 or too large for IPv4
     * @throws IndexOutOfBoundsException if the slice is not inside buf
     */
    public int computeIpv4(int srcAddr, int dstAddr, int ipId, int ipFlagsFragment, int srcPort, int dstPort,
                           ByteBuf buf, int off, int len) {
        checkSlice(buf, off, len, IcrcIdSolver.MAX_IPV4_UDP_PAYLOAD);
        return crcIpv4(srcAddr, dstAddr, ipId, ipFlagsFragment, srcPort, dstPort, buf, off, len);
    }

    /** {@link #computeIpv4} and store the result, least significant byte first, in the last 4 bytes of the slice. */
    public void writeIpv4(int srcAddr, int dstAddr, int ipId, int ipFlagsFragment, int srcPort, int dstPort,
                          ByteBuf buf, int off, int len) {
        int icrc = computeIpv4(srcAddr, dstAddr, ipId, ipFlagsFragment, srcPort, dstPort, buf, off, len);
        buf.setIntLE(off + len - RoceV2.ICRC_LENGTH, icrc);
    }

    /** The ICRC of a RoCEv2 packet carried in IPv6 (16-byte addresses); traffic class, flow label and hop limit are masked. */
    public int computeIpv6(byte[] src16, byte[] dst16, int srcPort, int dstPort, ByteBuf buf, int off, int len) {
        if (src16.length != 16 || dst16.length != 16) {
            throw new IllegalArgumentException("IPv6 addresses are 16 bytes");
        }
        checkSlice(buf, off, len, MAX_IPV6_UDP_PAYLOAD);
        System.arraycopy(src16, 0, v6, V6_IP + 8, 16);
        System.arraycopy(dst16, 0, v6, V6_IP + 24, 16);
        return crcIpv6(srcPort, dstPort, buf, off, len);
    }

    /** {@link #computeIpv6} and store the result, least significant byte first, in the last 4 bytes. */
    public void writeIpv6(byte[] src16, byte[] dst16, int srcPort, int dstPort, ByteBuf buf, int off, int len) {
        int icrc = computeIpv6(src16, dst16, srcPort, dstPort, buf, off, len);
        buf.setIntLE(off + len - RoceV2.ICRC_LENGTH, icrc);
    }

    /**
     * Starts the ICRC of an IPv4 packet given in pieces (class comment): the pseudo-header for these addresses,
     * ports, ID and flags and a UDP payload of {@code len} bytes (BTH to ICRC inclusive), and the masked BTH read at
     * {@code bthOff} of {@code head}. The {@code len - 16} bytes between the BTH and the ICRC follow through
     * {@link #update}; {@link #value()} ends it.
     *
     * @throws IllegalArgumentException if len is below 16 or too large for IPv4
     * @throws IndexOutOfBoundsException if the BTH is not inside head
     */
    public void beginIpv4(int srcAddr, int dstAddr, int ipId, int ipFlagsFragment, int srcPort, int dstPort, int len,
                          ByteBuf head, int bthOff) {
        checkLength(len, IcrcIdSolver.MAX_IPV4_UDP_PAYLOAD);
        checkSlice(head, bthOff, BthView.LENGTH);
        startIpv4(srcAddr, dstAddr, ipId, ipFlagsFragment, srcPort, dstPort, len, head, bthOff);
    }

    /** As {@link #beginIpv4}, for a packet carried in IPv6 between the 16-byte addresses. */
    public void beginIpv6(byte[] src16, byte[] dst16, int srcPort, int dstPort, int len, ByteBuf head, int bthOff) {
        if (src16.length != 16 || dst16.length != 16) {
            throw new IllegalArgumentException("IPv6 addresses are 16 bytes");
        }
        checkLength(len, MAX_IPV6_UDP_PAYLOAD);
        checkSlice(head, bthOff, BthView.LENGTH);
        System.arraycopy(src16, 0, v6, V6_IP + 8, 16);
        System.arraycopy(dst16, 0, v6, V6_IP + 24, 16);
        startIpv6(srcPort, dstPort, len, head, bthOff);
    }

    /** Continues the ICRC begun by {@link #beginIpv4} or {@link #beginIpv6} over buf[index, index+length). */
    public void update(ByteBuf buf, int index, int length) {
        checkSlice(buf, index, length);
        updateFrom(buf, index, length);
    }

    /**
     * Continues the ICRC over the bytes from {@code bytes}' position to its limit, which it consumes (the position
     * ends at the limit). A view of one's own, not shared with another thread, as its position moves.
     */
    public void update(ByteBuffer bytes) {
        crc.update(bytes);
    }

    /** The ICRC of the pieces fed since the last begin, as {@code (int) CRC32.getValue()}. */
    public int value() {
        return (int) crc.getValue();
    }

    /** The ICRC stored in the last 4 bytes of the UDP payload [off, off+len), read least significant byte first. */
    public static int wireValue(ByteBuf buf, int off, int len) {
        return buf.getIntLE(off + len - RoceV2.ICRC_LENGTH);
    }

    /** Exact check when the IPv4 header is known (raw socket, pcap, or a sender that pins ID and DF). */
    public boolean verifyIpv4(int srcAddr, int dstAddr, int ipId, int ipFlagsFragment, int srcPort, int dstPort,
                              ByteBuf buf, int off, int len) {
        if (!sliceOk(buf, off, len, IcrcIdSolver.MAX_IPV4_UDP_PAYLOAD)) {
            return false;
        }
        return crcIpv4(srcAddr, dstAddr, ipId, ipFlagsFragment, srcPort, dstPort, buf, off, len)
                == wireValue(buf, off, len);
    }

    /**
     * Exact check of a RoCEv2 packet carried in IPv6, given the 16-byte addresses: the IPv6 pseudo-header
     * masks everything a UDP socket hides (traffic class, flow label, hop limit), so a receiver behind a
     * socket checks all 32 bits. False for a slice too short or long to be a RoCEv2 packet; never throws for
     * those.
     */
    public boolean verifyIpv6(byte[] src16, byte[] dst16, int srcPort, int dstPort, ByteBuf buf, int off, int len) {
        if (src16.length != 16 || dst16.length != 16) {
            throw new IllegalArgumentException("IPv6 addresses are 16 bytes");
        }
        if (!sliceOk(buf, off, len, MAX_IPV6_UDP_PAYLOAD)) {
            return false;
        }
        System.arraycopy(src16, 0, v6, V6_IP + 8, 16);
        System.arraycopy(dst16, 0, v6, V6_IP + 24, 16);
        return crcIpv6(srcPort, dstPort, buf, off, len) == wireValue(buf, off, len);
    }

    /**
     * Exact ICRC check of a captured IP packet (IPv4 without options, or IPv6 without extension headers, then
     * UDP) starting at {@code ipOff}; {@code ipLen} may include trailing link padding. True iff the packet is
     * well-formed enough to locate the UDP payload and its ICRC matches. Never throws; fragments and
     * inconsistent length fields give false.
     */
    public boolean verifyIpPacket(ByteBuf buf, int ipOff, int ipLen) {
        if (buf == null || ipOff < 0 || ipLen < 1 || ipLen > buf.capacity() - ipOff) {
            return false;
        }
        int version = buf.getUnsignedByte(ipOff) >>> 4;
        if (version == 4) {
            return verifyIpv4Packet(buf, ipOff, ipLen);
        }
        if (version == 6) {
            return verifyIpv6Packet(buf, ipOff, ipLen);
        }
        return false;
    }

    private boolean verifyIpv4Packet(ByteBuf buf, int ip, int ipLen) {
        // IHL must be 5: RoCEv2 packets carry no IP options, and rxe's ICRC covers a fixed 20-byte header.
        if (ipLen < IPV4_HEADER + UDP_HEADER + MIN_UDP_PAYLOAD || buf.getUnsignedByte(ip) != 0x45
                || buf.getUnsignedByte(ip + 9) != IP_PROTO_UDP) {
            return false;
        }
        int totalLength = buf.getUnsignedShort(ip + 2);
        int flagsFragment = buf.getUnsignedShort(ip + 6);
        // MF set or a non-zero offset: a fragment cannot be checked on its own.
        if (totalLength > ipLen || (flagsFragment & 0x3FFF) != 0) {
            return false;
        }
        int udp = ip + IPV4_HEADER;
        int udpLength = buf.getUnsignedShort(udp + 4);
        if (udpLength != totalLength - IPV4_HEADER || udpLength < UDP_HEADER + MIN_UDP_PAYLOAD) {
            return false;
        }
        int off = udp + UDP_HEADER;
        int len = udpLength - UDP_HEADER;
        int icrc = crcIpv4(buf.getInt(ip + 12), buf.getInt(ip + 16), buf.getUnsignedShort(ip + 4), flagsFragment,
                buf.getUnsignedShort(udp), buf.getUnsignedShort(udp + 2), buf, off, len);
        return icrc == wireValue(buf, off, len);
    }

    private boolean verifyIpv6Packet(ByteBuf buf, int ip, int ipLen) {
        if (ipLen < IPV6_HEADER + UDP_HEADER + MIN_UDP_PAYLOAD || buf.getUnsignedByte(ip + 6) != IP_PROTO_UDP) {
            return false;
        }
        int payloadLength = buf.getUnsignedShort(ip + 4);
        if (payloadLength > ipLen - IPV6_HEADER) {
            return false;
        }
        int udp = ip + IPV6_HEADER;
        int udpLength = buf.getUnsignedShort(udp + 4);
        if (udpLength != payloadLength || udpLength < UDP_HEADER + MIN_UDP_PAYLOAD) {
            return false;
        }
        buf.getBytes(ip + 8, v6, V6_IP + 8, 32);
        int off = udp + UDP_HEADER;
        int len = udpLength - UDP_HEADER;
        return crcIpv6(buf.getUnsignedShort(udp), buf.getUnsignedShort(udp + 2), buf, off, len)
                == wireValue(buf, off, len);
    }

    /**
     * Receive-side check when the IPv4 header is unknown (a UDP socket hides ID and DF): finds the IPv4 ID the
     * sender's ICRC was computed over. Tries DF set first, then DF clear (both with fragment offset 0).
     * Packets sent with ID 0 and DF, as jroce sends, cost one CRC pass; any other ID adds a few dozen
     * arithmetic operations. See the class comment for the error-detection strength.
     *
     * @return the ID (0..0xFFFF), or -1 if no ID fits, i.e. the datagram is corrupt (or not RoCEv2/IPv4)
     */
    public int verifyIpv4UnknownId(int srcAddr, int dstAddr, int srcPort, int dstPort, ByteBuf buf, int off, int len) {
        return verifyIpv4UnknownId(srcAddr, dstAddr, srcPort, dstPort, buf, off, len, true);
    }

    /**
     * As {@link #verifyIpv4UnknownId(int, int, int, int, ByteBuf, int, int)}, choosing whether a sender with
     * DF clear is considered. Without that retry the check is twice as strong and detects every single-bit
     * error in packets up to 26,744 bytes (class comment).
     */
    public int verifyIpv4UnknownId(int srcAddr, int dstAddr, int srcPort, int dstPort, ByteBuf buf, int off, int len,
                                   boolean tryDfClear) {
        if (!sliceOk(buf, off, len, IcrcIdSolver.MAX_IPV4_UDP_PAYLOAD)) {
            return -1;
        }
        int withId0 = crcIpv4(srcAddr, dstAddr, 0, IPV4_DF, srcPort, dstPort, buf, off, len);
        int diff = withId0 ^ wireValue(buf, off, len);
        if (diff == 0) {
            return 0;
        }
        int w = IcrcIdSolver.unshift(len, diff);
        int id = IcrcIdSolver.solve(w);
        if (id >= 0 || !tryDfClear) {
            return id;
        }
        return IcrcIdSolver.solve(w ^ IcrcIdSolver.DF_DELTA);
    }

    private int crcIpv4(int srcAddr, int dstAddr, int ipId, int ipFlagsFragment, int srcPort, int dstPort,
                        ByteBuf buf, int off, int len) {
        startIpv4(srcAddr, dstAddr, ipId, ipFlagsFragment, srcPort, dstPort, len, buf, off);
        updateFrom(buf, off + BthView.LENGTH, len - MIN_UDP_PAYLOAD);
        return (int) crc.getValue();
    }

    /** The pseudo-header and the masked BTH (at {@code bthOff} of {@code head}) of a {@code len}-byte UDP payload. */
    private void startIpv4(int srcAddr, int dstAddr, int ipId, int ipFlagsFragment, int srcPort, int dstPort, int len,
                           ByteBuf head, int bthOff) {
        byte[] p = v4;
        putShort(p, V4_IP + 2, IPV4_HEADER + UDP_HEADER + len);
        putShort(p, V4_IP + 4, ipId);
        putShort(p, V4_IP + 6, ipFlagsFragment);
        putInt(p, V4_IP + 12, srcAddr);
        putInt(p, V4_IP + 16, dstAddr);
        putShort(p, V4_UDP, srcPort);
        putShort(p, V4_UDP + 2, dstPort);
        putShort(p, V4_UDP + 4, UDP_HEADER + len);
        head.getBytes(bthOff, p, V4_BTH, BthView.LENGTH);
        p[V4_BTH + BTH_BYTE4] = (byte) 0xFF;
        crc.reset();
        crc.update(p, 0, V4_LENGTH);
    }

    /** Expects the addresses already in {@link #v6}. */
    private int crcIpv6(int srcPort, int dstPort, ByteBuf buf, int off, int len) {
        startIpv6(srcPort, dstPort, len, buf, off);
        updateFrom(buf, off + BthView.LENGTH, len - MIN_UDP_PAYLOAD);
        return (int) crc.getValue();
    }

    /** Expects the addresses already in {@link #v6}. */
    private void startIpv6(int srcPort, int dstPort, int len, ByteBuf head, int bthOff) {
        byte[] p = v6;
        putShort(p, V6_IP + 4, UDP_HEADER + len);
        putShort(p, V6_UDP, srcPort);
        putShort(p, V6_UDP + 2, dstPort);
        putShort(p, V6_UDP + 4, UDP_HEADER + len);
        head.getBytes(bthOff, p, V6_BTH, BthView.LENGTH);
        p[V6_BTH + BTH_BYTE4] = (byte) 0xFF;
        crc.reset();
        crc.update(p, 0, V6_LENGTH);
    }

    /** Feeds buf[index, index+length) to the CRC without copying where the buffer allows it. */
    private void updateFrom(ByteBuf buf, int index, int length) {
        if (length == 0) {
            return;
        }
        if (buf.hasArray()) {
            crc.update(buf.array(), buf.arrayOffset() + index, length);
        } else if (feedFromRoot(buf, index, length)) {
            return;
        } else if (buf.nioBufferCount() == 1) {
            // internalNioBuffer reuses the buffer's own NIO view (no allocation for pooled/unpooled direct
            // buffers); CRC32.update(ByteBuffer) on a direct buffer is the same intrinsic as on an array.
            crc.update(buf.internalNioBuffer(index, length));
        } else {
            if (chunk == null) {
                chunk = new byte[CHUNK];
            }
            for (int done = 0; done < length; ) {
                int n = Math.min(CHUNK, length - done);
                buf.getBytes(index + done, chunk, 0, n);
                crc.update(chunk, 0, n);
                done += n;
            }
        }
    }

    /**
     * A slice of a direct buffer (each datagram of a batched receive is one) builds a new NIO view on every
     * {@code internalNioBuffer} call; its root buffer keeps one and reuses it. Both have memory addresses,
     * and the difference is the slice's offset in the root, so the root's view serves without allocating.
     */
    private boolean feedFromRoot(ByteBuf buf, int index, int length) {
        ByteBuf root = buf.unwrap();
        if (root == null || !buf.hasMemoryAddress() || !root.hasMemoryAddress() || root.nioBufferCount() != 1) {
            return false;
        }
        long adjustment = buf.memoryAddress() - root.memoryAddress();
        if (adjustment < 0 || adjustment + index + length > root.capacity()) {
            return false;
        }
        crc.update(root.internalNioBuffer((int) adjustment + index, length));
        return true;
    }

    private static void checkSlice(ByteBuf buf, int off, int len, int maxLen) {
        if (len < MIN_UDP_PAYLOAD || len > maxLen) {
            throw new IllegalArgumentException("UDP payload length " + len + " outside " + MIN_UDP_PAYLOAD + ".." + maxLen);
        }
        if (off < 0 || len > buf.capacity() - off) {
            throw new IndexOutOfBoundsException("slice " + off + "+" + len + " outside buffer of capacity " + buf.capacity());
        }
    }

    private static void checkLength(int len, int maxLen) {
        if (len < MIN_UDP_PAYLOAD || len > maxLen) {
            throw new IllegalArgumentException("UDP payload length " + len + " outside " + MIN_UDP_PAYLOAD + ".." + maxLen);
        }
    }

    private static void checkSlice(ByteBuf buf, int off, int len) {
        if (off < 0 || len < 0 || len > buf.capacity() - off) {
            throw new IndexOutOfBoundsException("slice " + off + "+" + len + " outside buffer of capacity " + buf.capacity());
        }
    }

    private static boolean sliceOk(ByteBuf buf, int off, int len, int maxLen) {
        return buf != null && len >= MIN_UDP_PAYLOAD && len <= maxLen && off >= 0 && len <= buf.capacity() - off;
    }

    private static void putShort(byte[] a, int i, int v) {
        a[i] = (byte) (v >>> 8);
        a[i + 1] = (byte) v;
    }

    private static void putInt(byte[] a, int i, int v) {
        a[i] = (byte) (v >>> 24);
        a[i + 1] = (byte) (v >>> 16);
        a[i + 2] = (byte) (v >>> 8);
        a[i + 3] = (byte) v;
    }
}
