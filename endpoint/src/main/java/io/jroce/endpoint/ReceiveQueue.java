package io.jroce.endpoint;

/**
 * The receive queue of a QP: a ring of SGE-only {@link RecvWqe}s, consumed strictly in order by the
 * responder, one per SEND or RDMA WRITE with immediate (rxe_resp.c takes the RQ head). Running dry is RNR.
 */
final class ReceiveQueue extends WorkQueue<RecvWqe> {
    ReceiveQueue(int maxWr, int maxSge) {
        super(slots(maxWr, maxSge));
    }

    private static RecvWqe[] slots(int maxWr, int maxSge) {
        RecvWqe[] s = new RecvWqe[maxWr + 1];
        for (int i = 0; i < s.length; i++) s[i] = new RecvWqe(maxSge);
        return s;
    }
}
