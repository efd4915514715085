package io.jroce.wire;

import io.netty.buffer.ByteBuf;

/**
 * Flyweight over an Invalidate Extended Transport Header (rxe_hdr.h {@code struct rxe_ieth}, 4 bytes): the R_Key the
 * responder invalidates on SEND_*_WITH_INVALIDATE. Absolute accessors only.
 */
public final class IethView {
    public static final int LENGTH = 4;

    private ByteBuf buf;
    private int off;

    public IethView wrap(ByteBuf buf, int offset) {
        this.buf = buf;
        this.off = offset;
        return this;
    }

    public int rkey() {
        return buf.getInt(off);
    }

    public IethView rkey(int rkey) {
        buf.setInt(off, rkey);
        return this;
    }
}
