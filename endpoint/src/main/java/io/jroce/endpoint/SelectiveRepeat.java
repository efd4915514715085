package io.jroce.endpoint;

import io.jroce.wire.Opcode;
import io.jroce.wire.Psn;
import io.jroce.wire.RocePacket;

/**
 * Selective repeat between jroce peers ({@link JroceExtensions#SELECTIVE_REPEAT}; IRN, Mittal et al. SIGCOMM 2018):
 * the responder holds packets past a gap and reports them in SACKs (a sequence NAK whose MSN field carries the held
 * run), and the requester resends only the holes, once per recovery, instead of everything after the first one.
 * READ responses are placed wherever they land and only a gap in them is asked again. A local ACK timeout resends
 * every hole once, never what the responder holds. The requester's state for it: the SACK scoreboard and which
 * responses of the head READ were placed past a gap.
 */
final class SelectiveRepeat implements LossRecovery {
    /** Selective repeat's tail-loss probe when the device has none configured (IRN's RTO_low). */
    static final long PROBE_NANOS = 1_000_000;

    private final Completer comp;
    private final QueuePair qp;
    private final EngineContext ctx;
    final SackScoreboard sack = new SackScoreboard();
    /**
     * READ responses of the head READ that arrived past a gap and were placed already, one bit per PSN in
     * (expected, expected + {@link JroceExtensions#OOO_WINDOW}); {@link #readGotWqe} is the READ they belong to.
     */
    private final long[] readGot = new long[JroceExtensions.OOO_WINDOW / 64];
    private SendWqe readGotWqe;
    private int readGotCount;
    /** The last PSN of the gap last asked for again (valid while {@link #readAsked}). */
    private int readAskedEnd;
    private boolean readAsked;

    SelectiveRepeat(Completer comp, QueuePair qp, EngineContext ctx) {
        this.comp = comp;
        this.qp = qp;
        this.ctx = ctx;
    }

    @Override
    public void reset(int startPsn) {
        clearReadGot();
        sack.reset(startPsn);
    }

    @Override
    public void sent(int psn) {
        sack.sent(psn);
    }

    /**
     * The PSNs the responder SACKed are held there, not in flight (as TCP's SACK "pipe" counts, RFC 6675; IRN's
     * BDP-FC counts from the cumulative ACK), so the window runs past a hole, as far as the responder's store reaches.
     */
    @Override
    public boolean pastWindow(int span, int limit) {
        return span - sack.sackedCount >= limit || span >= SackScoreboard.SIZE - 1;
    }

    /** No more in flight than the responder's out-of-order store could hold past a hole. */
    @Override
    public int windowCeiling(int ceiling) {
        return Math.min(ceiling, JroceExtensions.OOO_WINDOW);
    }

    /**
     * A packet sent during recovery is held behind the hole, so its ACK would time the recovery, not the path
     * (Karn's rule, extended to everything sent while a hole is open).
     */
    @Override
    public boolean mayTimeRoundTrip() {
        return !sack.inRecovery;
    }

    /** Always on between selective-repeat peers: the peer is known to be a jroce endpoint, for which a probe is never a burden. */
    @Override
    public long defaultProbeNanos() {
        return PROBE_NANOS;
    }

    @Override
    public void advanced(int unackedPsn) {
        sack.advance(unackedPsn);
    }

    /** SACKed PSNs returned their credit when they were SACKed. */
    @Override
    public int creditReturned(int acked) {
        return Math.max(0, acked - sack.takeCleared());
    }

    /**
     * The responder may acknowledge later requests before it has sent all of a READ's responses (they leave in
     * passes), so passing it is no sign of loss; gaps and timers are.
     */
    @Override
    public boolean ackPastReadMeansLoss() {
        return false;
    }

    @Override
    public boolean holds(int psn) {
        return sack.isSacked(psn);
    }

