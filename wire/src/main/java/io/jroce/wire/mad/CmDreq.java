package io.jroce.wire.mad;

/**
 * Request for Communication Release, DREQ (IBTA 12.6.10 Table 112; ibta_vol1_c12.h {@code CM_DREQ_*}): Local Comm
 * ID @24, Remote Comm ID @28, Remote QPN/EECN u24 @32, private data @36 (220 bytes). Linux drops a DREQ whose
 * Remote QPN is not the receiver's QPN (cm.c cm_dreq_handler).
 */
public final class CmDreq extends CmMessage<CmDreq> {

    @Override
    public CmAttribute attribute() {
        return CmAttribute.DREQ;
    }

    public int remoteCommId() {
        return buf.getInt(off + 28);
    }

    public int remoteQpn() {
        return u24(32);
    }

    public CmDreq remoteCommId(int v) {
        buf.setInt(off + 28, v);
        return this;
    }

    public CmDreq remoteQpn(int v) {
        u24(32, v);
        return this;
    }
}
