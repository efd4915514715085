package io.jroce.endpoint;

import io.jroce.wire.Psn;
import io.netty.buffer.ByteBuf;

/**
 * The selective-repeat responder's store of requests that arrived past a gap: one slot per PSN in
 * (ePSN, ePSN + capacity), holding a copy of the whole datagram, so the packet can be executed later exactly
 * as if it had just arrived. Bounded: a packet further ahead than the window is refused (the caller drops and
 * counts it), and so is one that would take the bytes the transport's stores retain together past
 * {@link Transport#REORDER_RETAINED_MAX}. Slots are byte arrays reused while a gap lasts; the responder
 * {@link #release}s them when the store empties; nothing is reference counted.
 */
final class ReorderBuffer {
    /** {@link #put}: stored, already held, refused for want of room. */
    static final int STORED = 1;
    static final int HELD_ALREADY = 0;
    static final int NO_ROOM = -1;

    private final EngineContext ctx;
    private final int capacity;
    private final byte[][] data;
    private final int[] length;
    private final PsnBitRing present;
    /** Held PSNs whose bytes were placed on arrival: only the PSN and its AckReq are kept, no copy. */
    private final PsnBitRing placed;
    private int count;

    ReorderBuffer(int capacity, EngineContext ctx) {
        if (Integer.bitCount(capacity) != 1) throw new IllegalArgumentException("capacity must be a power of two");
        this.ctx = ctx;
        this.capacity = capacity;
        data = new byte[capacity][];
        length = new int[capacity];
        present = new PsnBitRing(capacity);
        placed = new PsnBitRing(capacity);
    }

    /** True if {@code psn} lies inside the window that starts after {@code ePsn}. */
    boolean fits(int ePsn, int psn) {
        return Psn.distance(ePsn, psn) < capacity;
    }

    boolean has(int psn) {
        return count > 0 && present.get(psn);
    }

    /** Keeps a copy of {@code len} bytes at {@code off}: {@link #STORED}, {@link #HELD_ALREADY} or {@link #NO_ROOM}. */
    int put(int psn, ByteBuf buf, int off, int len) {
        int i = psn & (capacity - 1);
        if (present.get(psn)) return HELD_ALREADY;
        byte[] d = data[i];
        if (d == null || d.length < len) {
            int size = Math.max(len, 1088);
            int grows = size - (d == null ? 0 : d.length);
            if (!ctx.reserveReorderBytes(grows)) return NO_ROOM;
            d = data[i] = new byte[size];
        }
        buf.getBytes(off, d, 0, len);
        length[i] = len;
        present.set(psn, true);
        count++;
        return STORED;
    }

    /** Notes {@code psn} as held with its bytes already placed (a WRITE MIDDLE of the message in progress). */
    void putPlaced(int psn, boolean ackReq) {
        present.set(psn, true);
        placed.set(psn, true);
        length[psn & (capacity - 1)] = ackReq ? 1 : 0;
        count++;
    }

    /** Whether the held {@code psn} was placed on arrival ({@link #putPlaced}). */
    boolean isPlaced(int psn) {
        return placed.get(psn);
    }

    /** Removes a placed entry; returns its AckReq. */
    boolean takePlaced(int psn) {
        present.set(psn, false);
        placed.set(psn, false);
        count--;
        return length[psn & (capacity - 1)] != 0;
    }

    /** The bytes held for {@code psn} (valid until the slot is reused); removes the entry. */
    byte[] take(int psn) {
        present.set(psn, false);
        count--;
        return data[psn & (capacity - 1)];
    }

    /** The first PSN of the run of held PSNs that ends at {@code psn} (held), after {@code ePsn}. */
    int runStart(int ePsn, int psn) {
        return present.runStart(psn, Psn.next(ePsn));
    }

    /** The last PSN of the run of held PSNs that starts at {@code psn} (held), inside the window after {@code ePsn}. */
    int runEnd(int ePsn, int psn) {
        return present.runEnd(psn, Psn.add(ePsn, capacity - 1));
    }

    int length(int psn) {
        return length[psn & (capacity - 1)];
    }

    int size() {
        return count;
    }

    void clear() {
        present.clear();
        placed.clear();
        count = 0;
    }

    /** Empties the store and gives its slots' bytes back to the transport's budget. */
    void release() {
        clear();
        for (int i = 0; i < capacity; i++) {
            if (data[i] != null) {
                ctx.releaseReorderBytes(data[i].length);
                data[i] = null;
            }
        }
    }
}
