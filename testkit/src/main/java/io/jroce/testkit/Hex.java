package io.jroce.testkit;

/** Hex strings in test data ("d4c3b2a1…", no separators) to bytes. */
public final class Hex {
    private Hex() {
    }

    public static byte[] decode(String s) {
        if (s.length() % 2 != 0) throw new IllegalArgumentException("odd number of hex digits: " + s.length());
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(s, 2 * i, 2 * i + 2, 16);
        }
        return b;
    }
}
