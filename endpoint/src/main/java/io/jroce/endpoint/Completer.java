package io.jroce.endpoint;

import io.jroce.wire.Aeth;
import io.jroce.wire.Opcode;
import io.jroce.wire.Psn;
import io.jroce.wire.RocePacket;
import io.netty.buffer.ByteBuf;

/**
 * The completer: consumes ACKs, NAKs, READ responses and atomic ACKs, retires send WQEs strictly in order,
 * writes READ and atomic results into the local scatter list, and turns retries, timeouts and NAKs into
 * Go-Back-N retransmission or the matching completion status (rdma_rxe rxe_comp.c, IBA 9.7.5).
 */
final class Completer {
    private final QueuePair qp;
    private final EngineContext ctx;
    /** Oldest PSN not yet acknowledged; equals the requester's next PSN when nothing is outstanding. */
    private int unackedPsn;
    /** Retries left of retry_cnt and of rnr_retry, each back to the full count on progress. */
    private int retryLeft;
    private int rnrLeft;
    /** Tail-loss probe deadline, 0 when none; and the current probe interval (doubles without progress). */
    private long probeAt;
    private long probeInterval;
    /** Smoothed round trip (AckReq packet to the ACK covering it), 0 until measured; Karn's rule on retries. */
    private long srttNanos;
    private int rttPsn = -1;
    private long rttStart;
    /** Retransmit deadline on the device clock, 0 when no timer is armed. */
    private long retransmitAt;
    /** The resume PSN a Go-Back-N was last started for, so one gap is retried once until progress. */
    private int retriedAt = -1;
    /** Loss recovery: Go-Back-N (plain IBA), or selective repeat between jroce peers that agreed on it. */
    private LossRecovery recovery;
    private final GoBackN goBackN = new GoBackN(this);
    private SelectiveRepeat selectiveRepeat;
    /** The window policy: congestion control between jroce peers that agreed on it, else none (plain IBA). */
    private CongestionWindow cc = CongestionWindow.NONE;

    Completer(QueuePair qp, EngineContext ctx) {
        this.qp = qp;
        this.ctx = ctx;
        this.recovery = goBackN;
    }

    QueuePair qp() {
        return qp;
    }

    /** The QP's loss recovery ({@link GoBackN} for plain IBA). */
    LossRecovery recovery() {
        return recovery;
    }

    /** The oldest PSN not yet acknowledged. */
    int unackedPsn() {
        return unackedPsn;
    }

    /** The smoothed round trip, 0 until measured. */
    long srttNanos() {
        return srttNanos;
    }

    /**
     * The cumulative acknowledgement advances to {@code psn}: every PSN before it is acknowledged, and it is the
     * oldest unacknowledged one (rxe_comp.c COMPST_UPDATE_COMP, qp->comp.psn). The caller reports the progress
     * ({@link #progress}) once it has acted on it.
     */
    void advanceAckTo(int psn) {
        unackedPsn = psn;
    }

    /**
     * Spends one retry of retry_cnt (IBA 9.7.6.1; rxe_comp.c COMPST_ERROR_RETRY, qp->comp.retry_cnt). With none
     * left the oldest WQE fails with RETRY_EXC_ERR and the QP enters the error state; false then.
     */
    boolean spendRetry() {
        if (retryLeft <= 0) {
            failOldest(WcStatus.RETRY_EXC_ERR, 0);
            return false;
        }
        // The IBA spec makes only rnr_retry 7 infinite; rdma_rxe also treats retry_cnt 7 so. We follow the spec.
        retryLeft--;
        return true;
    }

    /**
     * No local ACK timer runs any more (the QP was reset or entered the error state), until a packet sent
     * ({@link #packetSent}) or {@link #ensureTimer} arms it again.
     */
    void stopRetransmitTimer() {
        retransmitAt = 0;
    }

