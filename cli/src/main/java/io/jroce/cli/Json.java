package io.jroce.cli;

import java.math.BigDecimal;
import java.util.Map;

/**
 * Minimal JSON output (no dependency): objects are {@link Map}s in iteration order, plus strings, booleans,
 * integral numbers, {@link BigDecimal}s, {@link Unsigned} values and null.
 */
public final class Json {
    private Json() {
    }

    /** A value printed as an unsigned decimal JSON number (and as hex by the text output). */
    public record Unsigned(long value, int hexDigits) {
        public static Unsigned u64(long v) {
            return new Unsigned(v, 16);
        }

        public static Unsigned u32(int v) {
            return new Unsigned(v & 0xFFFFFFFFL, 8);
        }

        public static Unsigned u24(int v) {
            return new Unsigned(v & 0xFFFFFFL, 6);
        }

        public static Unsigned u16(int v) {
            return new Unsigned(v & 0xFFFFL, 4);
        }

        public String decimal() {
            return Long.toUnsignedString(value);
        }

        public String hex() {
            return String.format("0x%0" + hexDigits + "x", value);
        }
    }

    public static String toJson(Object value) {
        StringBuilder sb = new StringBuilder(256);
        write(sb, value);
        return sb.toString();
    }

    static void write(StringBuilder sb, Object v) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof String s) {
            quote(sb, s);
        } else if (v instanceof Boolean || v instanceof Integer || v instanceof Long || v instanceof Short
                || v instanceof Byte) {
            sb.append(v);
        } else if (v instanceof BigDecimal d) {
            sb.append(d.toPlainString());
        } else if (v instanceof Unsigned u) {
            sb.append(u.decimal());
        } else if (v instanceof Map<?, ?> m) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                quote(sb, String.valueOf(e.getKey()));
                sb.append(':');
                write(sb, e.getValue());
            }
            sb.append('}');
        } else if (v instanceof Iterable<?> it) {
            sb.append('[');
            boolean first = true;
            for (Object o : it) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                write(sb, o);
            }
            sb.append(']');
        } else {
            throw new IllegalArgumentException("not a JSON value: " + v.getClass().getName());
        }
    }

    static String quote(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 2);
        quote(sb, s);
        return sb.toString();
    }

    static void quote(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                case '\b': sb.append("\\b"); break;
                case '\f': sb.append("\\f"); break;
                default:
                    if (c < 0x20 || c == 0x7F || c == '\u2028' || c == '\u2029') {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
            }
        }
        sb.append('"');
    }
}
