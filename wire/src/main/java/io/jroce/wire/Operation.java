package io.jroce.wire;

/** The operation an {@link Opcode} belongs to, ignoring its position and optional headers. */
public enum Operation {
    SEND,
    RDMA_WRITE,
    RDMA_READ_REQUEST,
    RDMA_READ_RESPONSE,
    ACKNOWLEDGE,
    ATOMIC_ACKNOWLEDGE,
    COMPARE_SWAP,
    FETCH_ADD,
    /** RoCEv2 Congestion Notification Packet (opcode 0x81, BECN set, 16 reserved bytes). */
    CNP
}
