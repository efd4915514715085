package io.jroce.endpoint;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.HexFormat;

/** A 16-byte global identifier. For RoCEv2 over IPv4 it is the IPv4-mapped IPv6 address {@code ::ffff:a.b.c.d};
 * over IPv6 it is the IPv6 address itself. */
public final class Gid {
    private final byte[] raw;

    private Gid(byte[] raw) {
        this.raw = raw;
    }

    public static Gid of(byte[] raw16) {
        if (raw16.length != 16) throw new IllegalArgumentException("a GID has 16 bytes, not " + raw16.length);
        return new Gid(raw16.clone());
    }

    public static Gid of(InetAddress address) {
        byte[] g = new byte[16];
        if (address instanceof Inet4Address) {
            g[10] = (byte) 0xFF;
            g[11] = (byte) 0xFF;
            System.arraycopy(address.getAddress(), 0, g, 12, 4);
        } else if (address instanceof Inet6Address) {
            System.arraycopy(address.getAddress(), 0, g, 0, 16);
        } else {
            throw new IllegalArgumentException("not an IP address: " + address);
        }
        return new Gid(g);
    }

    /** 32 hex digits, the form ibv_rc_pingpong exchanges. */
    public static Gid parseHex(String hex) {
        if (hex.length() != 32) throw new IllegalArgumentException("a GID is 32 hex digits, not '" + hex + "'");
        return new Gid(HexFormat.of().parseHex(hex));
    }

    public byte[] raw() {
        return raw.clone();
    }

    public boolean isIpv4Mapped() {
        for (int i = 0; i < 10; i++) if (raw[i] != 0) return false;
        return raw[10] == (byte) 0xFF && raw[11] == (byte) 0xFF;
    }

    public InetAddress toInetAddress() {
        try {
            if (isIpv4Mapped()) return InetAddress.getByAddress(Arrays.copyOfRange(raw, 12, 16));
            return InetAddress.getByAddress(raw.clone());
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e); // cannot happen: the length is right
        }
    }

    public String toHex() {
        return HexFormat.of().formatHex(raw);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Gid g && Arrays.equals(raw, g.raw);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(raw);
    }

    @Override
    public String toString() {
        if (isIpv4Mapped()) return "::ffff:" + toInetAddress().getHostAddress();
        return io.jroce.wire.IpText.ipv6(raw);
    }
}
