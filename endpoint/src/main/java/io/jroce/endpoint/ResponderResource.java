package io.jroce.endpoint;

/**
 * A responder resource (IBA 9.7.5.1.3; rdma_rxe rxe_resp.c {@code struct resp_res}): what the responder
 * remembers of a READ or atomic request so a duplicate can be answered without re-executing it. A READ
 * also carries its response stream's cursor. The QP holds {@code max_dest_rd_atomic} of them.
 */
final class ResponderResource {
    boolean atomic;
    boolean valid;
    int firstPsn;
    int lastPsn;
    long va;
    int rkey;
    long length;
    MemoryRegion mr;
    // atomic: the saved answer
    long original;
    int msn;
    // READ response stream
    boolean streaming;
    int nextPsn;
    long nextVa;
    long remaining;
    boolean firstOfStream;
}
