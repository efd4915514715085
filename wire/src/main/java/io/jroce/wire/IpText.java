package io.jroce.wire;

import java.net.Inet6Address;
import java.net.InetAddress;

/**
 * Addresses as people write them: IPv4 dotted, IPv6 in the RFC 5952 form ({@code ::1}, {@code fd00::2},
 * lower case, the longest run of two or more zero groups shortened to {@code ::}), with {@code %scope}
 * for a scoped address. {@link InetAddress#getHostAddress()} writes {@code 0:0:0:0:0:0:0:1}.
 */
public final class IpText {
    private IpText() {
    }

    public static String of(InetAddress a) {
        if (!(a instanceof Inet6Address a6)) return a.getHostAddress();
        String text = ipv6(a6.getAddress());
        if (a6.getScopedInterface() != null) return text + "%" + a6.getScopedInterface().getName();
        if (a6.getScopeId() != 0) return text + "%" + a6.getScopeId();
        return text;
    }

    /** {@code 192.0.2.1:4791}, {@code [fd00::1]:4791} (RFC 5952 section 6). */
    public static String withPort(InetAddress a, int port) {
        return (a instanceof Inet6Address ? "[" + of(a) + "]" : of(a)) + ":" + port;
    }

    /** RFC 5952 text of 16 address bytes (no scope). */
    public static String ipv6(byte[] a) {
        if (a.length != 16) throw new IllegalArgumentException("an IPv6 address has 16 bytes, not " + a.length);
        int[] g = new int[8];
        for (int i = 0; i < 8; i++) g[i] = (a[2 * i] & 0xFF) << 8 | (a[2 * i + 1] & 0xFF);
        // RFC 5952 4.2.2/4.2.3: the longest run of zero groups (the first if tied), only if at least two long
        int bestStart = -1;
        int bestLen = 1;
        for (int i = 0; i < 8; ) {
            if (g[i] != 0) {
                i++;
                continue;
            }
            int j = i;
            while (j < 8 && g[j] == 0) j++;
            if (j - i > bestLen) {
                bestStart = i;
                bestLen = j - i;
            }
            i = j;
        }
        StringBuilder s = new StringBuilder(39);
        for (int i = 0; i < 8; i++) {
            if (i == bestStart) {
                s.append("::");
                i += bestLen - 1;
                continue;
            }
            if (s.length() > 0 && s.charAt(s.length() - 1) != ':') s.append(':');
            s.append(Integer.toHexString(g[i]));
        }
        return s.toString();
    }
}
