package io.jroce.cli;

import io.jroce.endpoint.Mtu;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.Locale;
import java.util.function.Function;

/**
 * The one reading of the numbers every command takes: path MTUs, byte counts (with k, m, g suffixes) and
 * durations (a bare number is seconds, so {@code --timeout 30} and {@code -D 0.5} read as they always did).
 * Options name a nested converter ({@code @Option(converter = Converters.Size.class)}); the session language
 * calls the static methods. A bad value is an {@link IllegalArgumentException} naming it, which picocli
 * reports as a one-line usage error.
 */
public final class Converters {
    private Converters() {
    }

    /** A byte count or offset: decimal or 0x hex, with an optional k, m or g suffix (powers of 1024). */
    public static long size(String s) {
        String t = s.replace("_", "");
        long mult = 1;
        if (!t.isEmpty() && !t.startsWith("0x") && !t.startsWith("0X")) {
            char last = Character.toLowerCase(t.charAt(t.length() - 1));
            if (last == 'k') mult = 1 << 10;
            else if (last == 'm') mult = 1 << 20;
            else if (last == 'g') mult = 1 << 30;
            if (mult != 1) t = t.substring(0, t.length() - 1);
        }
        try {
            long v = t.startsWith("0x") || t.startsWith("0X") ? Long.parseLong(t.substring(2), 16) : Long.parseLong(t);
            if (v < 0) throw new NumberFormatException();
            return Math.multiplyExact(v, mult);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException("'" + s + "' is not a size (a number such as 4096, 0x1000, 4k or 1m)");
        }
    }

