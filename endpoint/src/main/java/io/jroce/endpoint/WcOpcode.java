package io.jroce.endpoint;

/**
 * Completion opcodes (libibverbs {@code IBV_WC_*}). The receive side has its own vocabulary: RECV and
 * RECV_RDMA_WITH_IMM never appear on the send side, so a poller tells the two apart with one compare.
 */
public enum WcOpcode {
    SEND, RDMA_WRITE, RDMA_READ, COMP_SWAP, FETCH_ADD, RECV, RECV_RDMA_WITH_IMM;

    public boolean isReceive() {
        return this == RECV || this == RECV_RDMA_WITH_IMM;
    }
}
