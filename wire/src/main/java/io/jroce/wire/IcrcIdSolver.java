package io.jroce.wire;

/**
 * GF(2) algebra behind {@link Icrc#verifyIpv4UnknownId}: recovers the IPv4 Identification (and the DF bit)
 * that an ICRC was computed over.
 *
 * <p>Why it works: for messages of one length, CRC-32 is affine, {@code crc(m ^ e) = crc(m) ^ raw(e)}, where
 * {@code raw} is the CRC register run from 0 without init or final XOR, which is linear. Two ICRCs of the
 * same packet that differ only in the ID bits therefore differ by {@code raw(idBytes) * x^(8k)} mod P, where
 * k is the number of bytes covered after them. Multiplying the difference by {@code x^(-8k)} ("unshifting")
 * cancels the length, leaving {@code v(id)}, a fixed injective linear map from 16 bits to 32 bits. A packet
 * is consistent iff the unshifted difference lies in the 16-dimensional image of {@code v}; the ID is then
 * read off a reduced echelon basis of that image. Only the unshift constant depends on the length (one int
 * per UDP payload length, cached); the basis is computed once.
 *
 * <p>Polynomials use the reflected bit order of {@link java.util.zip.CRC32}'s register: bit {@code 31-i}
 * holds the coefficient of {@code x^i}.
 */
final class IcrcIdSolver {
    /** IEEE 802.3 CRC-32 polynomial without its x^32 term, reflected. */
    static final int POLY = 0xEDB88320;
    /** The polynomial 1. */
    static final int ONE = 0x80000000;
    /** The polynomial x. */
    static final int X = 0x40000000;
    /**
     * x^-1 mod P. P = x^32 + Q with Q(0) = 1, so x * (x^31 + (Q - 1)/x) = P + 1 = 1 mod P: drop Q's constant
     * term, divide by x (a left shift in reflected order) and add x^31 (bit 0).
     */
    static final int X_INV = ((POLY ^ ONE) << 1) | 1;

    /** Largest UDP payload an IPv4 datagram can carry: 65535 - 20 - 8. */
    static final int MAX_IPV4_UDP_PAYLOAD = 65_507;

    /**
     * The unknowns sit at pseudo-header bytes 12..15 (ID, flags+fragment). The "anchor" is the end of that
     * word, byte 16: with a UDP payload of len bytes, the ICRC covers 36 + (len - 4) bytes, so
     * len + 16 bytes follow the anchor.
     */
    private static final int BYTES_AFTER_ANCHOR_MINUS_LEN = 16;

    private static final int X_INV_8 = pow(X_INV, 8);

    /** x^-8(len+16) by UDP payload length, 0 = not computed yet. Racy but benign: ints are written whole and every thread computes the same value. */
    private static final int[] UNSHIFT = new int[MAX_IPV4_UDP_PAYLOAD + 1];

    /** Reduced echelon basis of the image of v: VEC[j] has bit PIVOT[j] set and no other vector has it. */
    private static final int[] VEC = new int[16];
    private static final int[] PIVOT = new int[16];
    /** Which ID bits XOR together to give VEC[j]. */
    private static final int[] COMBO = new int[16];

    /** Unshifted ICRC difference between DF clear and DF set (byte 14 bit 0x40, the flags word 0x4000). */
    static final int DF_DELTA = raw(0, 0, 0x40, 0);

    static {
        for (int i = 0; i < 16; i++) {
            int id = 1 << i;
            int v = raw(id >>> 8, id & 0xFF, 0, 0);
            int combo = id;
            for (int j = 0; j < i; j++) {
                if ((v & PIVOT[j]) != 0) {
                    v ^= VEC[j];
                    combo ^= COMBO[j];
                }
            }
            if (v == 0) {
                throw new AssertionError("ID columns are dependent"); // impossible: x^32 is invertible mod P
            }
            int pivot = Integer.lowestOneBit(v);
            for (int j = 0; j < i; j++) {
                if ((VEC[j] & pivot) != 0) {
                    VEC[j] ^= v;
                    COMBO[j] ^= combo;
                }
            }
            VEC[i] = v;
            PIVOT[i] = pivot;
            COMBO[i] = combo;
        }
        if (solve(DF_DELTA) >= 0) {
            throw new AssertionError("DF bit is not independent of the ID bits");
        }
    }

    private IcrcIdSolver() {
    }

    /**
     * The ID whose contribution is the unshifted difference {@code w}, or -1 if no 16-bit ID produces it.
     * Branch-free: each basis vector is taken iff w has its pivot bit, and the rest must cancel exactly.
     */
    static int solve(int w) {
        int acc = 0;
        int id = 0;
        for (int j = 0; j < 16; j++) {
            int take = (w & PIVOT[j]) != 0 ? -1 : 0;
            acc ^= VEC[j] & take;
            id ^= COMBO[j] & take;
        }
        return acc == w ? id : -1;
    }

    /** Moves an ICRC difference from the end of a len-byte UDP payload back to the anchor. */
    static int unshift(int len, int diff) {
        int c = UNSHIFT[len];
        if (c == 0) {
            c = pow(X_INV_8, len + BYTES_AFTER_ANCHOR_MINUS_LEN);
            UNSHIFT[len] = c;
        }
        return mulmod(diff, c);
    }

    /** a * b mod P. Branch-free (the bits of a are data), so it costs the same for every input. */
    static int mulmod(int a, int b) {
        int p = 0;
        for (int i = 0; i < 32; i++) {
            p ^= b & ((a << i) >> 31);         // add b * x^i if a has the x^i coefficient (bit 31-i)
            b = (b >>> 1) ^ (POLY & -(b & 1)); // b *= x
        }
        return p;
    }

    /** a^e mod P, square and multiply. */
    static int pow(int a, int e) {
        int r = ONE;
        while (e != 0) {
            if ((e & 1) != 0) {
                r = mulmod(r, a);
            }
            a = mulmod(a, a);
            e >>>= 1;
        }
        return r;
    }

    /** The register after feeding these bytes to a CRC-32 register that starts at 0 (no init, no final XOR). */
    static int raw(int... bytes) {
        int r = 0;
        for (int b : bytes) {
            r ^= b & 0xFF;
            for (int k = 0; k < 8; k++) {
                r = (r >>> 1) ^ (POLY & -(r & 1));
            }
        }
        return r;
    }
}
