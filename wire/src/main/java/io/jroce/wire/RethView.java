package io.jroce.wire;

import io.netty.buffer.ByteBuf;

/**
 * Flyweight over an RDMA Extended Transport Header (rxe_hdr.h {@code struct rxe_reth}, 16 bytes): VA u64, R_Key u32,
 * DMA Length u32. The DMA length is the whole message length, not this packet's payload (rxe_req.c puts the
 * WQE length there), and is unsigned on the wire: use {@link #dmaLengthUnsigned()} when comparing.
 * Absolute accessors only; never moves the buffer's indices.
 */
public final class RethView {
    public static final int LENGTH = 16;

    private ByteBuf buf;
    private int off;

    public RethView wrap(ByteBuf buf, int offset) {
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

    /** Raw 32 bits; negative for lengths of 2^31 and more. */
    public int dmaLength() {
        return buf.getInt(off + 12);
    }

    public long dmaLengthUnsigned() {
        return buf.getUnsignedInt(off + 12);
    }

    public RethView va(long va) {
        buf.setLong(off, va);
        return this;
    }

    public RethView rkey(int rkey) {
        buf.setInt(off + 8, rkey);
        return this;
    }

    public RethView dmaLength(int dmaLength) {
        buf.setInt(off + 12, dmaLength);
        return this;
    }

    public RethView write(long va, int rkey, int dmaLength) {
        buf.setLong(off, va);
        buf.setInt(off + 8, rkey);
        buf.setInt(off + 12, dmaLength);
        return this;
    }
}
