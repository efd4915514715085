package io.jroce.endpoint;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

/** The key table against a map: registrations and deregistrations in random order, every key looked up after each. */
class KeyTableTest {
    private static final ByteBuffer EMPTY = ByteBuffer.allocateDirect(0);

    private static MemoryRegion region(int lkey, int rkey) {
        return new MemoryRegion(null, EMPTY, 0, 0, lkey, rkey);
    }

    @Test
    void lookupsFollowRegistrationAndDeregistration() {
        long seed = Long.getLong("seed", System.nanoTime());
        System.out.println("KeyTableTest seed " + seed);
        Random rnd = new Random(seed);
        KeyTable t = new KeyTable();
        Map<Integer, MemoryRegion> lkeys = new HashMap<>();
        Map<Integer, MemoryRegion> rkeys = new HashMap<>();
        List<MemoryRegion> live = new ArrayList<>();
        List<MemoryRegion> gone = new ArrayList<>();
        for (int step = 0; step < 20_000; step++) {
            // grow to a few thousand, then churn: tombstones pile up and force rebuilds
            if (live.isEmpty() || rnd.nextInt(10) < (live.size() < 3000 ? 7 : 4)) {
                int[] k = t.newKeys();
                MemoryRegion mr = region(k[0], k[1]);
                t.add(mr);
                live.add(mr);
                lkeys.put(k[0], mr);
                rkeys.put(k[1], mr);
            } else {
                MemoryRegion mr = live.remove(rnd.nextInt(live.size()));
                t.remove(mr);
                gone.add(mr);
                lkeys.remove(mr.lkey());
                rkeys.remove(mr.rkey());
            }
            if (step % 997 == 0) checkAll(t, live, gone, lkeys, rkeys, seed);
        }
        checkAll(t, live, gone, lkeys, rkeys, seed);
        assertNull(t.byLkey(0), "0 is never a key");
        assertNull(t.byRkey(0));
    }

    private static void checkAll(KeyTable t, List<MemoryRegion> live, List<MemoryRegion> gone, Map<Integer, MemoryRegion> lkeys,
                                 Map<Integer, MemoryRegion> rkeys, long seed) {
        assertEquals(live.size(), t.size(), "seed " + seed);
        for (MemoryRegion mr : live) {
            assertSame(mr, t.byLkey(mr.lkey()), "seed " + seed);
            assertSame(mr, t.byRkey(mr.rkey()), "seed " + seed);
        }
        for (MemoryRegion mr : gone) {
            assertSame(lkeys.get(mr.lkey()), t.byLkey(mr.lkey()), "a deregistered key finds nothing; seed " + seed);
            assertSame(rkeys.get(mr.rkey()), t.byRkey(mr.rkey()), "seed " + seed);
        }
    }

    /** Keys that collide in the table's hash still find their own regions, before and after one is removed. */
    @Test
    void collidingKeysProbeOnAndSurviveARemovalBetweenThem() {
        KeyTable t = new KeyTable();
        // keys k * 2^26 hash to slots that differ only above bit 26 of the product: all share slot 0 of 64
        MemoryRegion a = region(1 << 26, 11);
        MemoryRegion b = region(2 << 26, 12);
        MemoryRegion c = region(3 << 26, 13);
        t.add(a);
        t.add(b);
        t.add(c);
        t.remove(b);
        assertSame(a, t.byLkey(1 << 26));
        assertNull(t.byLkey(2 << 26));
        assertSame(c, t.byLkey(3 << 26), "the probe goes on past the removed key");
        t.add(b);
        assertSame(b, t.byLkey(2 << 26), "a key registered again takes its old slot");
        assertEquals(3, t.size());
    }
}
