package io.jroce.wire.mad;

import io.netty.buffer.ByteBuf;

/**
 * Common part of the CM message flyweights: a 256-byte MAD at an absolute buffer offset, its header, the Local
 * Communication ID (byte 24 of every CM message) and the private data. Offsets in the subclasses are from the
 * start of the MAD, i.e. 24 + the byte offset of the IBTA 12.6 tables (ibta_vol1_c12.h adds
 * {@code sizeof(struct ib_mad_hdr)} the same way). Multi-byte fields are big-endian; bit fields are numbered
 * from the most significant bit, as the tables do.
 */
public abstract class CmMessage<T extends CmMessage<T>> {
    protected ByteBuf buf;
    protected int off;
    private final MadHeader header = new MadHeader();

    /** The message this flyweight reads and writes. */
    public abstract CmAttribute attribute();

    @SuppressWarnings("unchecked")
    public T wrap(ByteBuf buf, int madOffset) {
        this.buf = buf;
        this.off = madOffset;
        header.wrap(buf, madOffset);
        return (T) this;
    }

    public ByteBuf buffer() {
        return buf;
    }

    /** Absolute index of the MAD's first byte. */
    public int offset() {
        return off;
    }

    public MadHeader header() {
        return header;
    }

    /**
     * Zeroes the whole 256-byte MAD and writes the CM Send header with this message's attribute ID; every field
     * is then 0 until set, as the kernel (which allocates MADs zeroed) sends the fields it does not use.
     */
    @SuppressWarnings("unchecked")
    public T init(long transactionId) {
        buf.setZero(off, MadHeader.MAD_SIZE);
        header.writeCmSend(transactionId, attribute().id(), 0);
        return (T) this;
    }

    public int localCommId() {
        return buf.getInt(off + 24);
    }

    @SuppressWarnings("unchecked")
    public T localCommId(int id) {
        buf.setInt(off + 24, id);
        return (T) this;
    }

    /** Copies the whole private data area ({@link CmAttribute#privateDataLength()} bytes) into dst at dstIndex. */
    public void privateData(byte[] dst, int dstIndex) {
        buf.getBytes(off + attribute().privateDataOffset(), dst, dstIndex, attribute().privateDataLength());
    }

    /** Writes len bytes of private data and zeroes the rest of the area. */
    @SuppressWarnings("unchecked")
    public T privateData(byte[] src, int srcIndex, int len) {
        int max = attribute().privateDataLength();
        if (len < 0 || len > max) {
            throw new IllegalArgumentException(attribute() + " private data is at most " + max + " bytes, not " + len);
        }
        int at = off + attribute().privateDataOffset();
        buf.setBytes(at, src, srcIndex, len);
        buf.setZero(at + len, max - len);
        return (T) this;
    }

    /** Absolute index of the first private data byte (where rdma_cm's {@link CmaHeader} starts in a REQ). */
    public int privateDataIndex() {
        return off + attribute().privateDataOffset();
    }

    // bit-field helpers: 'shift' is the position of the field's least significant bit in the byte

    protected final int bits(int at, int shift, int width) {
        return (buf.getUnsignedByte(off + at) >>> shift) & ((1 << width) - 1);
    }

    protected final void bits(int at, int shift, int width, int value) {
        int mask = ((1 << width) - 1) << shift;
        int b = buf.getUnsignedByte(off + at);
        buf.setByte(off + at, (b & ~mask) | ((value << shift) & mask));
    }

    protected final int u24(int at) {
        return buf.getUnsignedMedium(off + at);
    }

    protected final void u24(int at, int value) {
        buf.setMedium(off + at, value);
    }
}
