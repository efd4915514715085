package io.jroce.endpoint;

import io.jroce.wire.Psn;

/**
 * The selective-repeat requester's record of which unacknowledged PSNs the responder reported holding (SACKs),
 * and of the loss recovery in progress (IRN, after TCP SACK recovery): a PSN below the highest SACKed one that
 * was not SACKed is lost, and is resent once per recovery; recovery ends when the cumulative acknowledgement
 * reaches the PSN that was next to send when it began. Bounded: one bit per PSN of a window of
 * {@link JroceExtensions#OOO_WINDOW}, the most the responder holds; SACKs further out are ignored.
 */
final class SackScoreboard {
    static final int SIZE = JroceExtensions.OOO_WINDOW;
    private final boolean[] sacked = new boolean[SIZE];
    /** Oldest PSN the bits describe (the completer's unacknowledged PSN). */
    private int base;
    /** Highest SACKed PSN, valid while {@link #any}. */
    int highSack;
    boolean any;
    boolean inRecovery;
    /** The requester's next new PSN when recovery began. */
    int recoveryPsn;
    /** Holes below this PSN were already resent in this recovery. */
    int rtxNext;
    /** The oldest hole was resent when the highest PSN sent was {@code holeMark}; a SACK above it means that resend was lost. */
    boolean holeResent;
    int hole;
    int holeMark;

    void reset(int psn) {
        java.util.Arrays.fill(sacked, false);
        base = psn;
        any = false;
        inRecovery = false;
        rtxNext = psn;
        holeResent = false;
    }

    /** The cumulative acknowledgement moved to {@code unacked}: forget the bits below it. */
    void advance(int unacked) {
        int n = Psn.distance(base, unacked);
        if (n >= (1 << 23)) return; // older than base: nothing to do
        if (n >= SIZE) {
            java.util.Arrays.fill(sacked, false);
        } else {
            for (int i = 0; i < n; i++) sacked[(base + i) & (SIZE - 1)] = false;
        }
        base = unacked;
        if (any && Psn.compare(highSack, unacked) < 0) any = false;
        if (Psn.compare(rtxNext, unacked) < 0) rtxNext = unacked;
        if (inRecovery && Psn.compare(unacked, recoveryPsn) >= 0) inRecovery = false;
    }

    /** Records a SACK of {@code psn}; false if it lies outside the window. */
    boolean mark(int psn) {
        int d = Psn.distance(base, psn);
        if (d == 0 || d >= SIZE) return false;
        sacked[psn & (SIZE - 1)] = true;
        if (!any || Psn.compare(psn, highSack) > 0) highSack = psn;
        any = true;
        return true;
    }

    boolean isSacked(int psn) {
        int d = Psn.distance(base, psn);
        return d < SIZE && sacked[psn & (SIZE - 1)];
    }
}
