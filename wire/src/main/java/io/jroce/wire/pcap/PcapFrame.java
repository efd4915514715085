package io.jroce.wire.pcap;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;

/**
 * One record of a pcap file: the captured bytes plus, when the frame carries an IPv4/IPv6 packet (and a
 * UDP datagram), the offsets and header values found in it.
 *
 * <p>Parsing never throws: a frame that is not IP, or whose headers are malformed or cut off by the
 * capture's snap length, simply reports {@link #ipOffset()} or {@link #udpOffset()} as -1 and says why in
 * {@link #anomaly()}. All offsets index {@link #data()}. The IP packet occupies
 * {@code [ipOffset, ipOffset + ipLength)} when {@link #isTruncated()} is false (Ethernet padding after the
 * IP packet is not included in {@link #ipLength()}).
 */
public final class PcapFrame {
    private static final int ETHERTYPE_IPV4 = 0x0800;
    private static final int ETHERTYPE_IPV6 = 0x86DD;
    private static final int IPPROTO_UDP = 17;

    private final long frameNumber;
    private final long epochNanos;
    private final int linkType;
    private final byte[] data;
    private final int originalLength;

    private int ipOffset = -1;
    private int ipVersion;
    private int ipHeaderLength;
    private int ipLength;
    private InetAddress srcAddress;
    private InetAddress dstAddress;
    private int protocol = -1;
    private int ipId = -1;
    private int ipFlagsFragment = -1;
    private boolean fragment;

    private int udpOffset = -1;
    private int srcPort = -1;
    private int dstPort = -1;
    private int udpLength = -1;
    private int udpPayloadOffset = -1;
    private int udpPayloadLength = -1;

    private boolean truncated;
    private String anomaly;

    private PcapFrame(long frameNumber, long epochNanos, int linkType, byte[] data, int originalLength) {
        this.frameNumber = frameNumber;
        this.epochNanos = epochNanos;
        this.linkType = linkType;
        this.data = data;
        this.originalLength = originalLength;
    }

    /**
     * Parses a captured frame. {@code data} is kept (not copied); {@code originalLength} is the length of the
     * frame on the wire (larger than {@code data.length} when the capture truncated it).
     */
    public static PcapFrame parse(long frameNumber, long epochNanos, int linkType, byte[] data, int originalLength) {
        PcapFrame f = new PcapFrame(frameNumber, epochNanos, linkType, data, Math.max(originalLength, data.length));
        try {
            f.parseLinkLayer();
        } catch (RuntimeException e) {
            // defensive: a parser bug must not make a whole capture unreadable
            f.ipOffset = -1;
            f.udpOffset = -1;
            f.anomaly = "unparseable frame (" + e + ")";
        }
        return f;
    }

    // ------------------------------------------------------------------------------------------ parsing

    private int u8(int i) {
        return data[i] & 0xFF;
    }

    private int u16(int i) {
        return (data[i] & 0xFF) << 8 | (data[i + 1] & 0xFF);
    }

    private int len() {
        return data.length;
    }

    private boolean cutByCapture() {
        return data.length < originalLength;
    }

    /** Records why parsing stopped; {@code short_} = the data ran out. */
    private void stop(boolean short_, String why) {
        if (short_ && cutByCapture()) {
            truncated = true;
            anomaly = "truncated capture (" + data.length + " of " + originalLength + " bytes): " + why;
        } else {
            anomaly = why;
        }
    }

    private void parseLinkLayer() {
        int off;
        int type;
        switch (linkType) {
            case LinkType.ETHERNET:
                if (len() < 14) {
                    stop(true, "frame shorter than an Ethernet header");
                    return;
                }
                type = u16(12);
                off = 14;
                break;
            case LinkType.LINUX_SLL:
                if (len() < 16) {
                    stop(true, "frame shorter than a Linux cooked (SLL) header");
                    return;
                }
                type = u16(14);
                off = 16;
                break;
            case LinkType.LINUX_SLL2:
                if (len() < 20) {
                    stop(true, "frame shorter than a Linux cooked v2 (SLL2) header");
                    return;
                }
                type = u16(0);
                off = 20;
                break;
            case LinkType.RAW:
            case LinkType.DLT_RAW_12:
            case LinkType.DLT_RAW_14:
                if (len() < 1) {
                    stop(true, "empty frame");
                    return;
                }
                parseIp(0, versionToEthertype(u8(0) >>> 4));
                return;
            case LinkType.IPV4:
                parseIp(0, ETHERTYPE_IPV4);
                return;
            case LinkType.IPV6:
                parseIp(0, ETHERTYPE_IPV6);
                return;
            case LinkType.NULL:
            case LinkType.LOOP: {
                if (len() < 4) {
                    stop(true, "frame shorter than a loopback header");
                    return;
                }
                int be = (u16(0) << 16) | u16(2);
                int le = Integer.reverseBytes(be);
                // NULL uses the capturing host's byte order: the family is small in the right order
                int af = linkType == LinkType.LOOP ? be : (Integer.compareUnsigned(be, le) <= 0 ? be : le);
                int t;
                if (af == 2) {
                    t = ETHERTYPE_IPV4;
                } else if (af == 10 || af == 24 || af == 28 || af == 30) {
                    t = ETHERTYPE_IPV6;
                } else {
                    anomaly = "loopback address family " + af + " is not IP";
                    return;
                }
                parseIp(4, t);
                return;
            }
            default:
                anomaly = "link type " + LinkType.name(linkType) + " not supported";
                return;
        }
        // 802.1Q / 802.1ad / QinQ tags
        while (type == 0x8100 || type == 0x88A8 || type == 0x9100) {
            if (len() < off + 4) {
                stop(true, "frame ends inside a VLAN tag");
                return;
            }
            type = u16(off + 2);
            off += 4;
        }
        if (type != ETHERTYPE_IPV4 && type != ETHERTYPE_IPV6) {
            anomaly = String.format("EtherType 0x%04x is not IP", type);
            return;
        }
        parseIp(off, type);
    }

