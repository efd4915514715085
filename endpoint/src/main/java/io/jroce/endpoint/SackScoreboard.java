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
    private final PsnBitRing sacked = new PsnBitRing(SIZE);
    /** PSNs resent since they were last sent (a PSN is resent again only after a timeout or when found lost again). */
    private final PsnBitRing resent = new PsnBitRing(SIZE);
    /** Oldest PSN the bits describe (the completer's unacknowledged PSN). */
    private int base;
    /** Highest SACKed PSN, valid while {@link #any}. */
    int highSack;
    boolean any;
    /** PSNs SACKed and not yet cumulatively acknowledged: no longer in flight (they wait in the responder's store). */
    int sackedCount;
    /** SACKed PSNs that {@link #advance} has cleared since {@link #takeCleared} last read it. */
    private int cleared;
    boolean inRecovery;
    /** The requester's next new PSN when recovery began. */
    int recoveryPsn;
    /** Holes below this PSN were looked at already in this recovery. */
    int rtxNext;
    /** The oldest hole was resent when the highest PSN sent was {@code holeMark}; a SACK above it means that resend was lost. */
    boolean holeResent;
    int hole;
    int holeMark;

    void reset(int psn) {
        sacked.clear();
        resent.clear();
        base = psn;
        any = false;
        sackedCount = 0;
        cleared = 0;
        inRecovery = false;
        rtxNext = psn;
        holeResent = false;
    }

    /** The cumulative acknowledgement moved to {@code unacked}: forget the bits below it. */
    void advance(int unacked) {
        int n = Psn.distance(base, unacked);
        if (n >= (1 << 23)) return; // older than base: nothing to do
        if (n > 0) {
            int was = sacked.clearRange(base, n);
            sackedCount -= was;
            cleared += was;
            resent.clearRange(base, n);
        }
        base = unacked;
        if (any && Psn.compare(highSack, unacked) < 0) any = false;
        if (Psn.compare(rtxNext, unacked) < 0) rtxNext = unacked;
        if (inRecovery && Psn.compare(unacked, recoveryPsn) >= 0) inRecovery = false;
    }

    /**
     * Records a SACK of the {@code count} PSNs from {@code first} (all inside the window, past its base); returns how
     * many of them were not SACKed before.
     */
    int mark(int first, int count) {
        int last = Psn.add(first, count - 1);
        if (!any || Psn.compare(last, highSack) > 0) highSack = last;
        any = true;
        int fresh = sacked.setRange(first, count);
        sackedCount += fresh;
        return fresh;
    }

    /** Whether {@code psn} lies past the base and inside the window. */
    boolean inWindow(int psn) {
        int d = Psn.distance(base, psn);
        return d > 0 && d < SIZE;
    }

    /** How many SACKed PSNs the cumulative acknowledgement has passed since the last call. */
    int takeCleared() {
        int c = cleared;
        cleared = 0;
        return c;
    }

    boolean isResent(int psn) {
        return Psn.distance(base, psn) < SIZE && resent.get(psn);
    }

    /** {@code psn} was resent now (or, {@code false}, is to be resent again). */
    void setResent(int psn, boolean v) {
        if (Psn.distance(base, psn) < SIZE) resent.set(psn, v);
    }

    boolean isSacked(int psn) {
        return Psn.distance(base, psn) < SIZE && sacked.get(psn);
    }
}
