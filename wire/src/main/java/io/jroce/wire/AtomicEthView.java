package io.jroce.wire;

import io.netty.buffer.ByteBuf;

/**
 * Flyweight over an Atomic Extended Transport Header (rxe_hdr.h {@code struct rxe_atmeth}, 28 bytes, packed):
 * VA u64 @0, R_Key u32 @8, Swap/Add u64 @12, Compare u64 @20. FETCH_ADD puts its addend in Swap/Add and
 * leaves Compare 0 (rxe_req.c). Absolute accessors only; never moves the buffer's indices.
 */
public final class AtomicEthView {
    public static final int LENGTH = 28;

    private ByteBuf buf;
    private int off;

    public AtomicEthView wrap(ByteBuf buf, int offset) {
        this.buf = buf;
        this.off = offset;
        return this;
    }

    public long va() {
        return buf.getLong(off);
    }

    public int rkey() {
        return buf.getInt(off + 8);
    }

    public long swapAdd() {
        return buf.getLong(off + 12);
    }

    public long compare() {
        return buf.getLong(off + 20);
    }

    public AtomicEthView va(long va) {
        buf.setLong(off, va);
        return this;
    }

    public AtomicEthView rkey(int rkey) {
        buf.setInt(off + 8, rkey);
        return this;
    }

    public AtomicEthView swapAdd(long swapAdd) {
        buf.setLong(off + 12, swapAdd);
        return this;
    }

    public AtomicEthView compare(long compare) {
        buf.setLong(off + 20, compare);
        return this;
    }

    public AtomicEthView write(long va, int rkey, long swapAdd, long compare) {
        buf.setLong(off, va);
        buf.setInt(off + 8, rkey);
        buf.setLong(off + 12, swapAdd);
        buf.setLong(off + 20, compare);
        return this;
    }
}