    /** Whether the retransmit timer runs (a 'stats' view). */
    boolean retransmitArmed() {
        return retransmitAt != 0;
    }

    void reset(int startPsn) {
        qp.flowRelease(qp.flowHeld);
        unackedPsn = startPsn;
        retryLeft = qp.retryCnt;
        rnrLeft = qp.rnrRetry;
        retransmitAt = 0;
        retriedAt = -1;
        rttPsn = -1;
        srttNanos = 0;
        if ((qp.extensions & JroceExtensions.SELECTIVE_REPEAT) != 0) {
            if (selectiveRepeat == null) selectiveRepeat = new SelectiveRepeat(this, qp, ctx);
            recovery = selectiveRepeat;
        } else {
            recovery = goBackN;
        }
        recovery.reset(startPsn);
        if ((qp.extensions & JroceExtensions.CONGESTION_CONTROL) != 0) {
            cc = new CongestionControl(recovery.windowCeiling(ctx.maxUnackedPsns()), ctx.pathRtt(qp.destAddress));
        } else {
            cc = CongestionWindow.NONE;
        }
        cc.report(qp.counters);
    }

    /** The requester's window policy ({@link CongestionWindow#NONE} for plain IBA). */
    CongestionWindow congestionWindow() {
        return cc;
    }

    /** A CNP named this QP: counted always, acted on as a DCQCN reaction point when congestion control is on. */
    void onCnp() {
        qp.counters.cnpsReceived++;
        cc.onCnp(ctx.clock().nanoTime());
        cc.report(qp.counters);
    }

    boolean hasOutstanding() {
        return !qp.sq.isEmpty() && qp.sq.head().started;
    }

    /** A packet went out: make sure the local ACK timer runs (IBA 9.7.6.1.3). */
    void packetSent() {
        if (retransmitAt == 0 && qp.timeoutNanos > 0) {
            retransmitAt = ctx.clock().nanoTime() + qp.timeoutNanos;
            ctx.timers().arm(qp);
        }
        armProbe(false);
    }

    /** An AckReq packet went out: time it if no sample is running (first transmissions only). */
    void ackRequested(int psn, boolean retransmission) {
        if (rttPsn < 0 && !retransmission && recovery.mayTimeRoundTrip()) {
            rttPsn = psn;
            rttStart = ctx.clock().nanoTime();
        }
    }

    /** Karn's rule: no round-trip sample across a retransmission. */
    void forgetRoundTripSample() {
        rttPsn = -1;
    }

    private void rttAcked(int ackedThrough) {
        if (rttPsn >= 0 && Psn.compare(ackedThrough, rttPsn) >= 0) {
            long now = ctx.clock().nanoTime();
            long sample = now - rttStart;
            srttNanos = srttNanos == 0 ? sample : (7 * srttNanos + sample) / 8;
            cc.onRtt(sample, now);
            rttPsn = -1;
        }
    }

    /** (Re)starts the tail-loss probe countdown; {@code backoff} doubles the interval (no progress since). */
    private void armProbe(boolean backoff) {
        long base = ctx.tailProbeNanos();
        if (base <= 0) base = recovery.defaultProbeNanos();
        if (base <= 0) return;
        // never probe sooner than a few round trips: on a slow path (rxe under emulation, 10-50 ms) a fixed
        // 1 ms probe would resend the head of nearly every message
        base = Math.max(base, 4 * srttNanos);
        probeInterval = backoff ? Math.min(probeInterval * 2, Math.max(base, qp.timeoutNanos / 2)) : base;
        probeAt = ctx.clock().nanoTime() + probeInterval;
        ctx.timers().arm(qp);
    }

