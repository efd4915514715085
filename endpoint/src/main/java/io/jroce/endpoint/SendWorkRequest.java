package io.jroce.endpoint;

import java.util.Arrays;

/**
 * A send work request, the software-facing WQE: wr_id, opcode, scatter/gather list, remote address and
 * rkey for RDMA and atomics, immediate data or an rkey to invalidate, flags, and a link to the next
 * request for chained posting. The endpoint copies what it needs at post time, so a request object may
 * be reused as soon as {@link QueuePair#postSend} returns.
 */
public final class SendWorkRequest {
    private static final Sge[] NO_SGES = new Sge[0];

    private long wrId;
    private WrOpcode opcode = WrOpcode.SEND;
    private Sge[] sgl = NO_SGES;
    private int flags;
    private long remoteAddr;
    private int rkey;
    private int immData;
    private int invalidateRkey;
    private long compareAdd;
    private long swap;
    private SendWorkRequest next;
    private AddressHandle ah;
    private int remoteQpn;
    private int remoteQkey;

    public SendWorkRequest() {
    }

    public SendWorkRequest(long wrId, WrOpcode opcode, Sge... sgl) {
        this.wrId = wrId;
        this.opcode = opcode;
        sgl(sgl);
    }

    public long wrId() { return wrId; }
    public WrOpcode opcode() { return opcode; }
    public Sge[] sgl() { return sgl; }
    public int flags() { return flags; }
    public long remoteAddr() { return remoteAddr; }
    public int rkey() { return rkey; }
    public int immData() { return immData; }
    public int invalidateRkey() { return invalidateRkey; }
    /** CMP_AND_SWP: the value to compare with; FETCH_AND_ADD: the value to add. */
    public long compareAdd() { return compareAdd; }
    public long swap() { return swap; }
    public SendWorkRequest next() { return next; }
    /** UD: the destination's address handle, or null. */
    public AddressHandle ah() { return ah; }
    /** UD: the destination QP number. */
    public int remoteQpn() { return remoteQpn; }
    /** UD: the Q_Key to send; one with its high-order bit set means "the QP's own Q_Key" (IBA 10.2.4). */
    public int remoteQkey() { return remoteQkey; }

    public SendWorkRequest wrId(long v) { wrId = v; return this; }
    public SendWorkRequest opcode(WrOpcode v) { opcode = v; return this; }
    public SendWorkRequest sgl(Sge... v) { sgl = v == null ? NO_SGES : v; return this; }
    public SendWorkRequest flags(int v) { flags = v; return this; }
    public SendWorkRequest signaled() { flags |= SendFlags.SIGNALED; return this; }
    public SendWorkRequest remote(long addr, int key) { remoteAddr = addr; rkey = key; return this; }
    public SendWorkRequest immData(int v) { immData = v; return this; }
    public SendWorkRequest invalidateRkey(int v) { invalidateRkey = v; return this; }
    public SendWorkRequest compareAdd(long v) { compareAdd = v; return this; }
    public SendWorkRequest swap(long v) { swap = v; return this; }
    public SendWorkRequest next(SendWorkRequest v) { next = v; return this; }

    /**
     * The UD destination ({@code ibv_send_wr.wr.ud}): address handle, remote QP number and remote Q_Key. A
     * Q_Key with its high-order bit set (e.g. 0x80000000) is replaced by the sending QP's own Q_Key (IBA
     * 10.2.4: such "controlled" Q_Keys cannot be sent from a WR); QP 1 always sends its own 0x80010000, as
     * rdma_rxe rxe_req.c init_req_packet does (rxe sends any other WR Q_Key as given).
     */
    public SendWorkRequest ud(AddressHandle ah, int remoteQpn, int remoteQkey) {
        this.ah = ah;
        this.remoteQpn = remoteQpn;
        this.remoteQkey = remoteQkey;
        return this;
    }

    /** Total bytes named by the scatter/gather list. */
    public long totalLength() {
        long n = 0;
        for (Sge s : sgl) n += s.length();
        return n;
    }

    @Override
    public String toString() {
        return "SendWorkRequest{wrId=" + wrId + ", " + opcode + ", sgl=" + Arrays.toString(sgl)
                + ", flags=" + flags + ", remote=0x" + Long.toHexString(remoteAddr) + "/0x" + Integer.toHexString(rkey) + "}";
    }
}
