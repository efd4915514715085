package io.jroce.endpoint;

/**
 * A work completion. Poll fills caller-owned instances, so polling allocates nothing.
 *
 * <p>On a failed completion only {@link #wrId}, {@link #status}, {@link #qpNum} and {@link #vendorErr}
 * are defined; the other fields are left as they were and must not be read (the CQE seed's rule).
 */
public final class WorkCompletion {
    /** {@link #flags} bit: {@link #immData} is valid. */
    public static final int WITH_IMM = 1;
    /** {@link #flags} bit: {@link #invalidatedRkey} is valid. */
    public static final int WITH_INV = 1 << 1;
    /** {@link #flags} bit: the receive buffer starts with a GRH (every UD receive). */
    static final int GRH = 1 << 2;

    /** {@link #wcFlags} bit {@code IBV_WC_GRH}: the first 40 bytes of the receive buffer hold a GRH. */
    public static final int WC_GRH = 1;
    /** {@link #wcFlags} bit {@code IBV_WC_WITH_IMM}: {@link #immData} is valid. */
    public static final int WC_WITH_IMM = 1 << 1;
    /** {@link #wcFlags} bit {@code IBV_WC_WITH_INV}: {@link #invalidatedRkey} is valid. */
    public static final int WC_WITH_INV = 1 << 3;

    long wrId;
    WcStatus status;
    WcOpcode opcode;
    int vendorErr;
    int byteLen;
    int immData;
    int invalidatedRkey;
    int qpNum;
    int flags;
    int srcQp;

    public long wrId() { return wrId; }
    public WcStatus status() { return status; }
    public WcOpcode opcode() { return opcode; }
    public int vendorErr() { return vendorErr; }
    public int byteLen() { return byteLen; }
    public int immData() { return immData; }
    public int invalidatedRkey() { return invalidatedRkey; }
    public int qpNum() { return qpNum; }
    /** This endpoint's flag bits ({@link #WITH_IMM}, {@link #WITH_INV}); see {@link #wcFlags} for the verbs encoding. */
    public int flags() { return flags; }
    /**
     * The flags in {@code ibv_wc.wc_flags} encoding: {@link #WC_GRH} (a UD receive: the buffer starts with the
     * 40-byte GRH area), {@link #WC_WITH_IMM}, {@link #WC_WITH_INV}.
     */
    public int wcFlags() {
        return ((flags & GRH) != 0 ? WC_GRH : 0) | ((flags & WITH_IMM) != 0 ? WC_WITH_IMM : 0)
                | ((flags & WITH_INV) != 0 ? WC_WITH_INV : 0);
    }
    /** UD receive: the sender's QP number (from the DETH); 0 for RC completions. */
    public int srcQp() { return srcQp; }
    /** UD receive: the P_Key index the datagram matched; always 0 (the P_Key table has one entry). */
    public int pkeyIndex() { return 0; }
    public boolean hasGrh() { return (flags & GRH) != 0; }
    public boolean hasImm() { return (flags & WITH_IMM) != 0; }
    public boolean hasInv() { return (flags & WITH_INV) != 0; }
    public boolean ok() { return status == WcStatus.SUCCESS; }

    public WorkCompletion copy() {
        WorkCompletion c = new WorkCompletion();
        c.wrId = wrId;
        c.status = status;
        c.opcode = opcode;
        c.vendorErr = vendorErr;
        c.byteLen = byteLen;
        c.immData = immData;
        c.invalidatedRkey = invalidatedRkey;
        c.qpNum = qpNum;
        c.flags = flags;
        c.srcQp = srcQp;
        return c;
    }

    @Override
    public String toString() {
        if (status != WcStatus.SUCCESS) {
            return "WC{wrId=" + wrId + ", " + status + ", qp=0x" + Integer.toHexString(qpNum) + ", vendorErr=" + vendorErr + "}";
        }
        return "WC{wrId=" + wrId + ", " + status + ", " + opcode + ", len=" + byteLen
                + (hasImm() ? ", imm=0x" + Integer.toHexString(immData) : "")
                + (hasInv() ? ", inv=0x" + Integer.toHexString(invalidatedRkey) : "")
                + (hasGrh() ? ", grh, src_qp=0x" + Integer.toHexString(srcQp) : "")
                + ", qp=0x" + Integer.toHexString(qpNum) + "}";
    }
}