    void progress() {
        rttAcked(Psn.add(unackedPsn, -1));
        recovery.advanced(unackedPsn);
        // timers run only while something sent is unacknowledged: a QP that waits for window or flow-control room
        // with everything acknowledged has nothing to time out (packetSent arms them again)
        boolean onWire = hasOutstanding() && Psn.compare(unackedPsn, qp.requester.sentEnd()) < 0;
        if (onWire) armProbe(false);
        else probeAt = 0;
        retryLeft = qp.retryCnt;
        rnrLeft = qp.rnrRetry;
        retriedAt = -1;
        if (onWire && qp.timeoutNanos > 0) {
            retransmitAt = ctx.clock().nanoTime() + qp.timeoutNanos;
            ctx.timers().arm(qp);
        } else {
            retransmitAt = 0;
        }
    }

    /** A response packet for this QP (decoded and ICRC-checked). Event loop only. */
    void onResponse(RocePacket p) {
        QpState st = qp.state;
        if (st != QpState.RTS && st != QpState.SQD && st != QpState.SQE) {
            ctx.counters().drop(DropReason.QP_STATE);
            return;
        }
        int psn = p.psn();
        // a response must name a PSN that was sent; one from before the oldest unacknowledged PSN is stale
        if (Psn.compare(psn, qp.requester.sqPsn()) >= 0) {
            ctx.counters().ghostResponse++;
            qp.counters.ghostResponses++;
            return;
        }
        if (Psn.compare(psn, Psn.add(unackedPsn, -1)) < 0) {
            qp.counters.duplicatesSeen++;
            return;
        }
        Opcode op = p.opcode();
        int before = unackedPsn;
        switch (op.operation()) {
            case ACKNOWLEDGE -> onAck(p, psn);
            case ATOMIC_ACKNOWLEDGE -> onAtomicAck(p, psn);
            case RDMA_READ_RESPONSE -> onReadResponse(p, psn);
            default -> ctx.counters().drop(DropReason.UNEXPECTED_OPCODE);
        }
        int acked = Psn.distance(before, unackedPsn);
        if (acked > 0 && acked < (1 << 23)) {
            qp.flowRelease(recovery.creditReturned(acked));
            cc.onAcked(acked, ctx.clock().nanoTime(), srttNanos);
        }
        cc.report(qp.counters);
        qp.requester.run();
        ensureTimer();
    }

    private void onAck(RocePacket p, int psn) {
        int syndrome = p.aeth().syndrome();
        switch (Aeth.kind(syndrome)) {
            case ACK -> {
                if (ackThrough(psn)) progress();
            }
            case RNR_NAK -> {
                qp.counters.rnrNaksReceived++;
                ackThrough(Psn.add(psn, -1));
                rnrWait(psn, Aeth.rnrTimerNanos(Aeth.value(syndrome)));
            }
            case NAK -> {
                Aeth.NakCode code = Aeth.NakCode.of(Aeth.value(syndrome));
                qp.counters.naksReceived++;
                if (ackThrough(Psn.add(psn, -1))) progress();
                if (code == Aeth.NakCode.PSN_SEQUENCE_ERROR) {
                    recovery.onSequenceNak(psn, p.aeth().msn());
                } else {
                    WcStatus status = code == Aeth.NakCode.REMOTE_ACCESS_ERROR ? WcStatus.REM_ACCESS_ERR
                            : code == Aeth.NakCode.REMOTE_OPERATIONAL_ERROR ? WcStatus.REM_OP_ERR
                            : WcStatus.REM_INV_REQ_ERR;
                    failOldest(status, syndrome);
                }
            }
            default -> ctx.counters().drop(DropReason.MALFORMED);
        }
    }

