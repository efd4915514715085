package io.jroce.wire;

import io.netty.buffer.ByteBuf;

/**
 * Flyweight over an ACK Extended Transport Header (rxe_hdr.h {@code struct rxe_aeth}, 4 bytes): syndrome u8, MSN u24.
 * Decode the syndrome with {@link Aeth}. Absolute accessors only; never moves the buffer's indices.
 */
public final class AethView {
    public static final int LENGTH = 4;

    private ByteBuf buf;
    private int off;

    public AethView wrap(ByteBuf buf, int offset) {
        this.buf = buf;
        this.off = offset;
        return this;
    }

    public int syndrome() {
        return buf.getUnsignedByte(off);
    }

    public int msn() {
        return buf.getUnsignedMedium(off + 1);
    }

    public AethView syndrome(int syndrome) {
        buf.setByte(off, syndrome);
        return this;
    }

    /** Truncated to 24 bits: the MSN counts modulo 2^24. */
    public AethView msn(int msn) {
        buf.setMedium(off + 1, msn);
        return this;
    }

    public AethView write(int syndrome, int msn) {
        buf.setInt(off, (syndrome & 0xFF) << 24 | (msn & Aeth.MSN_MASK));
        return this;
    }
}
