package io.jroce.wire.pcap;

/**
 * The pcap link-layer header types (LINKTYPE_* values, https://www.tcpdump.org/linktypes.html) that
 * {@link PcapReader} understands. Other link types are read but their frames are reported as not IP.
 */
public final class LinkType {
    /** BSD loopback: a 4-byte address family in the capturing host's byte order. */
    public static final int NULL = 0;
    /** Ethernet II, optionally with 802.1Q / 802.1ad VLAN tags. */
    public static final int ETHERNET = 1;
    /** Raw IP (IPv4 or IPv6, told apart by the version nibble). */
    public static final int RAW = 101;
    /** OpenBSD loopback: a 4-byte address family in network byte order. */
    public static final int LOOP = 108;
    /** Linux "cooked" capture v1 (tcpdump -i any on older libpcap), 16-byte header. */
    public static final int LINUX_SLL = 113;
    /** Raw IPv4. */
    public static final int IPV4 = 228;
    /** Raw IPv6. */
    public static final int IPV6 = 229;
    /** Linux "cooked" capture v2 (tcpdump -i any on libpcap 1.10+), 20-byte header. */
    public static final int LINUX_SLL2 = 276;
    /** DLT_RAW as written by some old libpcap versions instead of 101. */
    static final int DLT_RAW_12 = 12;
    /** DLT_RAW on OpenBSD. */
    static final int DLT_RAW_14 = 14;

    private LinkType() {
    }

    /** Whether {@link PcapReader} can find IP packets in frames of this link type. */
    public static boolean isSupported(int linkType) {
        switch (linkType) {
            case NULL: case ETHERNET: case RAW: case LOOP: case LINUX_SLL: case IPV4: case IPV6: case LINUX_SLL2:
            case DLT_RAW_12: case DLT_RAW_14:
                return true;
            default:
                return false;
        }
    }

    /** A short human-readable name, e.g. "Ethernet" or "LINKTYPE_123". */
    public static String name(int linkType) {
        switch (linkType) {
            case NULL: return "BSD loopback";
            case ETHERNET: return "Ethernet";
            case RAW: case DLT_RAW_12: case DLT_RAW_14: return "raw IP";
            case LOOP: return "OpenBSD loopback";
            case LINUX_SLL: return "Linux cooked (SLL)";
            case IPV4: return "raw IPv4";
            case IPV6: return "raw IPv6";
            case LINUX_SLL2: return "Linux cooked v2 (SLL2)";
            default: return "LINKTYPE_" + linkType;
        }
    }
}
