package io.jroce.endpoint;

import io.jroce.wire.Aeth;
import io.jroce.wire.Opcode;
import io.jroce.wire.Psn;
import io.jroce.wire.RocePacket;
import io.netty.buffer.ByteBuf;

/**
 * The selective-repeat responder's order ({@link JroceExtensions#SELECTIVE_REPEAT}; IRN, Mittal et al. SIGCOMM 2018):
 * a request past a gap is kept (a WRITE MIDDLE of the message being written lands in place at once) and reported in
 * a SACK, a PSN sequence error NAK for the expected PSN whose MSN field names the run held, so the requester resends
 * only what is missing; when the gap closes the held requests are executed in order and acknowledged once. What it
 * holds is bounded by the window ({@link JroceExtensions#OOO_WINDOW}) and by the device-wide budget of its
 * {@link ReorderBuffer}.
 */
final class ReorderStore implements RequestOrder {
    /** SACK runs noted per receive burst; a new run once these are full sends the owed ones first. */
    private static final int MAX_SACK_RUNS = 4;
    /** A run that only grew is reported once this many requests have been held since the last SACK. */
    private static final int SACK_EVERY = 32;
    /** How far below a new gap {@link #emitOwed} looks for the run before it (past the lost packets). */
    private static final int SACK_GAP_SCAN = 64;
    /** WRITE FIRSTs held past a gap whose messages' MIDDLEs are placed on arrival ({@link #noteAhead}), at most. */
    private static final int AHEAD_MAX = 16;

    private final Responder resp;
    private final QueuePair qp;
    private final EngineContext ctx;
    private final PacketOut out;
    private final ReorderBuffer store;
    private final RocePacket held = new RocePacket();
    private boolean draining;
    /** The runs of held PSNs that requests of the current receive burst landed in, each owed one SACK at the next flush. */
    private final int[] sackLo = new int[MAX_SACK_RUNS];
    private final int[] sackHi = new int[MAX_SACK_RUNS];
    /** The run began after a new gap in this burst: its SACK is preceded by one for the run below (see emitOwed). */
    private final boolean[] sackNewGap = new boolean[MAX_SACK_RUNS];
    private int sackRuns;
    /**
     * Whether the SACKs owed must go at the next flush: a new run began (a gap the requester must hear of at once)
     * or a held request asked for an acknowledgement. Otherwise a run that only grew is reported once
     * {@link #SACK_EVERY} requests have been held since the last SACK, about as often as ACKs go without loss.
     */
    private boolean sackUrgent;
    private int heldSinceSack;
    /** The block {@link #emitOwed} sent last in this flush (not sent twice). */
    private int sackSentLo;
    private int sackSentHi;
    /**
     * WRITE FIRSTs held past a gap whose RETH names a writable region, oldest first: a MIDDLE of one of these messages
     * is placed on arrival like a MIDDLE of the message in progress, so a loss does not make every packet of the
     * messages behind it a copy in the store. Bounded; a FIRST that finds the table full is held as before.
     */
    private final int[] aheadPsn = new int[AHEAD_MAX];
    private final long[] aheadVa = new long[AHEAD_MAX];
    private final long[] aheadLength = new long[AHEAD_MAX];
    private final MemoryRegion[] aheadMr = new MemoryRegion[AHEAD_MAX];
    private int aheadCount;

    ReorderStore(Responder resp, QueuePair qp, EngineContext ctx) {
        this.resp = resp;
        this.qp = qp;
        this.ctx = ctx;
        this.out = ctx.out();
        this.store = new ReorderBuffer(JroceExtensions.OOO_WINDOW, ctx);
    }

    @Override
    public void reset() {
        dropOwed();
        heldSinceSack = 0;
        store.clear();
        forgetAhead();
    }

    /**
     * Keeps a request that arrived past a gap and reports it with a SACK. A request beyond the window is dropped and
     * counted; the requester's timeout or a later SACK recovers it.
     */
    @Override
    public void onAhead(RocePacket p, int psn) {
        int ePsn = resp.expectedPsn();
        if (!store.fits(ePsn, psn)) {
            qp.counters.oooDropped++;
            return;
        }
        if (!store.has(psn) && (resp.placeEarly(p, psn) || placeAhead(p, psn))) {
            store.putPlaced(psn, p.ackReq());
            qp.counters.outOfOrder++;
            qp.counters.writesPlacedOutOfOrder++;
            oweSack(psn, p.ackReq());
            return;
        }
        int put = store.put(psn, p.buffer(), p.offset(), p.length());
        if (put == ReorderBuffer.NO_ROOM) {
            qp.counters.oooDropped++; // the transport's stores are full: dropped like a packet past the window
            return;
        }
        if (put == ReorderBuffer.STORED) {
            qp.counters.outOfOrder++;
            if (p.opcode() == Opcode.RC_RDMA_WRITE_FIRST) noteAhead(p, psn);
        } else {
            qp.counters.duplicatesSeen++; // resent although held: SACK it again, the SACK was lost
        }
        oweSack(psn, p.ackReq() || put == ReorderBuffer.HELD_ALREADY);
    }

