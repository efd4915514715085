package io.jroce.endpoint;

import io.jroce.wire.RocePacket;

/**
 * The IBA transport's loss recovery (IBA 9.7.6.1; rdma_rxe rxe_comp.c and rxe_req.c req_retry): a sequence NAK,
 * a timeout or a READ response past a gap rewinds the requester to the first missing PSN and everything after it
 * is sent again. It keeps no state: the completer's own fields are the whole of it.
 */
final class GoBackN implements LossRecovery {
    private final Completer comp;

    GoBackN(Completer comp) {
        this.comp = comp;
    }

    @Override
    public void reset(int startPsn) {
    }

    @Override
    public void sent(int psn) {
    }

    @Override
    public boolean pastWindow(int span, int limit) {
        return span >= limit;
    }

    @Override
    public int windowCeiling(int ceiling) {
        return ceiling;
    }

    @Override
    public boolean mayTimeRoundTrip() {
        return true;
    }

    @Override
    public long defaultProbeNanos() {
        return 0;
    }

    @Override
    public void advanced(int unackedPsn) {
    }

    @Override
    public int creditReturned(int acked) {
        return acked;
    }

    @Override
    public boolean ackPastReadMeansLoss() {
        return true;
    }

    @Override
    public void onSequenceNak(int psn, int msn) {
        comp.qp().counters.seqNaksReceived++;
        comp.retry(psn);
    }

    @Override
    public void onReadResponse(SendWqe w, RocePacket p, int psn, int expected) {
        comp.readResponseInOrder(w, p, psn, expected);
    }

    @Override
    public int readHoleRun(SendWqe w) {
        return Completer.packets(w) - w.respPkts;
    }

    @Override
    public boolean onTimeout() {
        comp.retryFromHead();
        return false;
    }
}
