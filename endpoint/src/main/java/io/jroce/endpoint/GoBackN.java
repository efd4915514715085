package io.jroce.endpoint;

import io.jroce.wire.RocePacket;

/**
 * The IBA transport's loss recovery (IBA 9.7.6.1; rdma_rxe rxe_comp.c and rxe_req.c req_retry): a sequence NAK,
 * a timeout or a READ response past a gap rewinds the requester to the first missing PSN and everything after it
 * is sent again. After a local ACK timeout the resend starts with {@link #RESTART_WINDOW} packet in flight and the window
 * doubles with each acknowledgement that makes progress, back to the full window (TCP's restart after a retransmission
 * timeout, RFC 5681 3.1): a timeout means the responder or the path fell behind, and the whole window sent again at
 * once would only deepen its backlog with duplicates (each answered with a duplicate ACK), so that the next timeout
 * comes sooner. The IBA sets no lower bound on what a requester keeps in flight; a peer sees nothing but a slower
 * resend.
 */
final class GoBackN implements LossRecovery {
    /** Packets in flight right after a local ACK timeout. */
    static final int RESTART_WINDOW = 1;
    /** At this many the restart is over: the window is the device's again. */
    private static final int RESTART_DONE = 1 << 12;

    private final Completer comp;
    /** The window while restarting after a timeout, {@link Integer#MAX_VALUE} when not restarting. */
    private int restartWindow = Integer.MAX_VALUE;

    GoBackN(Completer comp) {
        this.comp = comp;
    }

    @Override
    public void reset(int startPsn) {
        restartWindow = Integer.MAX_VALUE;
    }

    @Override
    public void sent(int psn) {
    }

    @Override
    public boolean pastWindow(int span, int limit) {
        return span >= Math.min(limit, restartWindow);
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
        if (restartWindow != Integer.MAX_VALUE) {
            restartWindow = restartWindow >= RESTART_DONE / 2 ? Integer.MAX_VALUE : restartWindow * 2;
        }
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
    public boolean holds(int psn) {
        return false;
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
        restartWindow = RESTART_WINDOW;
        comp.retryFromHead();
        return false;
    }
}
