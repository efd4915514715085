package io.jroce.wire;

import io.netty.buffer.ByteBuf;

/**
 * Flyweight over Immediate Data (rxe_hdr.h {@code struct rxe_immdt}, 4 opaque bytes, delivered to the receiver's completion
 * as-is). Read big-endian here, like every other header field. Absolute accessors only.
 */
public final class ImmDtView {
    public static final int LENGTH = 4;

    private ByteBuf buf;
    private int off;

    public ImmDtView wrap(ByteBuf buf, int offset) {
        this.buf = buf;
        this.off = offset;
        return this;
    }

    public int imm() {
        return buf.getInt(off);
    }

    public ImmDtView imm(int imm) {
        buf.setInt(off, imm);
        return this;
    }
}
