package io.jroce.endpoint;

/** One receive queue slot: wr_id and the scatter list, resolved to regions at post time. */
final class RecvWqe {
    long wrId;
    int numSge;
    final MemoryRegion[] sgeMr;
    final long[] sgeAddr;
    final int[] sgeLen;
    long capacity;
    /**
     * Posted with an SGE that names no usable region (postRecv with faults in the completion): the status it
     * completes with if a message reaches that SGE; null otherwise.
     */
    WcStatus fault;

    RecvWqe(int maxSge) {
        sgeMr = new MemoryRegion[maxSge];
        sgeAddr = new long[maxSge];
        sgeLen = new int[maxSge];
    }
}