    /**
     * A SACK: the responder holds the run the MSN field names and expects {@code expected} (already applied as a
     * cumulative acknowledgement as far as it goes: not past an unanswered READ). Enters recovery if not in it, then
     * resends each PSN below the highest SACKed one that was neither SACKed nor resent earlier in this recovery.
     */
    @Override
    public void onSequenceNak(int expected, int msn) {
        qp.counters.sacksReceived++;
        SackScoreboard sb = sack;
        int unacked = comp.unackedPsn();
        sb.advance(unacked);
        int first = Psn.add(expected, JroceExtensions.sackOffset(msn));
        int count = JroceExtensions.sackCount(msn);
        int sackedPsn = Psn.add(first, count - 1);
        if (JroceExtensions.sackOffset(msn) == 0 || count == 0 || Psn.compare(sackedPsn, qp.requester.sqPsn()) >= 0
                || !sb.inWindow(sackedPsn)) {
            return; // malformed, stale or out of range
        }
        if (!sb.inWindow(first)) { // partly acknowledged since (a SACK overtaken by an ACK): the rest still counts
            first = Psn.next(unacked);
            count = Psn.distance(first, sackedPsn) + 1;
        }
        qp.flowRelease(sb.mark(first, count)); // held by the responder, no longer in its socket buffer
        if (!sb.inRecovery) {
            sb.inRecovery = true;
            sb.recoveryPsn = qp.requester.sqPsn();
            sb.rtxNext = unacked;
            comp.congestionWindow().onLoss(ctx.clock().nanoTime(), comp.srttNanos());
            comp.forgetRoundTripSample();
        }
        // the responder has every request before the PSN it expects: a READ there is being answered, not lost
        if (Psn.compare(expected, sb.rtxNext) > 0) sb.rtxNext = expected;
        // resends sent before something now SACKed were lost as well: resent again now, not after a probe or timeout
        for (int lost = sb.nextLostResend(unacked); lost >= 0 && qp.state == QpState.RTS; lost = sb.nextLostResend(unacked)) {
            if (Psn.compare(lost, expected) < 0) continue; // the responder has it (a READ being answered)
            sb.setResent(lost, false);
            qp.counters.lostRetransmits++;
            resendOne(lost, false);
        }
        resendHoles(sb.highSack, false);
        comp.ensureTimer();
    }

    /**
     * Resends the holes in [rtxNext, end): PSNs not SACKed and not resent already (unless found lost again). After
     * a timeout every hole is resent, and an unfinished READ or atomic is asked again even if its request was
     * SACKed: its response may be what was lost.
     */
    private void resendHoles(int end, boolean afterTimeout) {
        SackScoreboard sb = sack;
        int unacked = comp.unackedPsn();
        int p = Psn.compare(sb.rtxNext, unacked) < 0 ? unacked : sb.rtxNext;
        int budget = SackScoreboard.SIZE;
        while (Psn.compare(p, end) < 0 && budget-- > 0 && qp.state == QpState.RTS) {
            // most PSNs below the highest SACK are SACKed: passed over without looking for their WQE
            p = !afterTimeout && sb.isSacked(p) ? Psn.next(p) : resendOne(p, afterTimeout);
        }
        if (Psn.compare(p, sb.rtxNext) > 0) sb.rtxNext = p;
    }

    /**
     * Resends the one packet with {@code psn} (with AckReq, so the responder acknowledges as soon as the gap it fills
     * is closed), or, when {@code psn} belongs to a READ or atomic, its request (a READ from its first missing
     * response). Only what was transmitted before is resent, and nothing the responder SACKed (a READ/atomic request
     * it holds is asked again only {@code afterTimeout}: its response may be what was lost), nor, unless
     * {@code afterTimeout}, what was resent already in this recovery and not found lost again (IRN: each hole once
     * per recovery). Returns the PSN to look at next: {@code psn + 1}, or the PSN after the READ/atomic's range.
     */
    private int resendOne(int psn, boolean afterTimeout) {
        SackScoreboard sb = sack;
        Requester req = qp.requester;
        SendWqe w = req.sentWqe(psn);
        if (w == null) return Psn.next(psn); // acknowledged since, or never sent
        if (w.opcode.isReadOrAtomic()) {
            boolean arrived = sb.isSacked(w.firstPsn);
            boolean again = !afterTimeout && sb.isResent(psn);
            if ((afterTimeout || !arrived) && !again && req.resendRequest(w)) {
                sb.setResent(psn, true);
                sb.sent(psn);
                sb.resending(psn);
            }
            return Psn.next(w.lastPsn);
        }
        if (!sb.isSacked(psn) && (afterTimeout || !sb.isResent(psn)) && req.resendPacket(w, psn)) {
            sb.setResent(psn, true); // its transmission was recorded as it left (sent)
            sb.resending(psn);
        }
        return Psn.next(psn);
    }

    /**
     * Local ACK timeout: everything still unacknowledged and not SACKed is taken as lost and resent once (no
     * Go-Back-N: what the responder holds is not sent again). Counts against retry_cnt. A QP waiting out an RNR NAK
     * goes back to the head as Go-Back-N does.
     */
    @Override
    public boolean onTimeout() {
        if (qp.requester.rnrWaiting()) {
            comp.retryFromHead();
            return false;
        }
        if (!comp.spendRetry()) return true; // none left: the oldest WQE failed with RETRY_EXC_ERR
        qp.counters.retries++;
        ctx.counters().retransmits++;
        comp.forgetRoundTripSample();
        SackScoreboard sb = sack;
        comp.congestionWindow().onTimeout(ctx.clock().nanoTime());
        int unacked = comp.unackedPsn();
        sb.advance(unacked);
        sb.inRecovery = true;
        sb.recoveryPsn = qp.requester.sqPsn();
        sb.rtxNext = unacked;
        int end = Psn.add(unacked, SackScoreboard.SIZE);
        if (Psn.compare(end, qp.requester.sqPsn()) > 0) end = qp.requester.sqPsn();
        resendHoles(end, true);
        comp.ensureTimer();
        return true;
    }

