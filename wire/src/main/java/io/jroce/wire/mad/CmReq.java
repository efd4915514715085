package io.jroce.wire.mad;

import io.netty.buffer.ByteBuf;

/**
 * ConnectRequest, REQ (IBTA 12.6.5 Table 106; Linux ibta_vol1_c12.h {@code CM_REQ_*}). MAD offsets: Local Comm ID
 * @24, VendorID u24 @29 (ECE), Service ID @32, Local CA GUID @40, Local Q_Key @52, Local QPN u24 @56, Responder
 * Resources @59, Local EECN u24 @60, Initiator Depth @63, Remote EECN u24 @64; byte 67: Remote CM Response Timeout
 * b7-3, Transport Service Type b2-1, End-to-End Flow Control b0; Starting PSN u24 @68; byte 71: Local CM Response
 * Timeout b7-3, Retry Count b2-0; P_Key @72; byte 74: Path MTU b7-4, RDC Exists b3, RNR Retry Count b2-0; byte 75:
 * Max CM Retries b7-4, SRQ b3, Extended Transport Type b2-0; primary path @76, alternate path @120 (its last byte
 * also holds SAP Supported, b2); private data @164 (92 bytes).
 */
public final class CmReq extends CmMessage<CmReq> {
    public static final int PRIMARY_PATH = 76;
    public static final int ALTERNATE_PATH = 120;
    /** Transport Service Type values (Table 106). */
    public static final int TRANSPORT_RC = 0;
    public static final int TRANSPORT_UC = 1;
    public static final int TRANSPORT_XRC = 3;

    private final CmPath primary = new CmPath();
    private final CmPath alternate = new CmPath();

    @Override
    public CmAttribute attribute() {
        return CmAttribute.REQ;
    }

    @Override
    public CmReq wrap(ByteBuf buf, int madOffset) {
        super.wrap(buf, madOffset);
        primary.wrap(buf, madOffset + PRIMARY_PATH);
        alternate.wrap(buf, madOffset + ALTERNATE_PATH);
        return this;
    }

    public CmPath primaryPath() {
        return primary;
    }

    /** All zero when there is none: Linux assumes an alternate path when its local LID is not 0 (cm_req_has_alt_path). */
    public CmPath alternatePath() {
        return alternate;
    }

    public int vendorId() {
        return u24(29);
    }

    public long serviceId() {
        return buf.getLong(off + 32);
    }

    public long localCaGuid() {
        return buf.getLong(off + 40);
    }

    public int localQkey() {
        return buf.getInt(off + 52);
    }

    public int localQpn() {
        return u24(56);
    }

    public int responderResources() {
        return buf.getUnsignedByte(off + 59);
    }

    public int localEecn() {
        return u24(60);
    }

    public int initiatorDepth() {
        return buf.getUnsignedByte(off + 63);
    }

    public int remoteEecn() {
        return u24(64);
    }

    public int remoteCmResponseTimeout() {
        return bits(67, 3, 5);
    }

    public int transportServiceType() {
        return bits(67, 1, 2);
    }

    public boolean endToEndFlowControl() {
        return bits(67, 0, 1) != 0;
    }

    public int startingPsn() {
        return u24(68);
    }

    public int localCmResponseTimeout() {
        return bits(71, 3, 5);
    }

    public int retryCount() {
        return bits(71, 0, 3);
    }

    public int pkey() {
        return buf.getUnsignedShort(off + 72);
    }

    /** IB MTU enum: 1 = 256 .. 5 = 4096 bytes. */
    public int pathMtu() {
        return bits(74, 4, 4);
    }

    public boolean rdcExists() {
        return bits(74, 3, 1) != 0;
    }

    public int rnrRetryCount() {
        return bits(74, 0, 3);
    }

    public int maxCmRetries() {
        return bits(75, 4, 4);
    }

    public boolean srq() {
        return bits(75, 3, 1) != 0;
    }

    public int extendedTransportType() {
        return bits(75, 0, 3);
    }

    public boolean sapSupported() {
        return bits(163, 2, 1) != 0;
    }

    public CmReq vendorId(int v) {
        u24(29, v);
        return this;
    }

    public CmReq serviceId(long v) {
        buf.setLong(off + 32, v);
        return this;
    }

    public CmReq localCaGuid(long v) {
        buf.setLong(off + 40, v);
        return this;
    }

    public CmReq localQkey(int v) {
        buf.setInt(off + 52, v);
        return this;
    }

    public CmReq localQpn(int v) {
        u24(56, v);
        return this;
    }

    public CmReq responderResources(int v) {
        buf.setByte(off + 59, v);
        return this;
    }

    public CmReq localEecn(int v) {
        u24(60, v);
        return this;
    }

    public CmReq initiatorDepth(int v) {
        buf.setByte(off + 63, v);
        return this;
    }

    public CmReq remoteEecn(int v) {
        u24(64, v);
        return this;
    }

    public CmReq remoteCmResponseTimeout(int v) {
        bits(67, 3, 5, v);
        return this;
    }

    public CmReq transportServiceType(int v) {
        bits(67, 1, 2, v);
        return this;
    }

    public CmReq endToEndFlowControl(boolean v) {
        bits(67, 0, 1, v ? 1 : 0);
        return this;
    }

    public CmReq startingPsn(int v) {
        u24(68, v);
        return this;
    }

    public CmReq localCmResponseTimeout(int v) {
        bits(71, 3, 5, v);
        return this;
    }

    public CmReq retryCount(int v) {
        bits(71, 0, 3, v);
        return this;
    }

    public CmReq pkey(int v) {
        buf.setShort(off + 72, v);
        return this;
    }

    public CmReq pathMtu(int v) {
        bits(74, 4, 4, v);
        return this;
    }

    public CmReq rdcExists(boolean v) {
        bits(74, 3, 1, v ? 1 : 0);
        return this;
    }

    public CmReq rnrRetryCount(int v) {
        bits(74, 0, 3, v);
        return this;
    }

    public CmReq maxCmRetries(int v) {
        bits(75, 4, 4, v);
        return this;
    }

    public CmReq srq(boolean v) {
        bits(75, 3, 1, v ? 1 : 0);
        return this;
    }

    public CmReq extendedTransportType(int v) {
        bits(75, 0, 3, v);
        return this;
    }

    public CmReq sapSupported(boolean v) {
        bits(163, 2, 1, v ? 1 : 0);
        return this;
    }
}