    /**
     * Retires every WQE the acknowledgement of {@code psn} covers. A READ or atomic is only retired by its
     * own response; an ACK that passes one means its response was lost, so it is retried (rxe
     * COMPST_ERROR_RETRY). Returns true if anything was acknowledged.
     */
    private boolean ackThrough(int psn) {
        boolean advanced = false;
        while (!qp.sq.isEmpty()) {
            SendWqe w = qp.sq.head();
            if (!w.started) break;
            if (w.opcode.isReadOrAtomic()) {
                if (recovery.ackPastReadMeansLoss() && Psn.compare(psn, w.lastPsn) >= 0) {
                    unackedPsn = Psn.add(w.firstPsn, w.respPkts);
                    retry(unackedPsn);
                }
                break;
            }
            if (Psn.compare(w.lastPsn, psn) > 0) {
                // an ACK inside a long message (AckReq every 64 packets) acknowledges part of it
                if (Psn.compare(psn, w.firstPsn) >= 0 && Psn.compare(psn, unackedPsn) >= 0) {
                    unackedPsn = Psn.next(psn);
                    advanced = true;
                    qp.requester.ackedPart(w, Psn.distance(w.firstPsn, unackedPsn));
                }
                break;
            }
            // Acknowledged through its last PSN: complete, even if a Go-Back-N pass was resending it
            // (the responder had it all; the NAK or timeout that rewound us was about a later packet).
            qp.requester.ackedWhole(w);
            unackedPsn = Psn.next(w.lastPsn);
            retire(w, WcStatus.SUCCESS, 0);
            advanced = true;
        }
        return advanced;
    }

    private void onAtomicAck(RocePacket p, int psn) {
        ackThrough(Psn.add(psn, -1));
        if (qp.sq.isEmpty()) return;
        SendWqe w = qp.sq.head();
        if (!w.started || !w.opcode.isAtomic() || w.firstPsn != psn) {
            ctx.counters().ghostResponse++;
            return;
        }
        long original = p.atomicAckEth().originalData();
        if (!scatter(w, 0, null, 0, 8, original)) return;
        unackedPsn = Psn.next(psn);
        qp.requester.readRetired();
        retire(w, WcStatus.SUCCESS, 0);
        progress();
    }

    /** A READ has every response: it retires, and the requester may send another READ or atomic. */
    void readCompleted(SendWqe w) {
        w.done = true;
        qp.requester.readRetired();
        retire(w, WcStatus.SUCCESS, 0);
    }

    /** The number of packets of {@code w}'s message (its requests, or a READ's responses). */
    static int packets(SendWqe w) {
        return Psn.distance(w.firstPsn, w.lastPsn) + 1;
    }

    private void onReadResponse(RocePacket p, int psn) {
        ackThrough(Psn.add(psn, -1));
        if (qp.sq.isEmpty()) return;
        SendWqe w = qp.sq.head();
        if (!w.started || w.opcode != WrOpcode.RDMA_READ || w.done) {
            ctx.counters().ghostResponse++;
            return;
        }
        recovery.onReadResponse(w, p, psn, Psn.add(w.firstPsn, w.respPkts));
    }

    /**
     * A READ response taken in order (IBA 9.7.5.1; rxe_comp.c check_psn, check_ack, do_read): the expected one is
     * written where it belongs; a duplicate is ignored; one past a gap means a response was lost, and the READ is
     * asked again from the first missing one (COMPST_ERROR_RETRY).
     */
    void readResponseInOrder(SendWqe w, RocePacket p, int psn, int expected) {
        int cmp = Psn.compare(psn, expected);
        if (cmp < 0) {
            qp.counters.duplicatesSeen++;
            return;
        }
        if (cmp > 0) {
            if (Psn.compare(psn, w.lastPsn) <= 0) retry(expected);
            return;
        }
        Opcode op = p.opcode();
        int mtu = qp.mtu;
        long offset = (long) w.respPkts * mtu;
        long remaining = w.length - offset;
        int len = p.payloadLength();
        boolean last = op.endsMessage();
        // a READ resumed part-way is answered with MIDDLE/LAST from the resume point (IBA 9.7.5.1, duplicate READ; rxe_resp.c duplicate_request)
        boolean sequenceOk = w.respPkts == 0 ? op.startsMessage() : !op.startsMessage();
        boolean lengthOk = last ? len == remaining : len == mtu && remaining > mtu;
        if (!sequenceOk || !lengthOk) {
            failOldest(lengthOk ? WcStatus.BAD_RESP_ERR : WcStatus.LOC_LEN_ERR, 0);
            return;
        }
        ByteBuf buf = p.buffer();
        if (!scatter(w, offset, buf, p.payloadOffset(), len, 0)) return;
        w.respPkts++;
        unackedPsn = Psn.next(psn);
        if (last) readCompleted(w);
        progress();
    }

