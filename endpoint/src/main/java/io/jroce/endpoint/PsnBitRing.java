package io.jroce.endpoint;

import io.jroce.wire.Psn;

/**
 * One bit per PSN of a window of {@code size} PSNs (a power of two, so that it divides the 24-bit PSN space and a
 * PSN keeps its bit across the wrap), kept in longs so that runs are set, cleared and measured a word at a time.
 * The caller keeps every PSN it asks about inside one window.
 */
final class PsnBitRing {
    private final long[] words;
    private final int mask;

    PsnBitRing(int size) {
        if (Integer.bitCount(size) != 1 || size < 64) throw new IllegalArgumentException("size must be a power of two >= 64");
        words = new long[size >>> 6];
        mask = size - 1;
    }

    boolean get(int psn) {
        int i = psn & mask;
        return (words[i >>> 6] & (1L << i)) != 0;
    }

    void set(int psn, boolean v) {
        int i = psn & mask;
        if (v) words[i >>> 6] |= 1L << i;
        else words[i >>> 6] &= ~(1L << i);
    }

    /**
     * Sets the bits of {@code count} PSNs from {@code first}; returns how many were clear. Leaves in {@link #freshMax}
     * the largest of {@code values[psn & (size - 1)]} over the bits that were clear and are clear in {@code except}
     * (a ring of the same size), compared as sequence numbers that may wrap (unchanged when there is none).
     */
    int setRangeMax(int first, int count, int[] values, PsnBitRing except) {
        int fresh = 0;
        int i = first & mask;
        while (count > 0) {
            int b = i & 63;
            int n = Math.min(64 - b, count);
            long m = n == 64 ? -1L : ((1L << n) - 1) << b;
            int wi = i >>> 6;
            long w = words[wi];
            long f = m & ~w;
            if (f != 0) {
                fresh += Long.bitCount(f);
                for (long r = f & ~except.words[wi]; r != 0; r &= r - 1) {
                    int v = values[(wi << 6) + Long.numberOfTrailingZeros(r)];
                    if (v - freshMax > 0) freshMax = v;
                }
                words[wi] = w | m;
            }
            i = (i + n) & mask;
            count -= n;
        }
        return fresh;
    }

    /** See {@link #setRangeMax}. */
    int freshMax;

    /** Clears the bits of {@code count} PSNs from {@code first}; returns how many were set. */
    int clearRange(int first, int count) {
        int was = 0;
        int i = first & mask;
        count = Math.min(count, mask + 1);
        while (count > 0) {
            int b = i & 63;
            int n = Math.min(64 - b, count);
            long m = n == 64 ? -1L : ((1L << n) - 1) << b;
            long w = words[i >>> 6];
            was += Long.bitCount(m & w);
            words[i >>> 6] = w & ~m;
            i = (i + n) & mask;
            count -= n;
        }
        return was;
    }

    void clear() {
        java.util.Arrays.fill(words, 0L);
    }

    /** The first PSN of the run of set bits that ends at {@code psn} (set), going down no further than {@code floor}. */
    int runStart(int psn, int floor) {
        int room = Psn.distance(floor, psn);
        int down = 0;
        int i = psn & mask;
        while (down < room) {
            int prev = (i - 1) & mask;
            if ((prev & 63) == 63 && room - down >= 64 && words[prev >>> 6] == -1L) {
                down += 64;
                i = (i - 64) & mask;
                continue;
            }
            if ((words[prev >>> 6] & (1L << prev)) == 0) break;
            down++;
            i = prev;
        }
        return Psn.add(psn, -down);
    }

    /** The last PSN of the run of set bits that starts at {@code psn} (set), going up no further than {@code ceiling}. */
    int runEnd(int psn, int ceiling) {
        int room = Psn.distance(psn, ceiling);
        int up = 0;
        int i = psn & mask;
        while (up < room) {
            int next = (i + 1) & mask;
            if ((next & 63) == 0 && room - up >= 64 && words[next >>> 6] == -1L) {
                up += 64;
                i = (i + 64) & mask;
                continue;
            }
            if ((words[next >>> 6] & (1L << next)) == 0) break;
            up++;
            i = next;
        }
        return Psn.add(psn, up);
    }
}
