package io.jroce.cli.soak;

/**
 * The operations of a soak round, each verified where its bytes land: SEND and RDMA WRITE by the server, the
 * server's REPLY (a SEND back), the RDMA READ and the FETCH_AND_ADD by the client.
 */
enum SoakOp {
    SEND, WRITE, READ, ATOMIC, REPLY;

    static final SoakOp[] ALL = values();
}