    /**
     * A READ response is placed wherever it lands in the message, in order or past a gap (up to
     * {@link JroceExtensions#OOO_WINDOW} PSNs ahead), since every response packet's place follows from its PSN: packet
     * k carries bytes [k·MTU, (k+1)·MTU), the last one the rest. A jroce responder sends each packet exactly as the
     * first time (FIRST, MIDDLE, LAST or ONLY by its place in the message), also when it sends it again. A gap
     * is asked again alone: from the first missing PSN up to the first one already placed ({@link #readHoleRun}),
     * once per gap, and the READ completes when every packet is in.
     */
    @Override
    public void onReadResponse(SendWqe w, RocePacket p, int psn, int expected) {
        if (readGotWqe != w) {
            clearReadGot();
            readGotWqe = w;
        }
        int cmp = Psn.compare(psn, expected);
        if (cmp < 0 || (cmp > 0 && readGot(psn))) {
            qp.counters.duplicatesSeen++;
            return;
        }
        if (Psn.compare(psn, w.lastPsn) > 0) return; // a later READ's response: asked again when that READ is at the head
        if (Psn.distance(expected, psn) >= JroceExtensions.OOO_WINDOW) {
            qp.counters.oooDropped++;
            return;
        }
        int mtu = qp.mtu;
        int index = Psn.distance(w.firstPsn, psn);
        int npkts = Completer.packets(w);
        long offset = (long) index * mtu;
        long want = Math.min(mtu, w.length - offset);
        Opcode op = p.opcode();
        if (op.startsMessage() != (index == 0) || op.endsMessage() != (index == npkts - 1) || p.payloadLength() != want) {
            comp.failOldest(p.payloadLength() == want ? WcStatus.BAD_RESP_ERR : WcStatus.LOC_LEN_ERR, 0);
            return;
        }
        if (!comp.scatter(w, offset, p.buffer(), p.payloadOffset(), (int) want, 0)) return;
        if (cmp > 0) {
            readGot[(psn & (JroceExtensions.OOO_WINDOW - 1)) >>> 6] |= 1L << psn;
            readGotCount++;
            qp.counters.readResponsesPlacedOutOfOrder++;
            askReadGap(w, expected); // once per gap: later responses of the same stream say the same
            return;
        }
        w.respPkts++;
        while (readGotCount > 0 && w.respPkts < npkts && readGot(Psn.add(w.firstPsn, w.respPkts))) {
            int held = Psn.add(w.firstPsn, w.respPkts);
            readGot[(held & (JroceExtensions.OOO_WINDOW - 1)) >>> 6] &= ~(1L << held);
            readGotCount--;
            w.respPkts++;
        }
        int next = Psn.add(w.firstPsn, w.respPkts);
        comp.advanceAckTo(next);
        if (w.respPkts == npkts) {
            clearReadGot();
            comp.readCompleted(w);
        } else if (readGotCount > 0) {
            askReadGap(w, next); // the next gap is known already: packets past it are placed
        }
        comp.progress();
    }

    /** Asks again for the gap that starts at {@code from} (the READ's first missing PSN), unless it was asked for already. */
    private void askReadGap(SendWqe w, int from) {
        if (readAsked && Psn.compare(from, readAskedEnd) <= 0) return; // inside the gap asked for last: on its way
        readAsked = true;
        readAskedEnd = Psn.add(from, readHoleRun(w) - 1);
        qp.requester.resendRequest(w); // w is the head READ, and holds from
    }

    private boolean readGot(int psn) {
        return readGotCount > 0 && (readGot[(psn & (JroceExtensions.OOO_WINDOW - 1)) >>> 6] & (1L << psn)) != 0;
    }

    private void clearReadGot() {
        if (readGotCount > 0) java.util.Arrays.fill(readGot, 0);
        readGotCount = 0;
        readGotWqe = null;
        readAsked = false;
    }

    /** Up to the first response packet already placed past the gap, or to the end of the message. */
    @Override
    public int readHoleRun(SendWqe w) {
        int npkts = Completer.packets(w);
        int from = w.respPkts;
        if (readGotWqe != w || readGotCount == 0) return npkts - from;
        for (int k = 1; from + k < npkts && k < JroceExtensions.OOO_WINDOW; k++) {
            if (readGot(Psn.add(w.firstPsn, from + k))) return k;
        }
        return npkts - from;
    }
}