    /** Executes held requests from the expected PSN on, in order, then acknowledges the new expected PSN once. */
    @Override
    public void afterInOrder() {
        if (store.size() == 0) return;
        int drained = 0;
        draining = true;
        try {
            while (store.has(resp.expectedPsn()) && resp.acceptsRequests()) {
                int psn = resp.expectedPsn();
                if (store.isPlaced(psn)) {
                    store.takePlaced(psn);
                    if (!resp.executePlaced(psn)) break;
                    drained++;
                    continue;
                }
                int len = store.length(psn);
                byte[] d = store.take(psn);
                if (aheadCount > 0 && aheadPsn[0] == psn) dropOldestAhead(); // its message is in progress now
                if (held.decode(io.netty.buffer.Unpooled.wrappedBuffer(d, 0, len), 0, len) != io.jroce.wire.Problem.NONE) {
                    ctx.counters().drop(DropReason.MALFORMED); // cannot happen: it decoded when it arrived
                    break;
                }
                resp.execute(held, psn);
                if (resp.expectedPsn() == psn) break; // not accepted (RNR, error): the requester resends from here
                drained++;
            }
        } finally {
            draining = false;
        }
        // the gap closed: the slots' bytes go back to the device's budget, or a QP that once held a gap would keep its
        // arrays for good and, across many QPs, the budget would be spent on stores that hold nothing
        if (store.size() == 0) {
            store.release();
            forgetAhead();
        }
        if (drained > 0 && resp.acceptsRequests()) resp.coalesceAck(Psn.add(resp.expectedPsn(), -1));
    }

    @Override
    public boolean draining() {
        return draining;
    }

    @Override
    public boolean placesReadResponses() {
        return true;
    }

    /**
     * Places a WRITE MIDDLE of a message whose FIRST is held ({@link #noteAhead}) where that FIRST's RETH says, as the
     * in-order pass would once it reaches it: packet {@code k} of the message carries bytes {@code k * MTU} on. A
     * packet at the position of the message's LAST, or beyond it, is not placed.
     */
    private boolean placeAhead(RocePacket p, int psn) {
        if (aheadCount == 0 || p.opcode() != Opcode.RC_RDMA_WRITE_MIDDLE) return false;
        int mtu = qp.mtu;
        if (p.payloadLength() != mtu) return false;
        for (int i = aheadCount - 1; i >= 0; i--) {
            int k = Psn.distance(aheadPsn[i], psn);
            if (k <= 0 || k >= JroceExtensions.OOO_WINDOW) continue; // before this FIRST: an older message's, if any
            long at = (long) k * mtu;
            MemoryRegion mr = aheadMr[i];
            if (at + mtu >= aheadLength[i] || !mr.rkeyUsable()) return false; // its LAST or beyond, or deregistered since
            out.beforeMemoryWrite();
            mr.mem().setBytes(mr.offsetOf(aheadVa[i] + at), p.buffer(), p.payloadOffset(), mtu);
            return true;
        }
        return false;
    }

    /** Notes a WRITE FIRST just held, if its RETH is one the responder will accept: see {@link #placeAhead}. */
    private void noteAhead(RocePacket p, int psn) {
        MemoryRegion mr = resp.writeTargetAhead(p);
        if (mr == null || aheadCount == AHEAD_MAX) return;
        if (aheadCount > 0 && Psn.compare(psn, aheadPsn[aheadCount - 1]) <= 0) return; // kept in PSN order: a late FIRST is not noted
        aheadPsn[aheadCount] = psn;
        aheadVa[aheadCount] = p.reth().va();
        aheadLength[aheadCount] = p.reth().dmaLengthUnsigned();
        aheadMr[aheadCount] = mr;
        aheadCount++;
    }

