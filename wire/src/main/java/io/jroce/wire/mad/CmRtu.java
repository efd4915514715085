package io.jroce.wire.mad;

/**
 * Ready To Use, RTU (IBTA 12.6.9 Table 111; ibta_vol1_c12.h {@code CM_RTU_*}): Local Comm ID @24, Remote Comm ID
 * @28, private data @32 (224 bytes).
 */
public final class CmRtu extends CmMessage<CmRtu> {

    @Override
    public CmAttribute attribute() {
        return CmAttribute.RTU;
    }

    public int remoteCommId() {
        return buf.getInt(off + 28);
    }

    public CmRtu remoteCommId(int v) {
        buf.setInt(off + 28, v);
        return this;
    }
}
