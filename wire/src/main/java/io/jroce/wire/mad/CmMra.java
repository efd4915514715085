package io.jroce.wire.mad;

/**
 * Message Receipt Acknowledgement, MRA (IBTA 12.6.6 Table 107; ibta_vol1_c12.h {@code CM_MRA_*}). MAD offsets:
 * Local Comm ID @24, Remote Comm ID @28, Message MRAed b7-6 of byte 32, Service Timeout b7-3 of byte 33, private
 * data @34 (222 bytes).
 */
public final class CmMra extends CmMessage<CmMra> {
    /** Message MRAed values (Table 107). */
    public static final int MRAED_REQ = 0;
    public static final int MRAED_REP = 1;
    public static final int MRAED_LAP = 2;

    @Override
    public CmAttribute attribute() {
        return CmAttribute.MRA;
    }

    public int remoteCommId() {
        return buf.getInt(off + 28);
    }

    public int messageMraed() {
        return bits(32, 6, 2);
    }

    public int serviceTimeout() {
        return bits(33, 3, 5);
    }

    public CmMra remoteCommId(int v) {
        buf.setInt(off + 28, v);
        return this;
    }

    public CmMra messageMraed(int v) {
        bits(32, 6, 2, v);
        return this;
    }

    public CmMra serviceTimeout(int v) {
        bits(33, 3, 5, v);
        return this;
    }
}
