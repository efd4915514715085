package io.jroce.cli.metrics;

import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Objects;

/**
 * Where the metrics endpoint listens: {@code [ADDR:]PORT}. A bare {@code PORT} (or {@code :PORT}) listens on
 * every address, as Prometheus exporters do by default, so a Prometheus server on another host can scrape it;
 * {@code 127.0.0.1:9100} keeps it on this host. {@code ADDR} is an IPv4 or IPv6 literal ({@code [::1]:9100})
 * or a host name resolved once, here. Port 0 takes an ephemeral port, which is printed at start.
 *
 * @param host the address to bind, or null for every address
 */
public record MetricsAddress(InetAddress host, int port) {
    public MetricsAddress {
        if (port < 0 || port > 65535) throw new IllegalArgumentException("port must be 0..65535, not " + port);
    }

    /** Parses {@code [ADDR:]PORT}; a bad value is an {@link IllegalArgumentException} with a one-line message. */
    public static MetricsAddress parse(String text) {
        Objects.requireNonNull(text, "text");
        String s = text.strip();
        if (s.isEmpty()) throw new IllegalArgumentException("expected [ADDR:]PORT, e.g. 9100 or 127.0.0.1:9100; got nothing");
        String hostPart;
        String portPart;
        if (s.startsWith("[")) { // [IPv6]:PORT, the URL form, since an IPv6 literal has colons of its own
            int close = s.indexOf(']');
            if (close < 0 || close + 1 >= s.length() || s.charAt(close + 1) != ':') {
                throw new IllegalArgumentException("expected [IPV6]:PORT, got '" + text + "'");
            }
            hostPart = s.substring(1, close);
            portPart = s.substring(close + 2);
        } else {
            int colon = s.lastIndexOf(':');
            if (colon >= 0 && s.indexOf(':') != colon) {
                throw new IllegalArgumentException("an IPv6 address goes in brackets: [ADDR]:PORT, got '" + text + "'");
            }
            hostPart = colon < 0 ? "" : s.substring(0, colon);
            portPart = s.substring(colon + 1);
        }
        int port = port(portPart, text);
        if (hostPart.isEmpty()) return new MetricsAddress(null, port);
        try {
            return new MetricsAddress(InetAddress.getByName(hostPart), port);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("cannot resolve '" + hostPart + "'");
        }
    }

    private static int port(String digits, String text) {
        if (digits.isEmpty() || digits.length() > 5 || !digits.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new IllegalArgumentException("expected [ADDR:]PORT with PORT 0..65535, got '" + text + "'");
        }
        int port = Integer.parseInt(digits);
        if (port > 65535) throw new IllegalArgumentException("port must be 0..65535, not " + port);
        return port;
    }

    /** {@code 127.0.0.1:9100}, {@code [::1]:9100}, {@code *:9100} (every address). */
    @Override
    public String toString() {
        if (host == null) return "*:" + port;
        return io.jroce.wire.IpText.withPort(host, port); // [::1]:9100, as a URL writes it (RFC 5952)
    }

    /** For picocli: a bad value becomes a one-line usage error (exit 2). */
    public static final class Converter implements ITypeConverter<MetricsAddress> {
        @Override
        public MetricsAddress convert(String value) {
            try {
                return parse(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }
}
