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
    /**
     * Transmission order (RACK's reasoning, in sequence numbers rather than time): each transmission of a PSN of the
     * window gets the next number, and the responder holds what it received in the order it was sent (the path
     * keeps order). So a resend numbered below the highest number SACKed so far, still neither SACKed nor
     * acknowledged, was lost, and is resent again at once instead of after a probe or a timeout.
     */
    private final int[] txSeq = new int[SIZE];
    private int txCounter;
    /** Highest transmission number among the PSNs SACKed so far. */
    private int sackedTxMax;
    /** Resends in flight, oldest first: PSN and the transmission number it was resent with. Bounded by the window. */
    private final int[] resendPsn = new int[SIZE];
    private final int[] resendTx = new int[SIZE];
    private int resendHead;
    private int resendCount;

    void reset(int psn) {
        sacked.clear();
        resent.clear();
        base = psn;
        any = false;
        sackedCount = 0;
        cleared = 0;
        inRecovery = false;
        rtxNext = psn;
        resendHead = 0;
        resendCount = 0;
        sackedTxMax = txCounter;
    }

    /** {@code psn} (a data packet or a READ/atomic request) is being transmitted now. */
    void sent(int psn) {
        txSeq[psn & (SIZE - 1)] = ++txCounter;
    }

    /** {@code psn} was resent now (after {@link #sent}): it joins the resends in flight. */
    void resending(int psn) {
        if (resendCount == SIZE) { // the oldest entry is long stale: the window holds fewer unacknowledged PSNs
            resendHead = (resendHead + 1) & (SIZE - 1);
            resendCount--;
        }
        int k = (resendHead + resendCount) & (SIZE - 1);
        resendPsn[k] = psn;
        resendTx[k] = txSeq[psn & (SIZE - 1)];
        resendCount++;
    }

    /**
     * The next resend found lost: sent before something SACKed since, and neither SACKed nor acknowledged (PSN
     * before {@code unacked}) nor resent again since; {@code -1} when there is none. Entries passed over are dropped.
     */
    int nextLostResend(int unacked) {
        while (resendCount > 0) {
            int psn = resendPsn[resendHead];
            int tx = resendTx[resendHead];
            if (tx - sackedTxMax >= 0) return -1; // this one and all after it were sent after the newest SACKed
            resendHead = (resendHead + 1) & (SIZE - 1);
            resendCount--;
            if (Psn.distance(unacked, psn) >= SIZE || sacked.get(psn) || txSeq[psn & (SIZE - 1)] != tx) continue;
            return psn;
        }
        return -1;
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
        sacked.freshMax = sackedTxMax;
        // a resent PSN says nothing of order: which of its transmissions arrived is unknown (Karn's ambiguity)
        int fresh = sacked.setRangeMax(first, count, txSeq, resent);
        sackedTxMax = sacked.freshMax;
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
