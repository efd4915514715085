package io.jroce.endpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.jroce.wire.Psn;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** {@link PsnBitRing} against a plain array of booleans, over random operations that cross words and the PSN wrap. */
class PsnBitRingTest {
    private static final int SIZE = 1024;

    @Test
    void agreesWithOneBooleanPerPsn() {
        long seed = Long.getLong("jroce.seed", System.nanoTime());
        System.out.println("PsnBitRingTest seed " + seed + " (-Djroce.seed=" + seed + " repeats it)");
        Random rnd = new Random(seed);
        PsnBitRing ring = new PsnBitRing(SIZE);
        PsnBitRing except = new PsnBitRing(SIZE);
        boolean[] model = new boolean[SIZE];
        boolean[] exceptModel = new boolean[SIZE];
        int[] values = new int[SIZE];
        for (int k = 0; k < SIZE; k++) {
            values[k] = rnd.nextInt();
            exceptModel[k] = rnd.nextInt(8) == 0;
            except.set(k, exceptModel[k]);
        }
        int base = Psn.MASK - 300; // the window crosses PSN 0
        for (int step = 0; step < 20000; step++) {
            int first = Psn.add(base, rnd.nextInt(SIZE));
            int count = 1 + rnd.nextInt(Math.min(200, SIZE - Psn.distance(base, first)));
            switch (rnd.nextInt(4)) {
                case 0 -> {
                    int fresh = 0;
                    int start = rnd.nextInt();
                    int max = start;
                    for (int i = 0; i < count; i++) {
                        int k = Psn.add(first, i) & (SIZE - 1);
                        if (!model[k]) {
                            fresh++;
                            if (!exceptModel[k] && values[k] - max > 0) max = values[k];
                        }
                        model[k] = true;
                    }
                    ring.freshMax = start;
                    assertEquals(fresh, ring.setRangeMax(first, count, values, except), "setRangeMax " + first + " " + count);
                    assertEquals(max, ring.freshMax, "the newest value over the new bits outside except");
                }
                case 1 -> {
                    int was = 0;
                    for (int i = 0; i < count; i++) {
                        int k = Psn.add(first, i) & (SIZE - 1);
                        if (model[k]) was++;
                        model[k] = false;
                    }
                    assertEquals(was, ring.clearRange(first, count), "clearRange " + first + " " + count);
                }
                case 2 -> {
                    boolean v = rnd.nextBoolean();
                    ring.set(first, v);
                    model[first & (SIZE - 1)] = v;
                }
                default -> {
                    if (!model[first & (SIZE - 1)]) break;
                    int lo = first;
                    while (lo != base && model[Psn.add(lo, -1) & (SIZE - 1)]) lo = Psn.add(lo, -1);
                    assertEquals(lo, ring.runStart(first, base), "runStart of " + first);
                    int ceiling = Psn.add(base, SIZE - 1);
                    int hi = first;
                    while (hi != ceiling && model[Psn.next(hi) & (SIZE - 1)]) hi = Psn.next(hi);
                    assertEquals(hi, ring.runEnd(first, ceiling), "runEnd of " + first);
                }
            }
            for (int k = 0; k < SIZE; k += 97) assertEquals(model[k], ring.get(k), "bit " + k);
        }
    }
}
