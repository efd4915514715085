package io.jroce.cli.inspect;

import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

import java.math.BigDecimal;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import java.util.Map;

/**
 * The time of each packet in the {@code inspect} listing, as tshark's {@code -t} shows it: seconds since the
 * capture's first frame (relative, the default), since the previous packet listed (delta), since the Unix
 * epoch (epoch), or the UTC date and time (absolute). Text shows microseconds, the resolution of a classic
 * pcap; JSON carries every form, to the nanosecond.
 */
final class TimeColumn {

    enum Format { RELATIVE, ABSOLUTE, DELTA, EPOCH }

    private static final DateTimeFormatter ABSOLUTE =
            DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss.SSSSSS", Locale.ROOT).withZone(ZoneOffset.UTC);

    private final Format format;
    private long firstNanos = Long.MIN_VALUE;
    private long previousNanos = Long.MIN_VALUE;

    TimeColumn(Format format) {
        this.format = format;
    }

    /** Every frame of the capture, listed or not: the first one is time 0 of the relative column. */
    void onFrame(long epochNanos) {
        if (firstNanos == Long.MIN_VALUE) {
            firstNanos = epochNanos;
        }
    }

    /**
     * Adds {@code time} (UTC, ISO 8601), {@code time_epoch}, {@code time_relative} and {@code time_delta}
     * (seconds) to a listed packet's record; the next packet's delta counts from this one.
     */
    void put(Map<String, Object> r, long epochNanos) {
        long delta = previousNanos == Long.MIN_VALUE ? 0 : epochNanos - previousNanos;
        previousNanos = epochNanos;
        r.put("time", DateTimeFormatter.ISO_INSTANT.format(instant(epochNanos)));
        r.put("time_epoch", seconds(epochNanos));
        r.put("time_relative", seconds(epochNanos - firstNanos));
        r.put("time_delta", seconds(delta));
    }

    /** The text column for a record {@link #put} filled in. */
    String text(Map<String, Object> r) {
        return switch (format) {
            case RELATIVE -> micros((BigDecimal) r.get("time_relative"));
            case DELTA -> micros((BigDecimal) r.get("time_delta"));
            case EPOCH -> micros((BigDecimal) r.get("time_epoch"));
            case ABSOLUTE -> ABSOLUTE.format(instant(((BigDecimal) r.get("time_epoch")).movePointRight(9).longValueExact()));
        };
    }

    private static String micros(BigDecimal seconds) {
        return String.format(Locale.ROOT, "%10s", seconds.setScale(6, java.math.RoundingMode.FLOOR).toPlainString());
    }

    private static BigDecimal seconds(long nanos) {
        return BigDecimal.valueOf(nanos, 9);
    }

    private static Instant instant(long epochNanos) {
        return Instant.ofEpochSecond(Math.floorDiv(epochNanos, 1_000_000_000L), Math.floorMod(epochNanos, 1_000_000_000L));
    }

    /**
     * {@code -t/--time}: relative, absolute, delta, epoch, or their first letters (tshark's r, a, d, e); tshark's ad,
     * u and ud are absolute too, the one absolute form here being UTC with the date.
     */
    static final class FormatConverter implements ITypeConverter<Format> {
        @Override
        public Format convert(String s) {
            String t = s.strip().toLowerCase(Locale.ROOT);
            if (t.equals("ad") || t.equals("u") || t.equals("ud")) return Format.ABSOLUTE;
            for (Format f : Format.values()) {
                String name = f.name().toLowerCase(Locale.ROOT);
                if (t.equals(name) || t.equals(name.substring(0, 1))) {
                    return f;
                }
            }
            throw new TypeConversionException("'" + s + "' is not a time format (relative, absolute, delta, epoch, "
                    + "or r, a, d, e; ad, u and ud as a)");
        }
    }
}
