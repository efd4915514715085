package io.jroce.wire.mad;

import io.netty.buffer.ByteBuf;

/**
 * Service ID Resolution Request, SIDR_REQ (IBTA 12.11.1 Table 115; ibta_vol1_c12.h {@code CM_SIDR_REQ_*}), a CM Send
 * with AttributeID 0x0017. MAD offsets: Request ID u32 @24, P_Key u16 @28, reserved u16 @30, Service ID u64 @32,
 * private data @40 (216 bytes; rdma_cm's 36-byte header first for the IP port spaces).
 */
public final class SidrReq {
    public static final int ATTRIBUTE_ID = 0x0017;
    public static final int PRIVATE_DATA_OFFSET = 40;
    public static final int PRIVATE_DATA_LENGTH = 216;

    private ByteBuf buf;
    private int off;
    private final MadHeader header = new MadHeader();

    public SidrReq wrap(ByteBuf buf, int madOffset) {
        this.buf = buf;
        this.off = madOffset;
        header.wrap(buf, madOffset);
        return this;
    }

    public MadHeader header() {
        return header;
    }

    /** Zeroes the 256-byte MAD and writes the CM Send header with AttributeID SIDR_REQ. */
    public SidrReq init(long transactionId) {
        buf.setZero(off, MadHeader.MAD_SIZE);
        header.writeCmSend(transactionId, ATTRIBUTE_ID, 0);
        return this;
    }

    public int requestId() { return buf.getInt(off + 24); }
    public int pkey() { return buf.getUnsignedShort(off + 28); }
    public long serviceId() { return buf.getLong(off + 32); }

    public SidrReq requestId(int v) { buf.setInt(off + 24, v); return this; }
    public SidrReq pkey(int v) { buf.setShort(off + 28, v); return this; }
    public SidrReq serviceId(long v) { buf.setLong(off + 32, v); return this; }

    /** Absolute index of the first private data byte (where rdma_cm's {@link CmaHeader} starts). */
    public int privateDataIndex() {
        return off + PRIVATE_DATA_OFFSET;
    }

    /** Writes len bytes of private data at {@code at} bytes into the area; the caller zeroed the rest (init). */
    public SidrReq privateData(int at, byte[] src, int len) {
        if (at < 0 || len < 0 || at + len > PRIVATE_DATA_LENGTH) {
            throw new IllegalArgumentException("SIDR_REQ private data is at most " + PRIVATE_DATA_LENGTH + " bytes");
        }
        buf.setBytes(off + PRIVATE_DATA_OFFSET + at, src, 0, len);
        return this;
    }
}
