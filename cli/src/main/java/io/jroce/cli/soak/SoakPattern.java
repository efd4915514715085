package io.jroce.cli.soak;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * The bytes of every soak message, a pure function of the run's seed, the QP's index, the operation and the
 * round: both sides compute what a message must hold without telling each other, so a byte lost, duplicated,
 * misplaced or left over from an earlier round (whose pattern differs) shows as a mismatch where it lands.
 * Lengths are log-uniform between 1 byte and the largest message, so single-packet and many-packet messages
 * both occur often.
 */
final class SoakPattern {
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;

    private final long runSeed;
    private final byte[] want;
    private final byte[] have;

    SoakPattern(long runSeed, int maxLength) {
        this.runSeed = runSeed;
        this.want = new byte[maxLength];
        this.have = new byte[maxLength];
    }

    /** The seed of one message. */
    long seed(int qp, SoakOp op, long round) {
        return mix(runSeed + GOLDEN * (mix(qp + 1L) + mix(((long) op.ordinal() << 40) ^ round)));
    }

    /** The length of one message, 1..max: a power-of-two band chosen uniformly, then a length inside it. */
    static int length(long seed, int max) {
        SplittableRandom r = new SplittableRandom(mix(seed ^ 0x5DEECE66DL));
        int bands = 32 - Integer.numberOfLeadingZeros(max); // max in [2^(bands-1), 2^bands)
        int band = r.nextInt(bands);
        int top = Math.min(max, (1 << band) * 2 - 1);
        int bottom = 1 << band;
        return bottom >= top ? Math.min(bottom, max) : bottom + r.nextInt(top - bottom + 1);
    }

    /** Writes the message of {@code seed}, {@code len} bytes, at {@code offset} of {@code region}. */
    void fill(ByteBuffer region, int offset, int len, long seed) {
        generate(seed, len);
        region.put(offset, want, 0, len);
    }

    /** Null when {@code region} holds the message of {@code seed} at {@code offset}; else where and how it differs. */
    String check(ByteBuffer region, int offset, int len, long seed) {
        generate(seed, len);
        region.get(offset, have, 0, len);
        int first = Arrays.mismatch(have, 0, len, want, 0, len);
        if (first < 0) return null;
        int differing = 0;
        for (int i = first; i < len; i++) if (have[i] != want[i]) differing++;
        return String.format("byte %d of %d is 0x%02x, expected 0x%02x (%d bytes differ)", first, len, have[first] & 0xFF,
                want[first] & 0xFF, differing);
    }

    private void generate(long seed, int len) {
        // eight bytes per nextLong, least significant first
        SplittableRandom r = new SplittableRandom(seed);
        int i = 0;
        while (i < len) {
            long w = r.nextLong();
            for (int k = 0; k < 8 && i < len; k++, i++) {
                want[i] = (byte) w;
                w >>>= 8;
            }
        }
    }

    /** Stafford's mix 13 (the finaliser of SplittableRandom). */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
