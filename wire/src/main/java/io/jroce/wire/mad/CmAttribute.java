package io.jroce.wire.mad;

/**
 * The connection-establishment and release messages of the CM class (IBTA 12.6, Table 104 attribute IDs) with
 * where each one's private data lies in the 256-byte MAD and how long it is (Linux ib_cm.h
 * {@code enum ib_cm_data_size}; include/rdma/ibta_vol1_c12.h {@code CM_*_PRIVATE_DATA}).
 */
public enum CmAttribute {
    REQ(0x0010, 164, 92),
    MRA(0x0011, 34, 222),
    REJ(0x0012, 108, 148),
    REP(0x0013, 60, 196),
    RTU(0x0014, 32, 224),
    DREQ(0x0015, 36, 220),
    DREP(0x0016, 32, 224);

    private static final CmAttribute[] BY_ID = new CmAttribute[DREP.id - REQ.id + 1];

    static {
        for (CmAttribute a : values()) {
            BY_ID[a.id - REQ.id] = a;
        }
    }

    private final int id;
    private final int privateDataOffset;
    private final int privateDataLength;

    CmAttribute(int id, int privateDataOffset, int privateDataLength) {
        this.id = id;
        this.privateDataOffset = privateDataOffset;
        this.privateDataLength = privateDataLength;
    }

    /** The AttributeID of the MAD header. */
    public int id() {
        return id;
    }

    /** Offset of the private data from the start of the MAD (header included). */
    public int privateDataOffset() {
        return privateDataOffset;
    }

    public int privateDataLength() {
        return privateDataLength;
    }

    /** The message with this AttributeID, or null (LAP, APR, SIDR, ClassPortInfo and unknown ones). */
    public static CmAttribute of(int attributeId) {
        int i = attributeId - REQ.id;
        return i >= 0 && i < BY_ID.length ? BY_ID[i] : null;
    }
}
