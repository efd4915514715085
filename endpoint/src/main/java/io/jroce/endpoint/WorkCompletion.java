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

    long wrId;
    WcStatus status;
    WcOpcode opcode;
    int vendorErr;
    int byteLen;
    int immData;
    int invalidatedRkey;
    int qpNum;
    int flags;

    public long wrId() { return wrId; }
    public WcStatus status() { return status; }
    public WcOpcode opcode() { return opcode; }
    public int vendorErr() { return vendorErr; }
    public int byteLen() { return byteLen; }
    public int immData() { return immData; }
    public int invalidatedRkey() { return invalidatedRkey; }
    public int qpNum() { return qpNum; }
    public int flags() { return flags; }
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
                + ", qp=0x" + Integer.toHexString(qpNum) + "}";
    }
}
