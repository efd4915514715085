package io.jroce.wire.mad;

/**
 * Reply to Request for Communication, REP (IBTA 12.6.8 Table 110; ibta_vol1_c12.h {@code CM_REP_*}). MAD offsets:
 * Local Comm ID @24, Remote Comm ID @28, Local Q_Key @32, Local QPN u24 @36, VendorID_H @39, Local EECN u24 @40,
 * VendorID_M @43, Starting PSN u24 @44, VendorID_L @47, Responder Resources @48, Initiator Depth @49; byte 50:
 * Target ACK Delay b7-3, Failover Accepted b2-1, End-to-End Flow Control b0; byte 51: RNR Retry Count b7-5, SRQ b4;
 * Local CA GUID @52; private data @60 (196 bytes).
 */
public final class CmRep extends CmMessage<CmRep> {

    @Override
    public CmAttribute attribute() {
        return CmAttribute.REP;
    }

    public int remoteCommId() {
        return buf.getInt(off + 28);
    }

    public int localQkey() {
        return buf.getInt(off + 32);
    }

    public int localQpn() {
        return u24(36);
    }

    public int localEecn() {
        return u24(40);
    }

    public int startingPsn() {
        return u24(44);
    }

    /** The 24-bit ECE vendor ID spread over bytes 39, 43 and 47 (high, middle, low). */
    public int vendorId() {
        return buf.getUnsignedByte(off + 39) << 16 | buf.getUnsignedByte(off + 43) << 8 | buf.getUnsignedByte(off + 47);
    }

    public int responderResources() {
        return buf.getUnsignedByte(off + 48);
    }

    public int initiatorDepth() {
        return buf.getUnsignedByte(off + 49);
    }

    public int targetAckDelay() {
        return bits(50, 3, 5);
    }

    public int failoverAccepted() {
        return bits(50, 1, 2);
    }

    public boolean endToEndFlowControl() {
        return bits(50, 0, 1) != 0;
    }

    public int rnrRetryCount() {
        return bits(51, 5, 3);
    }

    public boolean srq() {
        return bits(51, 4, 1) != 0;
    }

    public long localCaGuid() {
        return buf.getLong(off + 52);
    }

    public CmRep remoteCommId(int v) {
        buf.setInt(off + 28, v);
        return this;
    }

    public CmRep localQkey(int v) {
        buf.setInt(off + 32, v);
        return this;
    }

    public CmRep localQpn(int v) {
        u24(36, v);
        return this;
    }

    public CmRep localEecn(int v) {
        u24(40, v);
        return this;
    }

    public CmRep startingPsn(int v) {
        u24(44, v);
        return this;
    }

    public CmRep vendorId(int v) {
        buf.setByte(off + 39, v >>> 16);
        buf.setByte(off + 43, v >>> 8);
        buf.setByte(off + 47, v);
        return this;
    }

    public CmRep responderResources(int v) {
        buf.setByte(off + 48, v);
        return this;
    }

    public CmRep initiatorDepth(int v) {
        buf.setByte(off + 49, v);
        return this;
    }

    public CmRep targetAckDelay(int v) {
        bits(50, 3, 5, v);
        return this;
    }

    public CmRep failoverAccepted(int v) {
        bits(50, 1, 2, v);
        return this;
    }

    public CmRep endToEndFlowControl(boolean v) {
        bits(50, 0, 1, v ? 1 : 0);
        return this;
    }

    public CmRep rnrRetryCount(int v) {
        bits(51, 5, 3, v);
        return this;
    }

    public CmRep srq(boolean v) {
        bits(51, 4, 1, v ? 1 : 0);
        return this;
    }

    public CmRep localCaGuid(long v) {
        buf.setLong(off + 52, v);
        return this;
    }
}
