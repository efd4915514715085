package io.jroce.wire;

/**
 * 24-bit packet sequence number arithmetic (PSNs wrap modulo 2^24: IBA 9.7.1; rxe.h {@code psn_compare}).
 * Ordering uses a half window of 2^23, exactly like rxe.h {@code psn_compare}: shift the 32-bit difference
 * left by 8 so the sign of the 24-bit difference lands in bit 31.
 *
 * <p>Boundary (inherited from rxe): for a distance of exactly 2^23 both {@code compare(a, b)} and
 * {@code compare(b, a)} are negative, i.e. each is "before" the other. So a PSN 1..2^23-1 ahead is later,
 * and one 1..2^23 behind is earlier.
 */
public final class Psn {
    public static final int MASK = 0xFFFFFF;
    public static final int HALF_WINDOW = 1 << 23;

    private Psn() {
    }

    public static int next(int psn) {
        return (psn + 1) & MASK;
    }

    /** psn + n modulo 2^24; n may be negative. */
    public static int add(int psn, int n) {
        return (psn + n) & MASK;
    }

    /** How many steps forward from {@code from} to {@code to}, 0..2^24-1. */
    public static int distance(int from, int to) {
        return (to - from) & MASK;
    }

    /** &gt;0 if a is later than b, &lt;0 if earlier, 0 if equal (int overflow intended). */
    public static int compare(int a, int b) {
        return (a - b) << 8;
    }

    public static boolean isAfter(int a, int b) {
        return compare(a, b) > 0;
    }

    public static boolean isBefore(int a, int b) {
        return compare(a, b) < 0;
    }

    public static boolean isAtOrBefore(int a, int b) {
        return compare(a, b) <= 0;
    }

    public static boolean isAtOrAfter(int a, int b) {
        return compare(a, b) >= 0;
    }
}