    private static int versionToEthertype(int version) {
        return version == 4 ? ETHERTYPE_IPV4 : version == 6 ? ETHERTYPE_IPV6 : -version - 1;
    }

    private void parseIp(int off, int ethertype) {
        if (ethertype < 0) {
            anomaly = "IP version " + (-ethertype - 1) + " is neither 4 nor 6";
            return;
        }
        int avail = len() - off;
        if (avail < 1) {
            stop(true, "no IP header");
            return;
        }
        int version = u8(off) >>> 4;
        int expected = ethertype == ETHERTYPE_IPV4 ? 4 : 6;
        if (version != expected) {
            anomaly = "IP version field is " + version + ", expected " + expected;
            return;
        }
        int l4;
        int l4Len;
        if (version == 4) {
            if (avail < 20) {
                stop(true, "IPv4 header cut short (" + avail + " bytes)");
                return;
            }
            int ihl = (u8(off) & 0x0F) * 4;
            if (ihl < 20) {
                anomaly = "IPv4 header length " + ihl + " < 20";
                return;
            }
            if (avail < ihl) {
                stop(true, "IPv4 header with options cut short (" + avail + " of " + ihl + " bytes)");
                return;
            }
            int total = u16(off + 2);
            if (total < ihl) {
                anomaly = "IPv4 total length " + total + " < header length " + ihl;
                return;
            }
            ipOffset = off;
            ipVersion = 4;
            ipHeaderLength = ihl;
            ipLength = total;
            ipId = u16(off + 4);
            ipFlagsFragment = u16(off + 6);
            protocol = u8(off + 9);
            srcAddress = address(off + 12, 4);
            dstAddress = address(off + 16, 4);
            fragment = (ipFlagsFragment & 0x3FFF) != 0; // MF or a non-zero fragment offset
            l4 = off + ihl;
            l4Len = total - ihl;
        } else {
            if (avail < 40) {
                stop(true, "IPv6 header cut short (" + avail + " bytes)");
                return;
            }
            int payloadLen = u16(off + 4);
            ipOffset = off;
            ipVersion = 6;
            ipLength = 40 + payloadLen;
            srcAddress = address(off + 8, 16);
            dstAddress = address(off + 24, 16);
            int nh = u8(off + 6);
            int pos = off + 40;
            int end = off + ipLength;
            // walk the extension headers to the upper-layer protocol
            while (nh == 0 || nh == 43 || nh == 60 || nh == 44 || nh == 51) {
                if (pos + 8 > Math.min(end, len())) {
                    protocol = nh;
                    ipHeaderLength = pos - off;
                    stop(pos + 8 > len() && end > len(), "IPv6 extension header " + nh + " cut short");
                    return;
                }
                int next = u8(pos);
                int extLen;
                if (nh == 44) {
                    int fo = u16(pos + 2);
                    if ((fo & 0xFFF9) != 0) { // offset != 0 or M flag
                        fragment = true;
                    }
                    extLen = 8;
                } else if (nh == 51) {
                    extLen = (u8(pos + 1) + 2) * 4;
                } else {
                    extLen = (u8(pos + 1) + 1) * 8;
                }
                nh = next;
                pos += extLen;
            }
            protocol = nh;
            ipHeaderLength = pos - off;
            if (pos > end) {
                anomaly = "IPv6 extension headers exceed the payload length";
                return;
            }
            l4 = pos;
            l4Len = end - pos;
        }
        if (ipOffset + ipLength > len()) {
            stop(true, "IPv" + version + " length " + ipLength + " exceeds the " + avail + " bytes after the link header");
            // keep going: the UDP header may still be there
        }
        if (protocol != IPPROTO_UDP) {
            return;
        }
        if (fragment) {
            if (anomaly == null) {
                anomaly = "IP fragment";
            }
            return;
        }
        if (l4Len < 8) {
            anomaly = "IP payload (" + l4Len + " bytes) too short for a UDP header";
            return;
        }
        if (l4 + 8 > len()) {
            stop(true, "UDP header cut short");
            return;
        }
        int ulen = u16(l4 + 4);
        if (ulen < 8) {
            if (version == 6 && ulen == 0) {
                anomaly = "UDP jumbogram not supported";
            } else {
                anomaly = "UDP length " + ulen + " < 8";
            }
            return;
        }
        if (ulen > l4Len) {
            anomaly = "UDP length " + ulen + " exceeds the IP payload (" + l4Len + " bytes)";
            ulen = l4Len;
        }
        udpOffset = l4;
        srcPort = u16(l4);
        dstPort = u16(l4 + 2);
        udpLength = ulen;
        udpPayloadOffset = l4 + 8;
        udpPayloadLength = Math.min(ulen - 8, len() - udpPayloadOffset);
        if (udpPayloadLength < ulen - 8 && !truncated) {
            stop(true, "UDP payload cut short (" + udpPayloadLength + " of " + (ulen - 8) + " bytes)");
        }
    }

