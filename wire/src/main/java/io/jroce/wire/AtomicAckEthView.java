package io.jroce.wire;

import io.netty.buffer.ByteBuf;

/**
 * Flyweight over an Atomic ACK Extended Transport Header (rxe_hdr.h {@code struct rxe_atmack}, 8 bytes): the remote value
 * before the atomic executed. Follows the AETH in ATOMIC_ACKNOWLEDGE. Absolute accessors only.
 */
public final class AtomicAckEthView {
    public static final int LENGTH = 8;

    private ByteBuf buf;
    private int off;

    public AtomicAckEthView wrap(ByteBuf buf, int offset) {
        this.buf = buf;
        this.off = offset;
        return this;
    }

    public long originalData() {
        return buf.getLong(off);
    }

    public AtomicAckEthView originalData(long originalData) {
        buf.setLong(off, originalData);
        return this;
    }
}