    /** How many response packets of READ {@code w} a (re)sent request asks for, from its first missing one. */
    int readHoleRun(SendWqe w) {
        return recovery.readHoleRun(w);
    }

    /** Writes READ payload or an atomic's original value into the WQE's scatter list. */
    boolean scatter(SendWqe w, long off, ByteBuf src, int srcIdx, int len, long atomicValue) {
        ctx.out().beforeMemoryWrite(); // what is queued to leave from registered memory leaves as it is now
        int r;
        if (src != null) {
            r = CopyData.scatter(w.sgeMr, w.sgeAddr, w.sgeLen, w.numSge, off, src, srcIdx, len);
        } else {
            // an atomic's original value: post time guarantees one 8-byte SGE
            MemoryRegion mr = w.sgeMr[0];
            r = mr.isRegistered() ? CopyData.OK : CopyData.REGION_GONE;
            if (r == CopyData.OK) {
                int at = mr.offsetOf(w.sgeAddr[0]);
                if (QueuePair.LITTLE_ENDIAN_HOST) mr.mem().setLongLE(at, atomicValue);
                else mr.mem().setLong(at, atomicValue);
            }
        }
        if (r == CopyData.OK) return true;
        failOldest(r == CopyData.PAST_END ? WcStatus.LOC_LEN_ERR : WcStatus.LOC_PROT_ERR, 0);
        return false;
    }

    /** Go-Back-N from {@code psn}, counting against retry_cnt (IBA 9.7.6.1.1; rxe req_retry). */
    void retry(int psn) {
        // Go-Back-N restarts at the earliest unfinished point: WQEs complete in order, so an incomplete
        // READ or atomic at the head of the queue is resent too, even when the NAK names a later PSN.
        if (!qp.sq.isEmpty()) {
            SendWqe head = qp.sq.head();
            if (head.started && head.opcode.isReadOrAtomic()) {
                int resume = Psn.add(head.firstPsn, head.respPkts);
                if (Psn.compare(resume, psn) < 0) psn = resume;
            } else if (head.started && Psn.compare(psn, unackedPsn) < 0) {
                psn = unackedPsn; // never resend what the responder already acknowledged
            }
        }
        if (retriedAt == psn) return; // this gap is already being resent
        if (!spendRetry()) return;
        retriedAt = psn;
        cc.onLoss(ctx.clock().nanoTime(), srttNanos);
        rttPsn = -1; // Karn: no RTT sample across a retransmission
        qp.counters.retries++;
        ctx.counters().retransmits++;
        if (qp.requester.rewind(psn)) {
            retransmitAt = 0;
            qp.requester.run();
        }
        ensureTimer();
    }

    /**
     * Go-Back-N after a local ACK timeout: from the head WQE's first unacknowledged packet (a READ from its first
     * missing response, an atomic whole). Re-arms the timer (ensureTimer) while anything is still outstanding.
     */
    void retryFromHead() {
        SendWqe w = qp.sq.head();
        int from = w.opcode == WrOpcode.RDMA_READ ? Psn.add(w.firstPsn, w.respPkts)
                : w.opcode.isAtomic() ? w.firstPsn
                : Psn.compare(unackedPsn, w.firstPsn) > 0 ? unackedPsn : w.firstPsn;
        // what timed out is lost, in no socket buffer: its room goes to the QPs waiting for the budget, so that a
        // QP whose peer went silent does not hold up the device's other QPs (its resends are not counted again)
        qp.flowRelease(qp.flowHeld);
        retry(from);
    }

