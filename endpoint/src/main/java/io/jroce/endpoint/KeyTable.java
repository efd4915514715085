package io.jroce.endpoint;

import io.netty.util.collection.IntObjectHashMap;

import java.security.SecureRandom;

/**
 * The device's memory keys. Keys are 32 random bits from a {@link SecureRandom}, so a peer cannot guess an
 * rkey it was not given (1 in 2^32 per try). Lookups are lock-free reads of an immutable snapshot;
 * registration copies the table, which is rare compared with the per-packet lookups.
 */
final class KeyTable {
    private final SecureRandom random = new SecureRandom();
    private volatile IntObjectHashMap<MemoryRegion> byLkey = new IntObjectHashMap<>();
    private volatile IntObjectHashMap<MemoryRegion> byRkey = new IntObjectHashMap<>();

    synchronized int[] newKeys() {
        int lkey;
        int rkey;
        do {
            lkey = random.nextInt();
        } while (lkey == 0 || byLkey.containsKey(lkey));
        do {
            rkey = random.nextInt();
        } while (rkey == 0 || byRkey.containsKey(rkey));
        return new int[] {lkey, rkey};
    }

    synchronized void add(MemoryRegion mr) {
        IntObjectHashMap<MemoryRegion> l = new IntObjectHashMap<>(byLkey.size() * 2 + 2);
        l.putAll(byLkey);
        l.put(mr.lkey(), mr);
        IntObjectHashMap<MemoryRegion> r = new IntObjectHashMap<>(byRkey.size() * 2 + 2);
        r.putAll(byRkey);
        r.put(mr.rkey(), mr);
        byLkey = l;
        byRkey = r;
    }

    synchronized void remove(MemoryRegion mr) {
        IntObjectHashMap<MemoryRegion> l = new IntObjectHashMap<>(byLkey.size() * 2 + 2);
        l.putAll(byLkey);
        l.remove(mr.lkey());
        IntObjectHashMap<MemoryRegion> r = new IntObjectHashMap<>(byRkey.size() * 2 + 2);
        r.putAll(byRkey);
        r.remove(mr.rkey());
        byLkey = l;
        byRkey = r;
    }

    MemoryRegion byLkey(int lkey) {
        return byLkey.get(lkey);
    }

    MemoryRegion byRkey(int rkey) {
        return byRkey.get(rkey);
    }

    int size() {
        return byLkey.size();
    }
}
