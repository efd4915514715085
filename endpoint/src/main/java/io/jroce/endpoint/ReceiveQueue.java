package io.jroce.endpoint;

/**
 * The receive queue of a QP: a ring of SGE-only {@link RecvWqe}s, consumed strictly in order by the
 * responder, one per SEND or RDMA WRITE with immediate (rxe_resp.c takes the RQ head). Running dry is RNR.
 */
final class ReceiveQueue extends WorkQueue<RecvWqe> {
    ReceiveQueue(int maxWr, int maxSge) {
        super(new RecvWqe[maxWr + 1], () -> new RecvWqe(maxSge));
    }
}