    private void dropOldestAhead() {
        aheadCount--;
        System.arraycopy(aheadPsn, 1, aheadPsn, 0, aheadCount);
        System.arraycopy(aheadVa, 1, aheadVa, 0, aheadCount);
        System.arraycopy(aheadLength, 1, aheadLength, 0, aheadCount);
        System.arraycopy(aheadMr, 1, aheadMr, 0, aheadCount);
        aheadMr[aheadCount] = null;
    }

    private void forgetAhead() {
        java.util.Arrays.fill(aheadMr, 0, aheadCount, null);
        aheadCount = 0;
    }

    /** Notes that the run holding {@code psn} is owed a SACK; {@code urgent}: at the next flush (AckReq, a duplicate). */
    private void oweSack(int psn, boolean urgent) {
        heldSinceSack++;
        // a packet that does not extend a run held already opens one after a new gap: the requester hears at once
        boolean newGap = !store.has(Psn.add(psn, -1));
        if (urgent || newGap || heldSinceSack >= SACK_EVERY) sackUrgent = true;
        for (int i = 0; i < sackRuns; i++) {
            if (psn == Psn.next(sackHi[i])) {
                sackHi[i] = psn; // the usual case: the run grows at its top
                return;
            }
            if (Psn.compare(psn, Psn.add(sackLo[i], -1)) >= 0 && Psn.compare(psn, sackHi[i]) <= 0) {
                if (Psn.compare(psn, sackLo[i]) < 0) sackLo[i] = psn;
                sackNewGap[i] |= newGap;
                return;
            }
        }
        if (sackRuns == MAX_SACK_RUNS) resp.emitPendingAck();
        sackLo[sackRuns] = psn;
        sackHi[sackRuns] = psn;
        sackNewGap[sackRuns] = newGap;
        sackRuns++;
        ctx.ackPending(resp);
    }

    /**
     * Sends the owed SACKs: for each run noted this burst, the whole run of PSNs held around it now (it may have
     * grown, merged with a neighbour, or been executed in part), as one NAK (PSN sequence error) for the expected
     * PSN with the SACK block in the MSN field.
     */
    @Override
    public void emitOwed() {
        int n = sackRuns;
        if (n == 0) return;
        sackRuns = 0;
        if (!sackUrgent) return; // only runs that grew: reported with a later SACK, or covered by the ACK
        sackUrgent = false;
        heldSinceSack = 0;
        sackSentLo = -1;
        sackSentHi = -1;
        int ePsn = resp.expectedPsn();
        for (int i = 0; i < n; i++) {
            int lo = sackLo[i];
            int hi = sackHi[i];
            if (Psn.compare(hi, ePsn) <= 0) continue; // executed since: the cumulative ACK covers it
            if (Psn.compare(lo, ePsn) <= 0) lo = Psn.next(ePsn);
            while (Psn.compare(lo, hi) <= 0 && !store.has(lo)) lo = Psn.next(lo);
            if (Psn.compare(lo, hi) > 0) continue;
            lo = store.runStart(ePsn, lo);
            hi = store.runEnd(ePsn, hi);
            if (sackNewGap[i]) {
                // a new gap: first the run below it once more, so that a requester whose last SACK of that run was
                // lost does not take the packets it did not hear of for lost when it hears of the new gap
                int below = Psn.add(lo, -2);
                for (int k = 0; k < SACK_GAP_SCAN && Psn.compare(below, ePsn) > 0; k++, below = Psn.add(below, -1)) {
                    if (store.has(below)) {
                        sendSack(ePsn, store.runStart(ePsn, below), below);
                        break;
                    }
                }
            }
            sendSack(ePsn, lo, hi);
        }
    }

    private void sendSack(int ePsn, int lo, int hi) {
        if (lo == sackSentLo && hi == sackSentHi) return;
        int offset = Psn.distance(ePsn, lo);
        int count = Math.min(Psn.distance(lo, hi) + 1, 4095);
        if (offset > 4095) return; // beyond what a block can name (the store is smaller than this)
        sackSentLo = lo;
        sackSentHi = hi;
        qp.counters.sacksSent++;
        Opcode op = Opcode.RC_ACKNOWLEDGE;
        ByteBuf b = out.startPacket(qp, op, 0, false, false, ePsn);
        out.views().aeth.wrap(b, op.aethOffset()).write(Aeth.nak(Aeth.NakCode.PSN_SEQUENCE_ERROR), JroceExtensions.sackMsn(offset, count));
        out.finishPacket(qp, b);
    }

    @Override
    public void dropOwed() {
        sackRuns = 0;
        sackUrgent = false;
    }

    @Override
    public void release() {
        store.release();
        forgetAhead();
    }
}
