package io.jroce.wire.mad;

import io.netty.buffer.ByteBuf;

/**
 * Service ID Resolution Response, SIDR_REP (IBTA 12.11.2 Table 116; ibta_vol1_c12.h {@code CM_SIDR_REP_*}), a CM
 * Send with AttributeID 0x0018. MAD offsets: Request ID u32 @24, Status u8 @28, Additional Information Length u8 @29,
 * reserved u16 @30, QPN in the upper 24 bits of @32, Service ID u64 @36, Q_Key u32 @44, Additional Information
 * (ClassPortInfo for a redirect) @48 (72 bytes), private data @120 (136 bytes).
 */
public final class SidrRep {
    public static final int ATTRIBUTE_ID = 0x0018;
    public static final int PRIVATE_DATA_OFFSET = 120;
    public static final int PRIVATE_DATA_LENGTH = 136;
    /** Status values (Table 117; ib_cm.h enum ib_cm_sidr_status). */
    public static final int SUCCESS = 0;
    public static final int UNSUPPORTED = 1;
    public static final int REJECT = 2;
    public static final int NO_QP = 3;
    public static final int REDIRECT = 4;
    public static final int UNSUPPORTED_VERSION = 5;

    private ByteBuf buf;
    private int off;
    private final MadHeader header = new MadHeader();

    public SidrRep wrap(ByteBuf buf, int madOffset) {
        this.buf = buf;
        this.off = madOffset;
        header.wrap(buf, madOffset);
        return this;
    }

    public MadHeader header() {
        return header;
    }

    /** Zeroes the 256-byte MAD and writes the CM Send header with AttributeID SIDR_REP. */
    public SidrRep init(long transactionId) {
        buf.setZero(off, MadHeader.MAD_SIZE);
        header.writeCmSend(transactionId, ATTRIBUTE_ID, 0);
        return this;
    }

    public int requestId() { return buf.getInt(off + 24); }
    public int status() { return buf.getUnsignedByte(off + 28); }
    public int additionalInfoLength() { return buf.getUnsignedByte(off + 29); }
    public int qpn() { return buf.getUnsignedMedium(off + 32); }
    public long serviceId() { return buf.getLong(off + 36); }
    public int qkey() { return buf.getInt(off + 44); }

    public SidrRep requestId(int v) { buf.setInt(off + 24, v); return this; }
    public SidrRep status(int v) { buf.setByte(off + 28, v); return this; }
    public SidrRep qpn(int v) { buf.setMedium(off + 32, v); return this; }
    public SidrRep serviceId(long v) { buf.setLong(off + 36, v); return this; }
    public SidrRep qkey(int v) { buf.setInt(off + 44, v); return this; }

    /** Copies the whole 136-byte private data area into dst at dstIndex. */
    public void copyPrivateData(byte[] dst, int dstIndex) {
        buf.getBytes(off + PRIVATE_DATA_OFFSET, dst, dstIndex, PRIVATE_DATA_LENGTH);
    }

    /** Writes len bytes of private data and zeroes the rest of the area. */
    public SidrRep privateData(byte[] src, int len) {
        if (len < 0 || len > PRIVATE_DATA_LENGTH) {
            throw new IllegalArgumentException("SIDR_REP private data is at most " + PRIVATE_DATA_LENGTH + " bytes, not " + len);
        }
        buf.setBytes(off + PRIVATE_DATA_OFFSET, src, 0, len);
        buf.setZero(off + PRIVATE_DATA_OFFSET + len, PRIVATE_DATA_LENGTH - len);
        return this;
    }
}
