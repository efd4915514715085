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
    int unackedPsn;
    int retryLeft;
    int rnrLeft;
    /** Tail-loss probe deadline, 0 when none; and the current probe interval (doubles without progress). */
    long probeAt;
    private long probeInterval;
    /** Smoothed round trip (AckReq packet to the ACK covering it), 0 until measured; Karn's rule on retries. */
    long srttNanos;
    private int rttPsn = -1;
    private long rttStart;
    /** Retransmit deadline on the device clock, 0 when no timer is armed. */
    long retransmitAt;
    /** The resume PSN a Go-Back-N was last started for, so one gap is retried once until progress. */
    private int retriedAt = -1;
    /** Selective repeat: the SACK scoreboard (null when the extension is off: Go-Back-N). */
    SackScoreboard sack;
    /** Selective repeat: the PSN a READ was last asked again from, so one gap in its responses asks once. */
    private int readResumedAt = -1;
    /**
     * Selective repeat: READ responses of the head READ that arrived past a gap and were placed already, one bit per
     * PSN in (expected, expected + {@link JroceExtensions#OOO_WINDOW}); {@link #readGotWqe} is the READ they belong to.
     */
    private final long[] readGot = new long[JroceExtensions.OOO_WINDOW / 64];
    private SendWqe readGotWqe;
    private int readGotCount;
    /** Selective repeat: the last PSN of the gap last asked for again (valid while {@link #readAsked}). */
    private int readAskedEnd;
    private boolean readAsked;
    /** Selective repeat's tail-loss probe when the device has none configured (IRN's RTO_low). */
    static final long SR_PROBE_NANOS = 1_000_000;
    /** The window policy: congestion control between jroce peers that agreed on it, else none (plain IBA). */
    private CongestionWindow cc = CongestionWindow.NONE;

    Completer(QueuePair qp, EngineContext ctx) {
        this.qp = qp;
        this.ctx = ctx;
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
        readResumedAt = -1;
        clearReadGot();
        if ((qp.extensions & JroceExtensions.SELECTIVE_REPEAT) != 0) {
            if (sack == null) sack = new SackScoreboard();
            sack.reset(startPsn);
        } else {
            sack = null;
        }
        if ((qp.extensions & JroceExtensions.CONGESTION_CONTROL) != 0) {
            int ceiling = ctx.maxUnackedPsns();
            if (sack != null) ceiling = Math.min(ceiling, JroceExtensions.OOO_WINDOW);
            cc = new CongestionControl(ceiling);
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
        // selective repeat: a packet sent during recovery is held behind the hole, so its ACK would time the
        // recovery, not the path (Karn's rule, extended to everything sent while a hole is open)
        if (rttPsn < 0 && !retransmission && (sack == null || !sack.inRecovery)) {
            rttPsn = psn;
            rttStart = ctx.clock().nanoTime();
        }
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
        // between selective-repeat peers the probe is IRN's RTO_low: always on (1 ms unless configured), since the
        // peer is known to be a jroce endpoint, for which a probe is never a burden
        if (base <= 0 && sack != null) base = SR_PROBE_NANOS;
        if (base <= 0) return;
        // never probe sooner than a few round trips: on a slow path (rxe under emulation, 10-50 ms) a fixed
        // 1 ms probe would resend the head of nearly every message
        base = Math.max(base, 4 * srttNanos);
        probeInterval = backoff ? Math.min(probeInterval * 2, Math.max(base, qp.timeoutNanos / 2)) : base;
        probeAt = ctx.clock().nanoTime() + probeInterval;
        ctx.timers().arm(qp);
    }

    private void progress() {
        rttAcked(Psn.add(unackedPsn, -1));
        if (sack != null) {
            sack.advance(unackedPsn);
            readResumedAt = -1;
        }
        // timers run only while something sent is unacknowledged: a QP that waits for window or flow-control room
        // with everything acknowledged has nothing to time out (packetSent arms them again)
        boolean onWire = hasOutstanding() && Psn.compare(unackedPsn, qp.requester.sentEnd) < 0;
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
        if (Psn.compare(psn, qp.requester.sqPsn) >= 0) {
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
            qp.flowRelease(sack == null ? acked : Math.max(0, acked - sack.takeCleared())); // SACKed PSNs were released then
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
                if (code == Aeth.NakCode.PSN_SEQUENCE_ERROR && sack != null) {
                    onSack(psn, p.aeth().msn());
                } else if (code == Aeth.NakCode.PSN_SEQUENCE_ERROR) {
                    qp.counters.seqNaksReceived++;
                    retry(psn);
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
                // selective repeat: the responder may acknowledge later requests before it has sent all of this
                // READ's responses (they leave in passes), so passing it is no sign of loss; gaps and timers are
                if (sack == null && Psn.compare(psn, w.lastPsn) >= 0) {
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
                    int acked = Psn.distance(w.firstPsn, unackedPsn);
                    if (qp.requester.sqNext == qp.sq.consumed && w.nextPkt < acked) w.nextPkt = acked; // skip what arrived
                }
                break;
            }
            // Acknowledged through its last PSN: complete, even if a Go-Back-N pass was resending it
            // (the responder had it all; the NAK or timeout that rewound us was about a later packet).
            if (!w.fullySent()) w.nextPkt = w.npkts;
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

    private void onReadResponse(RocePacket p, int psn) {
        ackThrough(Psn.add(psn, -1));
        if (qp.sq.isEmpty()) return;
        SendWqe w = qp.sq.head();
        if (!w.started || w.opcode != WrOpcode.RDMA_READ || w.done) {
            ctx.counters().ghostResponse++;
            return;
        }
        int expected = Psn.add(w.firstPsn, w.respPkts);
        if (sack != null) {
            onReadResponseSelective(w, p, psn, expected);
            return;
        }
        int cmp = Psn.compare(psn, expected);
        if (cmp < 0) {
            qp.counters.duplicatesSeen++;
            return;
        }
        if (cmp > 0) {
            // a response was lost: ask again from the first missing one (rxe: COMPST_ERROR_RETRY)
            if (Psn.compare(psn, w.lastPsn) <= 0) {
                if (sack == null) {
                    retry(expected);
                } else if (readResumedAt != expected) {
                    readResumedAt = expected; // once per gap: later responses of the same stream say the same
                    qp.requester.resendOne(expected, null, true);
                }
            }
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
        if (last) {
            w.done = true;
            qp.requester.readRetired();
            retire(w, WcStatus.SUCCESS, 0);
        }
        progress();
    }

    /**
     * Selective repeat: a READ response is placed wherever it lands in the message, in order or past a gap (up to
     * {@link JroceExtensions#OOO_WINDOW} PSNs ahead), since every response packet's place follows from its PSN: packet
     * k carries bytes [k·MTU, (k+1)·MTU), the last one the rest. A jroce responder sends each packet exactly as the
     * first time (FIRST, MIDDLE, LAST or ONLY by its place in the message), also when it sends it again. A gap
     * is asked again alone: from the first missing PSN up to the first one already placed ({@link #readHoleRun}),
     * once per gap, and the READ completes when every packet is in.
     */
    private void onReadResponseSelective(SendWqe w, RocePacket p, int psn, int expected) {
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
        int npkts = Psn.distance(w.firstPsn, w.lastPsn) + 1;
        long offset = (long) index * mtu;
        long want = Math.min(mtu, w.length - offset);
        Opcode op = p.opcode();
        if (op.startsMessage() != (index == 0) || op.endsMessage() != (index == npkts - 1) || p.payloadLength() != want) {
            failOldest(p.payloadLength() == want ? WcStatus.BAD_RESP_ERR : WcStatus.LOC_LEN_ERR, 0);
            return;
        }
        if (!scatter(w, offset, p.buffer(), p.payloadOffset(), (int) want, 0)) return;
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
        unackedPsn = next;
        if (w.respPkts == npkts) {
            clearReadGot();
            w.done = true;
            qp.requester.readRetired();
            retire(w, WcStatus.SUCCESS, 0);
        } else if (readGotCount > 0) {
            askReadGap(w, next); // the next gap is known already: packets past it are placed
        }
        progress();
    }

    /** Asks again for the gap that starts at {@code from} (the READ's first missing PSN), unless it was asked for already. */
    private void askReadGap(SendWqe w, int from) {
        if (readAsked && Psn.compare(from, readAskedEnd) <= 0) return; // inside the gap asked for last: on its way
        readAsked = true;
        readAskedEnd = Psn.add(from, readHoleRun(w) - 1);
        qp.requester.resendOne(from, null, true);
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

    /**
     * Selective repeat: how many response packets of READ {@code w} to ask for from its first missing one: up to the
     * first packet already placed past the gap, or to the end of the message.
     */
    int readHoleRun(SendWqe w) {
        int npkts = Psn.distance(w.firstPsn, w.lastPsn) + 1;
        int from = w.respPkts;
        if (sack == null || readGotWqe != w || readGotCount == 0) return npkts - from;
        for (int k = 1; from + k < npkts && k < JroceExtensions.OOO_WINDOW; k++) {
            if (readGot(Psn.add(w.firstPsn, from + k))) return k;
        }
        return npkts - from;
    }

    /** Writes READ payload or an atomic's original value into the WQE's scatter list. */
    private boolean scatter(SendWqe w, long off, ByteBuf src, int srcIdx, int len, long atomicValue) {
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

    /**
     * Selective repeat: the responder holds {@code sackedPsn} and expects the NAK's PSN (already applied as a
     * cumulative acknowledgement as far as it goes: not past an unanswered READ). Enters recovery if not in it, then resends each PSN below the highest SACKed
     * one that was neither SACKed nor resent earlier in this recovery.
     */
    private void onSack(int expected, int msn) {
        qp.counters.sacksReceived++;
        SackScoreboard sb = sack;
        sb.advance(unackedPsn);
        int first = Psn.add(expected, JroceExtensions.sackOffset(msn));
        int count = JroceExtensions.sackCount(msn);
        int sackedPsn = Psn.add(first, count - 1);
        if (JroceExtensions.sackOffset(msn) == 0 || count == 0 || Psn.compare(sackedPsn, qp.requester.sqPsn) >= 0
                || !sb.inWindow(sackedPsn)) {
            return; // malformed, stale or out of range
        }
        if (!sb.inWindow(first)) { // partly acknowledged since (a SACK overtaken by an ACK): the rest still counts
            first = Psn.next(unackedPsn);
            count = Psn.distance(first, sackedPsn) + 1;
        }
        qp.flowRelease(sb.mark(first, count)); // held by the responder, no longer in its socket buffer
        if (!sb.inRecovery) {
            sb.inRecovery = true;
            sb.recoveryPsn = qp.requester.sqPsn;
            sb.rtxNext = unackedPsn;
            cc.onLoss(ctx.clock().nanoTime(), srttNanos);
            rttPsn = -1; // Karn: no RTT sample across a retransmission
        }
        // the responder has every request before the PSN it expects: a READ there is being answered, not lost
        if (Psn.compare(expected, sb.rtxNext) > 0) sb.rtxNext = expected;
        // resends sent before something now SACKed were lost as well: resent again now, not after a probe or timeout
        for (int lost = sb.nextLostResend(unackedPsn); lost >= 0 && qp.state == QpState.RTS; lost = sb.nextLostResend(unackedPsn)) {
            if (Psn.compare(lost, expected) < 0) continue; // the responder has it (a READ being answered)
            sb.setResent(lost, false);
            qp.counters.lostRetransmits++;
            qp.requester.resendOne(lost, sb, false);
        }
        resendHoles(sb.highSack, false);
        ensureTimer();
    }

    /**
     * Resends the holes in [rtxNext, end): PSNs not SACKed and not resent already (unless found lost again). After
     * a timeout every hole is resent, and an unfinished READ or atomic is asked again even if its request was
     * SACKed: its response may be what was lost.
     */
    private void resendHoles(int end, boolean afterTimeout) {
        SackScoreboard sb = sack;
        int p = Psn.compare(sb.rtxNext, unackedPsn) < 0 ? unackedPsn : sb.rtxNext;
        int budget = SackScoreboard.SIZE;
        while (Psn.compare(p, end) < 0 && budget-- > 0 && qp.state == QpState.RTS) {
            // most PSNs below the highest SACK are SACKed: passed over without looking for their WQE
            p = !afterTimeout && sb.isSacked(p) ? Psn.next(p) : qp.requester.resendOne(p, sb, afterTimeout);
        }
        if (Psn.compare(p, sb.rtxNext) > 0) sb.rtxNext = p;
    }

    /**
     * Selective repeat, local ACK timeout: everything still unacknowledged and not SACKed is taken as lost and
     * resent once (no Go-Back-N: what the responder holds is not sent again). Counts against retry_cnt.
     */
    private void selectiveTimeout() {
        if (retryLeft <= 0) {
            failOldest(WcStatus.RETRY_EXC_ERR, 0);
            return;
        }
        retryLeft--;
        qp.counters.retries++;
        ctx.counters().retransmits++;
        rttPsn = -1;
        SackScoreboard sb = sack;
        cc.onTimeout(ctx.clock().nanoTime());
        sb.advance(unackedPsn);
        sb.inRecovery = true;
        sb.recoveryPsn = qp.requester.sqPsn;
        sb.rtxNext = unackedPsn;
        readResumedAt = -1;
        int end = Psn.add(unackedPsn, SackScoreboard.SIZE);
        if (Psn.compare(end, qp.requester.sqPsn) > 0) end = qp.requester.sqPsn;
        resendHoles(end, true);
        ensureTimer();
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
        if (retryLeft <= 0) {
            failOldest(WcStatus.RETRY_EXC_ERR, 0);
            return;
        }
        // The IBA spec makes only rnr_retry 7 infinite; rdma_rxe also treats retry_cnt 7 so. We follow the spec.
        retryLeft--;
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
        qp.requester.onRnrNak(psn, ctx.clock().nanoTime() + nanos);
        retransmitAt = 0;
        ctx.timers().arm(qp);
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
                if (sack != null && !req.rnrWaiting()) {
                    selectiveTimeout();
                    return retransmitAt != 0 || req.rnrWaiting() || probeAt != 0;
                }
                SendWqe w = qp.sq.head();
                int from = w.opcode == WrOpcode.RDMA_READ ? Psn.add(w.firstPsn, w.respPkts)
                        : w.opcode.isAtomic() ? w.firstPsn
                        : Psn.compare(unackedPsn, w.firstPsn) > 0 ? unackedPsn : w.firstPsn;
                retry(from); // re-arms the timer (ensureTimer) while anything is still outstanding
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
