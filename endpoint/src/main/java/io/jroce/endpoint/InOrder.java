package io.jroce.endpoint;

import io.jroce.wire.Aeth;
import io.jroce.wire.RocePacket;

/**
 * The IBA responder's order (IBA 9.7.5.1.2; rdma_rxe rxe_resp.c check_psn): a request past the expected PSN gets a
 * PSN sequence error NAK carrying the expected PSN, once per gap, and the rest of the burst in flight behind the lost
 * packet is dropped silently; the requester goes back to the NAK's PSN.
 */
final class InOrder implements RequestOrder {
    private final Responder resp;
    private final QueuePair qp;
    /** A sequence NAK was sent for the current gap: nothing more until a request in order arrives. */
    private boolean nakSent;

    InOrder(Responder resp, QueuePair qp) {
        this.resp = resp;
        this.qp = qp;
    }

    @Override
    public void reset() {
        nakSent = false;
    }

    @Override
    public void onAhead(RocePacket p, int psn) {
        qp.counters.outOfOrder++;
        if (!nakSent) {
            nakSent = true;
            qp.counters.seqNaksSent++;
            resp.sendAck(Aeth.nak(Aeth.NakCode.PSN_SEQUENCE_ERROR), resp.expectedPsn());
        }
    }

    @Override
    public void afterInOrder() {
        nakSent = false;
    }

    @Override
    public boolean draining() {
        return false;
    }

    @Override
    public boolean placesReadResponses() {
        return false;
    }

    @Override
    public void emitOwed() {
    }

    @Override
    public void dropOwed() {
    }

    @Override
    public void release() {
    }
}
