package io.jroce.endpoint;

/** Send work request opcodes (libibverbs {@code IBV_WR_*}). */
public enum WrOpcode {
    SEND(WcOpcode.SEND),
    SEND_WITH_IMM(WcOpcode.SEND),
    SEND_WITH_INV(WcOpcode.SEND),
    RDMA_WRITE(WcOpcode.RDMA_WRITE),
    RDMA_WRITE_WITH_IMM(WcOpcode.RDMA_WRITE),
    RDMA_READ(WcOpcode.RDMA_READ),
    ATOMIC_CMP_AND_SWP(WcOpcode.COMP_SWAP),
    ATOMIC_FETCH_AND_ADD(WcOpcode.FETCH_ADD);

    private final WcOpcode completion;

    WrOpcode(WcOpcode completion) {
        this.completion = completion;
    }

    /** The opcode the send-side completion reports. */
    public WcOpcode completionOpcode() {
        return completion;
    }

    public boolean isSend() {
        return this == SEND || this == SEND_WITH_IMM || this == SEND_WITH_INV;
    }

    public boolean isWrite() {
        return this == RDMA_WRITE || this == RDMA_WRITE_WITH_IMM;
    }

    public boolean isAtomic() {
        return this == ATOMIC_CMP_AND_SWP || this == ATOMIC_FETCH_AND_ADD;
    }

    /** READ and atomics need a response and count against max_rd_atomic. */
    public boolean isReadOrAtomic() {
        return this == RDMA_READ || isAtomic();
    }

    /** Operations whose local SGEs are written to (the results land there). */
    public boolean writesLocalMemory() {
        return isReadOrAtomic();
    }
}
