package io.jroce.endpoint;

/**
 * One send queue slot: the work request as copied at post time (SGEs resolved to regions, inline bytes
 * copied), plus the requester's and completer's progress on it. Slots are allocated once with the queue.
 */
final class SendWqe {
    long wrId;
    WrOpcode opcode;
    int flags;
    boolean signaled;
    int numSge;
    final MemoryRegion[] sgeMr;
    final long[] sgeAddr;
    final int[] sgeLen;
    byte[] inline;      // non-null when INLINE: the payload copied at post time (this slot's inlineBuffer)
    private byte[] inlineBuffer; // made at the slot's first inline post, reused after
    int length;         // total message length in bytes
    long remoteAddr;
    int rkey;
    int immData;
    int invalidateRkey;
    long compareAdd;
    long swap;
    // UD: the destination copied at post time (ibv_send_wr.wr.ud)
    AddressHandle ah;
    int remoteQpn;
    int remoteQkey;
    /**
     * SEND or WRITE posted with an SGE that names no usable region (postSend with faults in the completion): the
     * status it completes with when the requester reaches it, and nothing of it is sent; null otherwise.
     */
    WcStatus fault;

    // requester progress
    boolean started;    // PSNs assigned
    int firstPsn;
    int lastPsn;
    int npkts;          // PSNs this message uses
    int nextPkt;        // next packet index to transmit
    int sentHigh;       // packets transmitted at least once (retransmissions are below it)
    boolean flowCounted; // READ/atomic: its packets are in the QP's flow-control count (once, not per retry)
    // completer progress
    int respPkts;       // READ response packets accepted
    boolean done;

    SendWqe(int maxSge) {
        sgeMr = new MemoryRegion[maxSge];
        sgeAddr = new long[maxSge];
        sgeLen = new int[maxSge];
    }

    /** The slot's buffer for inline data of up to {@code max} bytes (the QP's max_inline_data). */
    byte[] inlineBuffer(int max) {
        if (inlineBuffer == null) inlineBuffer = new byte[max];
        return inlineBuffer;
    }

    /**
     * A slot claimed by a post that failed while filling it: it still reaches the requester, as a SEND that fails
     * with a local QP operation error and sends nothing, so the ring never waits for it.
     */
    void failAtPost(long id) {
        wrId = id;
        opcode = WrOpcode.SEND;
        flags = 0;
        signaled = true;
        numSge = 0;
        length = 0;
        inline = null;
        ah = null;
        fault = WcStatus.LOC_QP_OP_ERR;
        resetProgress();
    }

    boolean fullySent() {
        return started && nextPkt >= (opcode.isReadOrAtomic() ? 1 : npkts);
    }

    void resetProgress() {
        started = false;
        nextPkt = 0;
        sentHigh = 0;
        flowCounted = false;
        respPkts = 0;
        done = false;
    }
}
