package io.jroce.cli.node;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.SplittableRandom;

/**
 * The bytes behind {@code fill} and {@code compare}: a source generates a stream of bytes (text, hex and
 * 64-bit values repeat; patterns are generated), which is written into or compared with a region range in
 * chunks, so a 1 GiB region never needs a 1 GiB array.
 */
final class SessionBytes {
    private static final int CHUNK = 64 * 1024;

    private SessionBytes() {
    }

    /** A sequential byte generator; {@link #length()} is the natural length, or -1 for patterns. */
    abstract static class Source {
        abstract long length();

        /** Fills b[0..n) with the next n bytes. */
        abstract void next(byte[] b, int n);
    }

    /** A unit repeated as often as needed. */
    static Source repeat(byte[] unit) {
        return new Source() {
            int at;

            @Override
            long length() {
                return unit.length;
            }

            @Override
            void next(byte[] b, int n) {
                for (int i = 0; i < n; i++) {
                    b[i] = unit[at];
                    if (++at == unit.length) at = 0;
                }
            }
        };
    }

    /** zero, seq (byte i of the range is i mod 256) or random (a SplittableRandom stream of the seed). */
    static Source pattern(String name, long seed) {
        return switch (name) {
            case "zero" -> new Source() {
                @Override
                long length() {
                    return -1;
                }

                @Override
                void next(byte[] b, int n) {
                    java.util.Arrays.fill(b, 0, n, (byte) 0);
                }
            };
            case "seq" -> new Source() {
                long at;

                @Override
                long length() {
                    return -1;
                }

                @Override
                void next(byte[] b, int n) {
                    for (int i = 0; i < n; i++) b[i] = (byte) at++;
                }
            };
            case "random" -> new Source() {
                final SplittableRandom random = new SplittableRandom(seed);
                long word;
                int left;

                @Override
                long length() {
                    return -1;
                }

                @Override
                void next(byte[] b, int n) {
                    // 8 bytes per nextLong, least significant first: stable across JDKs, unlike nextBytes
                    for (int i = 0; i < n; i++) {
                        if (left == 0) {
                            word = random.nextLong();
                            left = 8;
                        }
                        b[i] = (byte) word;
                        word >>>= 8;
                        left--;
                    }
                }
            };
            default -> throw new IllegalArgumentException("unknown pattern " + name);
        };
    }

    /** A 64-bit value in host byte order, as the region's atomics see it. */
    static byte[] u64(long v) {
        return ByteBuffer.allocate(8).order(ByteOrder.nativeOrder()).putLong(v).array();
    }

    /** Writes {@code len} bytes of {@code src} at {@code offset} of {@code region}. */
    static void fill(ByteBuffer region, int offset, int len, Source src) {
        byte[] chunk = new byte[Math.min(CHUNK, Math.max(len, 1))];
        ByteBuffer dst = region.duplicate().clear().position(offset);
        int done = 0;
        while (done < len) {
            int n = Math.min(chunk.length, len - done);
            src.next(chunk, n);
            dst.put(chunk, 0, n);
            done += n;
        }
    }

    /** The result of a comparison: null when equal, else where and how it differs. */
    static String compare(ByteBuffer region, int offset, int len, Source src) {
        byte[] want = new byte[Math.min(CHUNK, Math.max(len, 1))];
        byte[] have = new byte[want.length];
        ByteBuffer from = region.duplicate().clear().position(offset);
        long differing = 0;
        long first = -1;
        byte firstHave = 0;
        byte firstWant = 0;
        int done = 0;
        while (done < len) {
            int n = Math.min(want.length, len - done);
            src.next(want, n);
            from.get(have, 0, n);
            int m = java.util.Arrays.mismatch(have, 0, n, want, 0, n);
            if (m >= 0) {
                for (int i = m; i < n; i++) {
                    if (have[i] != want[i]) {
                        if (first < 0) {
                            first = (long) offset + done + i;
                            firstHave = have[i];
                            firstWant = want[i];
                        }
                        differing++;
                    }
                }
            }
            done += n;
        }
        if (first < 0) return null;
        return String.format("byte at offset %d is 0x%02x, expected 0x%02x; %d of %d bytes differ", first, firstHave & 0xFF,
                firstWant & 0xFF, differing, len);
    }

    static byte[] sha256(ByteBuffer region, int offset, int len) {
        MessageDigest md;
        try {
            md = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every Java runtime", e);
        }
        md.update(region.duplicate().clear().position(offset).limit(offset + len));
        return md.digest();
    }

    static String hex(byte[] b) {
        return HexFormat.of().formatHex(b);
    }

    /** xxd-style lines: offset, 16 hex bytes, printable ASCII. */
    static String hexDump(ByteBuffer region, int offset, int len) {
        StringBuilder sb = new StringBuilder();
        for (int line = 0; line < len; line += 16) {
            int n = Math.min(16, len - line);
            sb.append(String.format("  %08x ", offset + line));
            StringBuilder ascii = new StringBuilder();
            for (int i = 0; i < 16; i++) {
                if (i == 8) sb.append(' ');
                if (i < n) {
                    int v = region.get(offset + line + i) & 0xFF;
                    sb.append(String.format(" %02x", v));
                    ascii.append(v >= 0x20 && v < 0x7f ? (char) v : '.');
                } else {
                    sb.append("   ");
                }
            }
            sb.append("  |").append(ascii).append("|\n");
        }
        return sb.toString();
    }

    /** The bytes as text with C-style escapes for anything not printable ASCII. */
    static String text(ByteBuffer region, int offset, int len) {
        StringBuilder sb = new StringBuilder(len);
        for (int i = 0; i < len; i++) {
            int v = region.get(offset + i) & 0xFF;
            switch (v) {
                case '\n' -> sb.append("\\n");
                case '\t' -> sb.append("\\t");
                case '\r' -> sb.append("\\r");
                case '\\' -> sb.append("\\\\");
                case '"' -> sb.append("\\\"");
                default -> {
                    if (v >= 0x20 && v < 0x7f) sb.append((char) v);
                    else sb.append(String.format("\\x%02x", v));
                }
            }
        }
        return sb.toString();
    }

    /** 64-bit words in host order, one per line. */
    static String words(ByteBuffer region, int offset, int len) {
        ByteBuffer b = region.duplicate().clear().order(ByteOrder.nativeOrder());
        StringBuilder sb = new StringBuilder();
        for (int at = offset; at + 8 <= offset + len; at += 8) {
            long v = b.getLong(at);
            sb.append(String.format("  %08x  %d (0x%016x)%n", at, v, v));
        }
        return sb.toString();
    }
}
