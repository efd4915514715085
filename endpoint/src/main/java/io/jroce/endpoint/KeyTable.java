package io.jroce.endpoint;

import java.security.SecureRandom;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The device's memory keys. Keys are 32 random bits from a {@link SecureRandom}, so a peer cannot guess an
 * rkey it was not given (1 in 2^32 per try).
 *
 * <p>Lookups (one or two per packet) take no lock and allocate nothing. Each key maps through an open-addressing
 * table (linear probing; 0 is never a key, so it marks an empty slot) whose slots are written in place by
 * registration, under this object's lock: the region first, then the key, both with volatile writes, so a lookup
 * that finds the key finds its region. Deregistration clears the region and leaves the key as a tombstone, so the
 * probe sequences through it stay intact. A table that fills to half its slots (tombstones counted) is rebuilt at
 * four times its live entries and published whole; a lookup still on the old table sees it as it was. Registration
 * is amortised constant time: registering n regions costs O(n), not the O(n^2) of copying a table on every change
 * (with 8192 regions, as 4096 QPs of perftest take, that copying was 64 of a client's 224 Java samples in a JFR
 * profile of the whole run).
 */
final class KeyTable {
    private static final int MIN_SLOTS = 64;

    private final SecureRandom random = new SecureRandom();
    private volatile Slots byLkey = new Slots(MIN_SLOTS);
    private volatile Slots byRkey = new Slots(MIN_SLOTS);
    /** Live regions (writers only, under the lock). */
    private int live;

    synchronized int[] newKeys() {
        int lkey;
        int rkey;
        do {
            lkey = random.nextInt();
        } while (lkey == 0 || byLkey.get(lkey) != null);
        do {
            rkey = random.nextInt();
        } while (rkey == 0 || byRkey.get(rkey) != null);
        return new int[] {lkey, rkey};
    }

    synchronized void add(MemoryRegion mr) {
        byLkey = byLkey.withRoomFor(live + 1);
        byRkey = byRkey.withRoomFor(live + 1);
        byLkey.put(mr.lkey(), mr);
        byRkey.put(mr.rkey(), mr);
        live++;
    }

    synchronized void remove(MemoryRegion mr) {
        if (byLkey.clear(mr.lkey(), mr) | byRkey.clear(mr.rkey(), mr)) live--;
    }

    MemoryRegion byLkey(int lkey) {
        return byLkey.get(lkey);
    }

    MemoryRegion byRkey(int rkey) {
        return byRkey.get(rkey);
    }

    synchronized int size() {
        return live;
    }

    /** One key's table: slots of key and region, a power of two of them. */
    private static final class Slots {
        final AtomicIntegerArray keys;
        final AtomicReferenceArray<MemoryRegion> regions;
        final int mask;
        /** Slots holding a key, live or a tombstone (writers only). */
        int used;

        Slots(int slots) {
            keys = new AtomicIntegerArray(slots);
            regions = new AtomicReferenceArray<>(slots);
            mask = slots - 1;
        }

        private static int home(int key) {
            return key * 0x9E3779B9; // Fibonacci hashing: random keys need little, but callers' tests may not be random
        }

        MemoryRegion get(int key) {
            if (key == 0) return null;
            for (int i = home(key) & mask; ; i = (i + 1) & mask) {
                int k = keys.get(i);
                if (k == key) return regions.get(i);
                if (k == 0) return null;
            }
        }

        /** This table if one more entry keeps it at most half full, else a rebuilt one with the live entries. */
        Slots withRoomFor(int liveAfter) {
            if ((used + 1) * 2 <= keys.length()) return this;
            int slots = Integer.highestOneBit(Math.max(MIN_SLOTS, liveAfter * 4) - 1) << 1;
            Slots t = new Slots(slots);
            for (int i = 0; i < keys.length(); i++) {
                MemoryRegion mr = regions.get(i);
                if (mr != null) t.put(keys.get(i), mr);
            }
            return t;
        }

        void put(int key, MemoryRegion mr) {
            for (int i = home(key) & mask; ; i = (i + 1) & mask) {
                int k = keys.get(i);
                if (k == key || k == 0) {
                    regions.set(i, mr); // before the key: a lookup that finds the key finds its region
                    if (k == 0) {
                        keys.set(i, key);
                        used++;
                    }
                    return;
                }
            }
        }

        /** Clears {@code key}'s region if it is {@code mr}; true if it was. */
        boolean clear(int key, MemoryRegion mr) {
            for (int i = home(key) & mask; ; i = (i + 1) & mask) {
                int k = keys.get(i);
                if (k == key) return regions.compareAndSet(i, mr, null);
                if (k == 0) return false;
            }
        }
    }
}
