package io.jroce.wire.mad;

/**
 * Reject, REJ (IBTA 12.6.7 Table 108; ibta_vol1_c12.h {@code CM_REJ_*}). MAD offsets: Local Comm ID @24, Remote
 * Comm ID @28, Message Rejected b7-6 of byte 32, Reject Info Length b7-1 of byte 33, Reason u16 @34, Additional
 * Reject Information @36 (72 bytes), private data @108 (148 bytes).
 */
public final class CmRej extends CmMessage<CmRej> {
    public static final int ARI_OFFSET = 36;
    public static final int ARI_LENGTH = 72;
    /** Message Rejected values (Table 108). */
    public static final int REJECTED_REQ = 0;
    public static final int REJECTED_REP = 1;
    public static final int REJECTED_OTHER = 2;

    /** Reason names by code (IBTA Table 109; Linux ib_cm.h {@code enum ib_cm_rej_reason}), index = code. */
    private static final String[] REASONS = {
        null, "NO_QP", "NO_EEC", "NO_RESOURCES", "TIMEOUT", "UNSUPPORTED", "INVALID_COMM_ID",
        "INVALID_COMM_INSTANCE", "INVALID_SERVICE_ID", "INVALID_TRANSPORT_TYPE", "STALE_CONN", "RDC_NOT_EXIST",
        "INVALID_GID", "INVALID_LID", "INVALID_SL", "INVALID_TRAFFIC_CLASS", "INVALID_HOP_LIMIT",
        "INVALID_PACKET_RATE", "INVALID_ALT_GID", "INVALID_ALT_LID", "INVALID_ALT_SL", "INVALID_ALT_TRAFFIC_CLASS",
        "INVALID_ALT_HOP_LIMIT", "INVALID_ALT_PACKET_RATE", "PORT_CM_REDIRECT", "PORT_REDIRECT", "INVALID_MTU",
        "INSUFFICIENT_RESP_RESOURCES", "CONSUMER_DEFINED", "INVALID_RNR_RETRY", "DUPLICATE_LOCAL_COMM_ID",
        "INVALID_CLASS_VERSION", "INVALID_FLOW_LABEL", "INVALID_ALT_FLOW_LABEL",
    };

    /** The ib_cm.h name of a reject reason, or "REASON_n" for codes it does not name (e.g. vendor ones). */
    public static String reasonName(int reason) {
        return reason > 0 && reason < REASONS.length ? REASONS[reason] : "REASON_" + reason;
    }

    @Override
    public CmAttribute attribute() {
        return CmAttribute.REJ;
    }

    public int remoteCommId() {
        return buf.getInt(off + 28);
    }

    public int messageRejected() {
        return bits(32, 6, 2);
    }

    public int rejectInfoLength() {
        return bits(33, 1, 7);
    }

    public int reason() {
        return buf.getUnsignedShort(off + 34);
    }

    /** Copies the 72-byte Additional Reject Information into dst at dstIndex. */
    public void ari(byte[] dst, int dstIndex) {
        buf.getBytes(off + ARI_OFFSET, dst, dstIndex, ARI_LENGTH);
    }

    public CmRej remoteCommId(int v) {
        buf.setInt(off + 28, v);
        return this;
    }

    public CmRej messageRejected(int v) {
        bits(32, 6, 2, v);
        return this;
    }

    public CmRej rejectInfoLength(int v) {
        bits(33, 1, 7, v);
        return this;
    }

    public CmRej reason(int v) {
        buf.setShort(off + 34, v);
        return this;
    }

    /** Writes len bytes of ARI, zeroes the rest of the 72 bytes, and sets Reject Info Length to len. */
    public CmRej ari(byte[] src, int srcIndex, int len) {
        if (len < 0 || len > ARI_LENGTH) {
            throw new IllegalArgumentException("ARI is at most 72 bytes, not " + len);
        }
        buf.setBytes(off + ARI_OFFSET, src, srcIndex, len);
        buf.setZero(off + ARI_OFFSET + len, ARI_LENGTH - len);
        return rejectInfoLength(len);
    }
}