    private InetAddress address(int off, int n) {
        byte[] a = Arrays.copyOfRange(data, off, off + n);
        try {
            // Inet6Address.getByAddress keeps ::ffff:a.b.c.d as IPv6 (InetAddress.getByAddress would not)
            return n == 4 ? InetAddress.getByAddress(a) : Inet6Address.getByAddress(null, a, -1);
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e); // impossible: length is 4 or 16
        }
    }

    // ------------------------------------------------------------------------------------------ accessors

    /** 1-based position of the record in the file. */
    public long frameNumber() {
        return frameNumber;
    }

    /** Capture timestamp, nanoseconds since the Unix epoch (microsecond resolution for classic pcap). */
    public long epochNanos() {
        return epochNanos;
    }

    /** The file's link type ({@link LinkType}). */
    public int linkType() {
        return linkType;
    }

    /** The captured bytes (not a copy). */
    public byte[] data() {
        return data;
    }

    /** A new heap buffer wrapping {@link #data()} (no copy). */
    public ByteBuf asByteBuf() {
        return Unpooled.wrappedBuffer(data);
    }

    public int capturedLength() {
        return data.length;
    }

    /** Length of the frame on the wire. */
    public int originalLength() {
        return originalLength;
    }

    /** True when a header or payload length points past the captured bytes (snap length cut the frame). */
    public boolean isTruncated() {
        return truncated;
    }

    /** Why the frame is not IP/UDP or what is odd about it; null for an ordinary frame. */
    public String anomaly() {
        return anomaly;
    }

    public boolean isIp() {
        return ipOffset >= 0;
    }

    public boolean isUdp() {
        return udpOffset >= 0;
    }

    /** Offset of the IP header in {@link #data()}, or -1 if the frame is not IP. */
    public int ipOffset() {
        return ipOffset;
    }

    /** 4 or 6; 0 when not IP. */
    public int ipVersion() {
        return ipVersion;
    }

    /** IPv4 header length incl. options; for IPv6, 40 plus the extension headers before the upper layer. */
    public int ipHeaderLength() {
        return ipHeaderLength;
    }

    /** Length of the IP packet as declared by its header (IPv4 total length, or 40 + IPv6 payload length). */
    public int ipLength() {
        return ipLength;
    }

    public InetAddress srcAddress() {
        return srcAddress;
    }

    public InetAddress dstAddress() {
        return dstAddress;
    }

    /** IPv4 protocol / IPv6 upper-layer next header, -1 when not IP. */
    public int protocol() {
        return protocol;
    }

    /** IPv4 Identification, -1 for IPv6 or non-IP. */
    public int ipId() {
        return ipId;
    }

    /** IPv4 flags and fragment offset word (0x4000 = DF), -1 for IPv6 or non-IP. */
    public int ipFlagsFragment() {
        return ipFlagsFragment;
    }

    /** True for an IP fragment (its UDP datagram is not parsed). */
    public boolean isFragment() {
        return fragment;
    }

    /** Offset of the UDP header in {@link #data()}, or -1 if the frame has no (parseable) UDP datagram. */
    public int udpOffset() {
        return udpOffset;
    }

    public int srcPort() {
        return srcPort;
    }

    public int dstPort() {
        return dstPort;
    }

    /** UDP length (header included) as declared, bounded by the IP payload; -1 when not UDP. */
    public int udpLength() {
        return udpLength;
    }

    public int udpPayloadOffset() {
        return udpPayloadOffset;
    }

    /** Captured UDP payload bytes: the declared payload length, or less when the capture cut it. */
    public int udpPayloadLength() {
        return udpPayloadLength;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("frame ").append(frameNumber).append(": ");
        if (isUdp()) {
            sb.append(srcAddress.getHostAddress()).append(':').append(srcPort).append(" > ")
                    .append(dstAddress.getHostAddress()).append(':').append(dstPort)
                    .append(" UDP ").append(udpLength - 8).append(" bytes");
        } else if (isIp()) {
            sb.append(srcAddress.getHostAddress()).append(" > ").append(dstAddress.getHostAddress())
                    .append(" IP proto ").append(protocol);
        } else {
            sb.append("not IP");
        }
        sb.append(", ").append(data.length).append('/').append(originalLength).append(" bytes");
        if (anomaly != null) {
            sb.append(" (").append(anomaly).append(')');
        }
        return sb.toString();
    }
}
