package io.jroce.endpoint;

import io.jroce.wire.Psn;
import io.netty.buffer.ByteBuf;

/**
 * The selective-repeat responder's store of requests that arrived past a gap: one slot per PSN in
 * (ePSN, ePSN + capacity), holding a copy of the whole datagram, so the packet can be executed later exactly
 * as if it had just arrived. Bounded: a packet further ahead than the window is refused (the caller drops and
 * counts it). Slots are byte arrays reused across gaps; nothing is reference counted.
 */
final class ReorderBuffer {
    private final int capacity;
    private final byte[][] data;
    private final int[] length;
    private final boolean[] present;
    private int count;

    ReorderBuffer(int capacity) {
        if (Integer.bitCount(capacity) != 1) throw new IllegalArgumentException("capacity must be a power of two");
        this.capacity = capacity;
        data = new byte[capacity][];
        length = new int[capacity];
        present = new boolean[capacity];
    }

    /** True if {@code psn} lies inside the window that starts after {@code ePsn}. */
    boolean fits(int ePsn, int psn) {
        return Psn.distance(ePsn, psn) < capacity;
    }

    boolean has(int psn) {
        return count > 0 && present[psn & (capacity - 1)];
    }

    /** Keeps a copy of {@code len} bytes at {@code off}; false if the PSN was already held. */
    boolean put(int psn, ByteBuf buf, int off, int len) {
        int i = psn & (capacity - 1);
        if (present[i]) return false;
        byte[] d = data[i];
        if (d == null || d.length < len) d = data[i] = new byte[Math.max(len, 1088)];
        buf.getBytes(off, d, 0, len);
        length[i] = len;
        present[i] = true;
        count++;
        return true;
    }

    /** The bytes held for {@code psn} (valid until the slot is reused); removes the entry. */
    byte[] take(int psn) {
        int i = psn & (capacity - 1);
        present[i] = false;
        count--;
        return data[i];
    }

    int length(int psn) {
        return length[psn & (capacity - 1)];
    }

    int size() {
        return count;
    }

    void clear() {
        java.util.Arrays.fill(present, false);
        count = 0;
    }
}
