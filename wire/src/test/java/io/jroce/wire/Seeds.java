package io.jroce.wire;

/** Seed for randomized tests: -Djroce.seed=N to replay, otherwise random (and printed). */
final class Seeds {
    private static final long SEED = pick();

    private Seeds() {
    }

    private static long pick() {
        String s = System.getProperty("jroce.seed");
        long seed = s != null && !s.isBlank() ? Long.parseLong(s.trim()) : System.nanoTime() ^ 0x5DEECE66DL;
        System.out.println("jroce.seed=" + seed + " (rerun with -Djroce.seed=" + seed + ")");
        return seed;
    }

    static long seed() {
        return SEED;
    }
}