    /** 10s, 500ms, 250us, 2m, 1.5s; a bare number is seconds. */
    public static Duration duration(String s) {
        String t = s.strip().toLowerCase(Locale.ROOT);
        long nanosPerUnit;
        String num;
        if (t.endsWith("ms")) { nanosPerUnit = 1_000_000L; num = t.substring(0, t.length() - 2); }
        else if (t.endsWith("us")) { nanosPerUnit = 1_000L; num = t.substring(0, t.length() - 2); }
        else if (t.endsWith("s")) { nanosPerUnit = 1_000_000_000L; num = t.substring(0, t.length() - 1); }
        else if (t.endsWith("m")) { nanosPerUnit = 60_000_000_000L; num = t.substring(0, t.length() - 1); }
        else { nanosPerUnit = 1_000_000_000L; num = t; }
        try {
            double v = Double.parseDouble(num);
            if (!(v >= 0) || Double.isInfinite(v) || v * nanosPerUnit > 86_400e9 * 365) throw new NumberFormatException();
            return Duration.ofNanos(Math.round(v * nanosPerUnit));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + s + "' is not a duration (such as 10s, 500ms, 250us or 2m)");
        }
    }

    /** A path MTU in bytes: 256, 512, 1024, 2048 or 4096, written as any size is (1k, 2k, 4k, 0x400 too). */
    public static Mtu mtu(String s) {
        long v;
        try {
            v = size(s.strip());
        } catch (IllegalArgumentException e) {
            v = -1;
        }
        for (Mtu m : Mtu.values()) if (m.bytes() == v) return m;
        throw new IllegalArgumentException("'" + s + "' is not a path MTU (256, 512, 1024, 2048 or 4096, e.g. 4k)");
    }

    /** A literal IPv4 address, never a name: what must not depend on DNS (scripts, the demo's nodes). */
    public static InetAddress ipv4(String s) {
        String[] parts = s.split("\\.", -1);
        if (parts.length == 4) {
            byte[] b = new byte[4];
            boolean ok = true;
            for (int i = 0; i < 4 && ok; i++) {
                try {
                    int v = Integer.parseInt(parts[i]);
                    if (v < 0 || v > 255 || parts[i].length() > 3) ok = false;
                    b[i] = (byte) v;
                } catch (NumberFormatException e) {
                    ok = false;
                }
            }
            if (ok) {
                try {
                    return InetAddress.getByAddress(b);
                } catch (UnknownHostException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        throw new IllegalArgumentException("'" + s + "' is not an IPv4 address (such as 192.0.2.10)");
    }

    /**
     * A literal IPv4 or IPv6 address, never a name. IPv6 may be bracketed ({@code [fd00::2]}) or bare
     * ({@code fd00::2}) and may carry a scope ({@code fe80::1%eth0}); a port never goes in the address here
     * ({@code [fd00::2]:4791} is refused: ports have their own options). Text without a colon is read as
     * IPv4, with {@link #ipv4}'s message.
     */
    public static InetAddress ip(String s) {
        String t = s.strip();
        boolean bracketed = t.startsWith("[");
        if (bracketed) {
            if (t.indexOf(']') > 0 && t.indexOf(']') < t.length() - 1) {
                throw new IllegalArgumentException("'" + s + "' has a port after the address: give the address alone (such as fd00::2)");
            }
            if (!t.endsWith("]")) throw new IllegalArgumentException("'" + s + "' misses its closing ']'");
            t = t.substring(1, t.length() - 1);
            if (t.indexOf(':') < 0) throw new IllegalArgumentException("'" + s + "': brackets are for IPv6 addresses (such as [fd00::2])");
        }
        if (t.indexOf(':') < 0) return ipv4(t);
        int pct = t.indexOf('%');
        String addr = pct < 0 ? t : t.substring(0, pct);
        // hex digits, colons and (for an embedded IPv4 tail) dots only: InetAddress then parses a literal and
        // never asks DNS
        if (addr.isEmpty() || !addr.chars().allMatch(c -> Character.digit(c, 16) >= 0 || c == ':' || c == '.')
                || (pct >= 0 && pct == t.length() - 1)) {
            throw new IllegalArgumentException("'" + s + "' is not an IPv6 address (such as fd00::2, ::1 or fe80::1%eth0)");
        }
        try {
            return InetAddress.getByName(t);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("'" + s + "' is not an IPv6 address (such as fd00::2, ::1 or fe80::1%eth0): "
                    + e.getMessage());
        }
    }

    /** "30 s", "0.3 s": a duration as the messages about --timeout and -D print it. */
    public static String seconds(Duration d) {
        long ms = d.toMillis();
        return ms % 1000 == 0 ? ms / 1000 + " s" : String.format(Locale.ROOT, "%.1f s", ms / 1000.0);
    }

    /** {@code -s/--size}: see {@link #size(String)}. */
    public static final class Size extends Parsed<Long> {
        public Size() {
            super(Converters::size);
        }
    }

    /** {@code --timeout}, {@code -D/--duration}, {@code --linger}: see {@link #duration(String)}. */
    public static final class Time extends Parsed<Duration> {
        public Time() {
            super(Converters::duration);
        }
    }

    /** {@code -m/--mtu}: see {@link #mtu(String)}. */
    public static final class PathMtu extends Parsed<Mtu> {
        public PathMtu() {
            super(Converters::mtu);
        }
    }

    /** A parse method as a picocli converter: its message becomes the usage error. */
    private abstract static class Parsed<T> implements ITypeConverter<T> {
        private final Function<String, T> parse;

        Parsed(Function<String, T> parse) {
            this.parse = parse;
        }

        @Override
        public T convert(String value) {
            try {
                return parse.apply(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    /**
     * A {@code --jroce-extensions} list: none, sr (selective retransmission), cc (congestion control) or all, joined
     * with commas; the {@code JroceExtensions} flags.
     */
    public static int jroceExtensions(String list) {
        int flags = 0;
        for (String t : list.split(",")) {
            switch (t.trim()) {
                case "none" -> { }
                case "sr" -> flags |= io.jroce.endpoint.JroceExtensions.SELECTIVE_REPEAT;
                case "cc" -> flags |= io.jroce.endpoint.JroceExtensions.CONGESTION_CONTROL;
                case "all" -> flags |= io.jroce.endpoint.JroceExtensions.ALL;
                default -> throw new IllegalArgumentException("invalid --jroce-extensions " + list
                        + ": a comma-separated list of none, sr, cc, all");
            }
        }
        return flags;
    }
}
