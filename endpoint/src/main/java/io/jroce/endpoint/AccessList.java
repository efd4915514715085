package io.jroce.endpoint;

import io.jroce.wire.IpText;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The networks a device accepts traffic from: IPv4 and IPv6 prefixes (CIDR). RoCE itself has no access control
 * beyond the P_Key: it relies on the network being isolated. On a shared network this list is what keeps a
 * stranger from sending to a QP whose number it guesses, or from taking a server's connection.
 *
 * <p>Every prefix is held as an IPv6 prefix; an IPv4 prefix a.b.c.d/n is the v4-mapped ::ffff:a.b.c.d/(96+n), and
 * an IPv4 source is compared as its v4-mapped form, so {@code 10.0.0.0/8} and {@code ::ffff:10.0.0.0/104} are the
 * same network and a v4-mapped IPv6 source matches an IPv4 prefix.
 *
 * <p>A refused source is logged (WARN) at most once per {@link #LOG_INTERVAL_NANOS} per address, in a table of at
 * most {@link #LOG_TABLE} addresses (the least recently logged is forgotten first), so a flood from many
 * addresses costs neither memory nor a log line per datagram.
 */
public final class AccessList {
    private static final Logger log = LoggerFactory.getLogger(AccessList.class);
    /** Allows every source: the default, as plain RoCE. */
    public static final AccessList ALL = new AccessList(List.of(), "all");
    /** One log line per source per minute at most. */
    public static final long LOG_INTERVAL_NANOS = 60_000_000_000L;
    /** Sources whose last log time is remembered. */
    public static final int LOG_TABLE = 256;
    private static final long V4_MAPPED_LO = 0x0000_FFFF_0000_0000L;

    /** Prefixes as {hi, lo, maskHi, maskLo}. Empty: allow all. */
    private final long[][] prefixes;
    private final String text;
    private final Map<String, Long> lastLogged = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
            return size() > LOG_TABLE;
        }
    };

    private AccessList(List<long[]> prefixes, String text) {
        this.prefixes = prefixes.toArray(long[][]::new);
        this.text = text;
    }

    /**
     * Parses {@code CIDR[,CIDR...]}: {@code 10.0.0.0/8}, {@code 192.0.2.7} (one host: /32), {@code fd00::/8},
     * {@code ::1} (/128), or {@code all}. Host bits set below the prefix are refused (a typo more often than not).
     *
     * @throws IllegalArgumentException with a one-line message naming the bad entry
     */
    public static AccessList parse(String spec) {
        if (spec == null || spec.isBlank()) throw new IllegalArgumentException("give at least one network, e.g. 10.0.0.0/8");
        List<long[]> out = new ArrayList<>();
        for (String raw : spec.split(",", -1)) {
            String entry = raw.strip();
            if (entry.equalsIgnoreCase("all")) return ALL;
            out.add(prefix(entry));
        }
        return new AccessList(out, spec.strip().replace(" ", ""));
    }

    private static long[] prefix(String entry) {
        if (entry.isEmpty()) throw new IllegalArgumentException("empty network in the list (two commas, or one at an end)");
        int slash = entry.indexOf('/');
        String host = slash < 0 ? entry : entry.substring(0, slash);
        InetAddress a = literal(host, entry);
        // by how it is written: Java gives ::ffff:a.b.c.d back as an Inet4Address, whose prefix still counts 128 bits
        boolean v4 = !host.contains(":");
        int max = v4 ? 32 : 128;
        int len = max;
        if (slash >= 0) {
            String n = entry.substring(slash + 1);
            if (!n.matches("[0-9]{1,3}")) throw new IllegalArgumentException("bad prefix length in '" + entry + "': give /0../" + max);
            len = Integer.parseInt(n);
            if (len > max) throw new IllegalArgumentException("prefix length /" + len + " in '" + entry + "' is longer than " + max);
        }
        long[] addr = words(a);
        int bits = v4 ? 96 + len : len;
        long maskHi = mask(bits);
        long maskLo = mask(bits - 64);
        if ((addr[0] & ~maskHi) != 0 || (addr[1] & ~maskLo) != 0) {
            throw new IllegalArgumentException("'" + entry + "' has host bits set below the /" + len + " prefix");
        }
        return new long[] {addr[0], addr[1], maskHi, maskLo};
    }

    /** Only numeric addresses: a host name would make the list depend on DNS at start-up. */
    private static InetAddress literal(String host, String entry) {
        String h = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
        boolean looksV4 = h.matches("[0-9]{1,3}(\\.[0-9]{1,3}){3}");
        boolean looksV6 = h.contains(":") && h.matches("[0-9A-Fa-f:.]+");
        if (looksV4) {
            for (String octet : h.split("\\.")) {
                if (Integer.parseInt(octet) > 255) throw new IllegalArgumentException("'" + entry + "' is not a valid IPv4 address");
            }
        }
        if (!looksV4 && !looksV6) {
            throw new IllegalArgumentException("'" + entry + "' is not a network: give an IPv4 or IPv6 address with an optional "
                    + "/prefix, e.g. 10.0.0.0/8 or fd00::/8");
        }
        try {
            return InetAddress.getByName(h);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("'" + entry + "' is not a valid address");
        }
    }

    /** The top {@code bits} of a 64-bit word set ({@code bits} clamped to 0..64). */
    private static long mask(int bits) {
        if (bits <= 0) return 0;
        if (bits >= 64) return -1L;
        return -1L << (64 - bits);
    }

    /** The address as 128 bits {hi, lo}; IPv4 as v4-mapped. */
    private static long[] words(InetAddress a) {
        byte[] b = a.getAddress();
        if (b.length == 4) return new long[] {0, V4_MAPPED_LO | (toInt(b, 0) & 0xFFFF_FFFFL)};
        return words16(b);
    }

    private static long[] words16(byte[] b) {
        long hi = 0;
        long lo = 0;
        for (int i = 0; i < 8; i++) hi = (hi << 8) | (b[i] & 0xFF);
        for (int i = 8; i < 16; i++) lo = (lo << 8) | (b[i] & 0xFF);
        return new long[] {hi, lo};
    }

    private static int toInt(byte[] b, int off) {
        return (b[off] & 0xFF) << 24 | (b[off + 1] & 0xFF) << 16 | (b[off + 2] & 0xFF) << 8 | (b[off + 3] & 0xFF);
    }

    /** This list and the one host {@code a} (a device always admits its own address: its warm-up talks to itself). */
    public AccessList with(InetAddress a) {
        if (allowsAll() || allows(a)) return this;
        List<long[]> all = new ArrayList<>(List.of(prefixes));
        long[] w = words(a);
        all.add(new long[] {w[0], w[1], -1L, -1L});
        return new AccessList(all, text);
    }

    /** Whether every source is allowed (no list given). */
    public boolean allowsAll() {
        return prefixes.length == 0;
    }

    /** Whether {@code source} is inside one of the networks. */
    public boolean allows(InetAddress source) {
        if (prefixes.length == 0) return true;
        if (source instanceof Inet4Address) return matches(0, V4_MAPPED_LO | (source.hashCode() & 0xFFFF_FFFFL));
        long[] w = words16(source.getAddress());
        return matches(w[0], w[1]);
    }

    private boolean matches(long hi, long lo) {
        for (long[] p : prefixes) {
            if ((hi & p[2]) == p[0] && (lo & p[3]) == p[1]) return true;
        }
        return false;
    }

    /**
     * The receive path's check, before anything else looks at the datagram: true if {@code source} may send to
     * the device; otherwise the datagram is counted ({@link DropReason#NOT_ALLOWED}) and the source logged (at
     * most once a minute), and the caller drops it.
     */
    boolean admit(InetAddress source, DeviceCounters counters) {
        if (prefixes.length == 0 || allows(source)) return true;
        counters.drop(DropReason.NOT_ALLOWED);
        refused(source, "RoCE datagrams", "counted as drop_not_allowed, ");
        return false;
    }

    /** Whether the IPv4 sender {@code addr} (big-endian int) is inside one of the networks; allocates nothing. */
    boolean allows4(int addr) {
        return prefixes.length == 0 || matches(0, V4_MAPPED_LO | (addr & 0xFFFF_FFFFL));
    }

    /** Whether the IPv6 sender of the 16 bytes {@code a} is inside one of the networks. */
    boolean allows16(byte[] a) {
        if (prefixes.length == 0) return true;
        long[] w = words16(a);
        return matches(w[0], w[1]);
    }

    /** {@link #admit} for an IPv4 sender given as a big-endian int: allocates nothing unless it refuses. */
    boolean admit4(int addr, DeviceCounters counters) {
        if (allows4(addr)) return true;
        counters.drop(DropReason.NOT_ALLOWED);
        byte[] b = {(byte) (addr >>> 24), (byte) (addr >>> 16), (byte) (addr >>> 8), (byte) addr};
        refusedBytes(b);
        return false;
    }

    /** {@link #admit} for an IPv6 sender given as its 16 bytes. */
    boolean admit16(byte[] a, DeviceCounters counters) {
        if (allows16(a)) return true;
        counters.drop(DropReason.NOT_ALLOWED);
        refusedBytes(a.clone());
        return false;
    }

    private void refusedBytes(byte[] address) {
        try {
            refused(InetAddress.getByAddress(address), "RoCE datagrams", "counted as drop_not_allowed, ");
        } catch (UnknownHostException e) {
            // 4 or 16 bytes: cannot happen
        }
    }

    /**
     * Logs that {@code source} was refused ({@code what}: "RoCE datagrams", "a TCP connection"), unless it was
     * logged less than a minute ago. Thread-safe; callers refuse the source whatever this does.
     */
    public void refused(InetAddress source, String what) {
        refused(source, what, "");
    }

    private void refused(InetAddress source, String what, String counted) {
        String key = IpText.of(source);
        long now = System.nanoTime();
        synchronized (lastLogged) {
            Long last = lastLogged.get(key);
            if (last != null && now - last < LOG_INTERVAL_NANOS) return;
            lastLogged.put(key, now);
        }
        log.warn("refused {} from {}: not in the allowed networks ({}); further ones from there are {}logged again "
                + "after a minute", what, key, text, counted);
    }

    /** How many sources the log-rate table remembers now (at most {@link #LOG_TABLE}). */
    int loggedSources() {
        synchronized (lastLogged) {
            return lastLogged.size();
        }
    }

    @Override
    public String toString() {
        return text.toLowerCase(Locale.ROOT);
    }
}
