package io.jroce.wire.mad;

import io.netty.buffer.ByteBuf;

/**
 * Flyweight over the 24-byte common header of a Management Datagram (IBTA 13.4.2, Linux ib_mad.h
 * {@code struct ib_mad_hdr}): BaseVersion u8 @0, MgmtClass u8 @1, ClassVersion u8 @2, Method u8 @3 (R bit 0x80),
 * Status u16 @4, ClassSpecific u16 @6, TransactionID u64 @8, AttributeID u16 @16, reserved u16 @18,
 * AttributeModifier u32 @20. All fields big-endian; absolute accessors only.
 */
public final class MadHeader {
    public static final int LENGTH = 24;
    /** Every GSI MAD is 256 bytes (IB_MGMT_MAD_SIZE); the kernel MAD layer always reads a full one. */
    public static final int MAD_SIZE = 256;
    /** IB_MGMT_BASE_VERSION; mad.c validate_mad drops any other. */
    public static final int BASE_VERSION = 1;
    /** IB_MGMT_CLASS_CM, the Communication Management class. */
    public static final int MGMT_CLASS_CM = 0x07;
    /** IB_CM_CLASS_VERSION: the class version the Linux CM registers; other versions are dropped silently. */
    public static final int CM_CLASS_VERSION = 2;
    /** IB_MGMT_METHOD_SEND: every CM message is a Send (the CM never uses Get/Set/responses). */
    public static final int METHOD_SEND = 0x03;
    /** IB_MGMT_METHOD_GET, IB_MGMT_METHOD_SET and IB_MGMT_METHOD_GET_RESP (IBTA 13.4.5 Table 144). */
    public static final int METHOD_GET = 0x01;
    public static final int METHOD_SET = 0x02;
    public static final int METHOD_GET_RESP = 0x81;
    /** The R bit of Method: set in every response (ib_mad.c ib_response_mad). */
    public static final int METHOD_RESPONSE = 0x80;
    /** IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB: what the MAD layer answers a Get/Set no agent takes. */
    public static final int STATUS_UNSUPPORTED_METHOD_ATTRIB = 0x000C;
    /** IB_MGMT_CLASSPORTINFO_ATTR_ID, the ClassPortInfo attribute every class defines. */
    public static final int ATTR_CLASS_PORT_INFO = 0x0001;
    /** The QP number of the General Services Interface, where CM MADs are sent. */
    public static final int GSI_QPN = 1;

    private ByteBuf buf;
    private int off;

    public MadHeader wrap(ByteBuf buf, int offset) {
        this.buf = buf;
        this.off = offset;
        return this;
    }

    public int baseVersion() {
        return buf.getUnsignedByte(off);
    }

    public int mgmtClass() {
        return buf.getUnsignedByte(off + 1);
    }

    public int classVersion() {
        return buf.getUnsignedByte(off + 2);
    }

    public int method() {
        return buf.getUnsignedByte(off + 3);
    }

    public int status() {
        return buf.getUnsignedShort(off + 4);
    }

    public int classSpecific() {
        return buf.getUnsignedShort(off + 6);
    }

    public long transactionId() {
        return buf.getLong(off + 8);
    }

    public int attributeId() {
        return buf.getUnsignedShort(off + 16);
    }

    public int attributeModifier() {
        return buf.getInt(off + 20);
    }

    /** True for a CM-class MAD the Linux CM would accept: base version 1, class 0x07, class version 2, Send. */
    public boolean isCmSend() {
        return baseVersion() == BASE_VERSION && mgmtClass() == MGMT_CLASS_CM
                && classVersion() == CM_CLASS_VERSION && method() == METHOD_SEND;
    }

    public MadHeader baseVersion(int v) {
        buf.setByte(off, v);
        return this;
    }

    public MadHeader mgmtClass(int v) {
        buf.setByte(off + 1, v);
        return this;
    }

    public MadHeader classVersion(int v) {
        buf.setByte(off + 2, v);
        return this;
    }

    public MadHeader method(int v) {
        buf.setByte(off + 3, v);
        return this;
    }

    public MadHeader status(int v) {
        buf.setShort(off + 4, v);
        return this;
    }

    public MadHeader classSpecific(int v) {
        buf.setShort(off + 6, v);
        return this;
    }

    public MadHeader transactionId(long v) {
        buf.setLong(off + 8, v);
        return this;
    }

    public MadHeader attributeId(int v) {
        buf.setShort(off + 16, v);
        return this;
    }

    public MadHeader attributeModifier(int v) {
        buf.setInt(off + 20, v);
        return this;
    }

    /**
     * Writes all 24 bytes of a CM Send: base version 1, class 0x07, class version 2, method Send, status,
     * class-specific and the reserved field 0. The attribute modifier is 0 unless ECE is used (Linux 5.9+ carries
     * ECE options there; rdma_rxe has none).
     */
    public MadHeader writeCmSend(long transactionId, int attributeId, int attributeModifier) {
        buf.setInt(off, BASE_VERSION << 24 | MGMT_CLASS_CM << 16 | CM_CLASS_VERSION << 8 | METHOD_SEND);
        buf.setInt(off + 4, 0);
        buf.setLong(off + 8, transactionId);
        buf.setInt(off + 16, (attributeId & 0xFFFF) << 16);
        buf.setInt(off + 20, attributeModifier);
        return this;
    }
}
