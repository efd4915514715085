package io.jroce.endpoint;

/** One receive queue slot: wr_id and the scatter list, resolved to regions at post time. */
final class RecvWqe {
    long wrId;
    int numSge;
    final MemoryRegion[] sgeMr;
    final long[] sgeAddr;
    final int[] sgeLen;
    long capacity;

    RecvWqe(int maxSge) {
        sgeMr = new MemoryRegion[maxSge];
        sgeAddr = new long[maxSge];
        sgeLen = new int[maxSge];
    }
}
