package io.jroce.wire;

import io.netty.buffer.ByteBuf;

/**
 * Flyweight over a Datagram Extended Transport Header (rxe_hdr.h {@code struct rxe_deth}, 8 bytes): Q_Key u32 @0,
 * reserved u8 @4, Source QP u24 @5. Carried by every UD packet. Absolute accessors only.
 */
public final class DethView {
    public static final int LENGTH = 8;

    private ByteBuf buf;
    private int off;

    public DethView wrap(ByteBuf buf, int offset) {
        this.buf = buf;
        this.off = offset;
        return this;
    }

    public int qkey() {
        return buf.getInt(off);
    }

    public int srcQp() {
        return buf.getInt(off + 4) & 0xFFFFFF;
    }

    public DethView qkey(int qkey) {
        buf.setInt(off, qkey);
        return this;
    }

    public DethView srcQp(int srcQp) {
        buf.setMedium(off + 5, srcQp);
        return this;
    }

    /** Writes all 8 bytes; the reserved byte is 0. */
    public DethView write(int qkey, int srcQp) {
        buf.setInt(off, qkey);
        buf.setInt(off + 4, srcQp & 0xFFFFFF);
        return this;
    }
}
