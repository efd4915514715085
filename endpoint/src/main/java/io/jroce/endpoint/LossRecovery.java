package io.jroce.endpoint;

import io.jroce.wire.RocePacket;

/**
 * How a requester recovers what the path lost: the points where Go-Back-N (the IBA transport, {@link GoBackN}) and
 * jroce's selective repeat between jroce peers ({@link SelectiveRepeat}, IRN's loss recovery) differ. The completer
 * holds one per QP, chosen when the QP is reset from the extensions its peers agreed on, and calls it at each of
 * these points, so its own code is the plain IBA path with no extension in it.
 */
interface LossRecovery {
    /** A new life of the QP: nothing sent yet, the next PSN {@code startPsn}. */
    void reset(int startPsn);

    /** The packet with {@code psn} is about to leave, for the first time or again. */
    void sent(int psn);

    /**
     * Whether a packet {@code span} PSNs past the oldest unacknowledged one would leave more than {@code limit}
     * PSNs in flight.
     */
    boolean pastWindow(int span, int limit);

    /** The most PSNs the congestion window may open to, given the device's {@code ceiling}. */
    int windowCeiling(int ceiling);

    /** Whether a round-trip sample may start now (Karn's rule: never across a retransmission). */
    boolean mayTimeRoundTrip();

    /** The tail-loss probe's interval when the device configures none; 0 for no probe. */
    long defaultProbeNanos();

    /** The cumulative acknowledgement advanced to {@code unackedPsn}. */
    void advanced(int unackedPsn);

    /** How many of {@code acked} newly acknowledged PSNs give their flow-control credit back now. */
    int creditReturned(int acked);

    /**
     * Whether an acknowledgement that covers an unfinished READ or atomic's last PSN means its response was lost
     * (IBA 9.7.5.1.2; rxe_comp.c check_psn, COMPST_ERROR_RETRY).
     */
    boolean ackPastReadMeansLoss();

    /**
     * Whether the responder is known to hold {@code psn} already (selective repeat: it SACKed it), so that a rewind
     * (an RNR NAK) need not send it again. Go-Back-N: never, its responder keeps nothing past a gap.
     */
    boolean holds(int psn);

    /** A PSN sequence error NAK: the responder expects {@code psn}; {@code msn} is its AETH's MSN field. */
    void onSequenceNak(int psn, int msn);

    /**
     * A READ response for the head READ {@code w} (started, not done), whose next expected response is
     * {@code expected}; earlier requests are acknowledged already.
     */
    void onReadResponse(SendWqe w, RocePacket p, int psn, int expected);

    /** How many response packets of READ {@code w} a (re)sent request asks for, from its first missing one. */
    int readHoleRun(SendWqe w);

    /**
     * The local ACK timer expired with something outstanding. Returns true when it has dealt with the expiry and
     * the timer check ends here, false when the tail-loss probe is looked at as well.
     */
    boolean onTimeout();
}
