package io.jroce.wire.mad;

/**
 * Reply to Request for Communication Release, DREP (IBTA 12.6.11 Table 113; ibta_vol1_c12.h {@code CM_DREP_*}):
 * Local Comm ID @24, Remote Comm ID @28, private data @32 (224 bytes).
 */
public final class CmDrep extends CmMessage<CmDrep> {

    @Override
    public CmAttribute attribute() {
        return CmAttribute.DREP;
    }

    public int remoteCommId() {
        return buf.getInt(off + 28);
    }

    public CmDrep remoteCommId(int v) {
        buf.setInt(off + 28, v);
        return this;
    }
}