    /** While anything is outstanding a retransmit timer runs, whatever path led here. */
    void ensureTimer() {
        if (retransmitAt == 0 && qp.timeoutNanos > 0 && !qp.requester.rnrWaiting() && hasOutstanding()
                && qp.state != QpState.ERR) {
            retransmitAt = ctx.clock().nanoTime() + qp.timeoutNanos;
            ctx.timers().arm(qp);
        }
    }

    private void rnrWait(int psn, long nanos) {
        if (qp.rnrRetry != 7) {
            if (rnrLeft <= 0) {
                failOldest(WcStatus.RNR_RETRY_EXC_ERR, 0);
                return;
            }
            rnrLeft--;
        }
        qp.counters.rnrWaits++;
        // the responder discarded everything from psn on (IBA 9.7.5.2.8), and this QP sends nothing until the
        // back-off ends: its room goes to the QPs waiting for the budget (its resends are not counted again)
        qp.flowRelease(qp.flowHeld);
        qp.requester.onRnrNak(psn, ctx.clock().nanoTime() + nanos);
        retransmitAt = 0;
        ctx.timers().arm(qp);
    }

    /** The earliest of this QP's armed deadlines (retransmit, tail probe, RNR back-off), 0 when none is armed. */
    long nextDeadline() {
        long at = 0;
        if (retransmitAt != 0) at = retransmitAt;
        if (probeAt != 0 && (at == 0 || probeAt - at < 0)) at = probeAt;
        if (qp.requester.rnrWaiting()) {
            long r = qp.requester.rnrUntil();
            if (at == 0 || r - at < 0) at = r;
        }
        return at;
    }

    /** Timer check, on the event loop. Returns true while a timer is still armed. */
    boolean onTimer(long now) {
        Requester req = qp.requester;
        if (req.rnrWaiting()) {
            if (req.rnrWaitOver(now)) {
                req.run();
            } else {
                return true;
            }
        }
        if (retransmitAt != 0 && now - retransmitAt >= 0) {
            retransmitAt = 0;
            if (hasOutstanding()) {
                qp.counters.timeouts++;
                ctx.counters().timeouts++;
                retriedAt = -1;
                if (recovery.onTimeout()) return retransmitAt != 0 || req.rnrWaiting() || probeAt != 0;
            }
        }
        if (probeAt != 0 && now - probeAt >= 0) {
            probeAt = 0;
            if (hasOutstanding() && !req.rnrWaiting() && qp.state == QpState.RTS && req.probe(unackedPsn)) {
                qp.counters.probes++;
                armProbe(true);
            }
        }
        return retransmitAt != 0 || req.rnrWaiting() || probeAt != 0;
    }

    private void retire(SendWqe w, WcStatus status, int vendorErr) {
        w.done = true;
        boolean complete = status != WcStatus.SUCCESS || w.signaled;
        long wrId = w.wrId;
        WrOpcode op = w.opcode;
        int byteLen = op.isAtomic() ? 8 : w.length;
        // Free the slot before the completion becomes visible: a poller that sees it may post into the slot
        // at once (so the WQE's fields are read above). Retiring first also keeps the flush of a CQ overrun,
        // which starts at the send queue head, from retiring this WQE a second time.
        qp.sq.consumed++;
        qp.requester.retiredUpTo(qp.sq.consumed);
        if (complete) qp.completeSend(wrId, op, status, byteLen, vendorErr);
    }

    /** The oldest WQE fails with {@code status}; the QP goes to the error state and flushes. */
    void failOldest(WcStatus status, int vendorErr) {
        qp.enterError("send WR failed: " + status);
        if (!qp.sq.isEmpty()) {
            SendWqe w = qp.sq.head();
            retire(w, status, vendorErr);
        }
        retransmitAt = 0;
        qp.flushIfError();
    }
}
