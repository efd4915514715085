package io.jroce.endpoint;

import io.jroce.wire.Aeth;
import io.jroce.wire.Opcode;
import io.jroce.wire.Operation;
import io.jroce.wire.Psn;
import io.jroce.wire.RocePacket;
import io.netty.buffer.ByteBuf;

/**
 * The responder: checks each request's PSN and opcode sequence, executes SEND, WRITE, READ and atomics
 * against the receive queue and registered memory, answers with ACKs, READ responses and atomic ACKs,
 * and NAKs what the spec says to NAK (rdma_rxe rxe_resp.c; IBA 9.7.5 and 9.9.3).
 */
final class Responder {
    private static final int READ_PACKETS_PER_PASS = 32;
    private static final long MAX_DMA_LENGTH = 1L << 31;

    private final QueuePair qp;
    private final EngineContext ctx;
    /** The transmit path: responses, ACKs and NAKs leave through it. */
    private final PacketOut out;
    private final HeaderViews views;
    int ePsn;
    int msn;
    /** The message in progress: 0 none, else SEND or WRITE, waiting for MIDDLE/LAST. */
    private Operation inProgress;
    private long recvOffset;
    private MemoryRegion writeMr;
    private long writeVa;
    private long writeRemaining;
    private long writeTotal;
    private ResponderResource[] resources = new ResponderResource[0];
    /** Resources made so far: {@code resources[0..resourcesUsed)} (they are taken in turn from the first). */
    private int resourcesUsed;
    private int nextResource;
    private boolean pumpScheduled;
    /** What becomes of requests past the expected PSN: {@link InOrder} (plain IBA) or a {@link ReorderStore}. */
    private final InOrder inOrder;
    /** Selective repeat's store, made the first time the extension is on and kept for the QP's later lives. */
    private ReorderStore reorderStore;
    private RequestOrder order;
    /**
     * ACK coalescing: the plain positive ACK owed for the newest AckReq of the current receive burst, not sent
     * yet. An ACK of PSN n acknowledges every PSN up to n (IBA 9.7.5.1, coalesced acknowledges; rdma_rxe
     * rxe_comp.c check_psn completes every earlier WQE on a later ACK), so one ACK per QP and burst says as much
     * as one per AckReq. It leaves at the transport's next flush (the end of the burst) or before any other
     * packet this responder sends, so our responses stay in PSN order on the wire.
     */
    private boolean ackPending;
    private int ackPsn;
    /** The MSN the pending ACK carries: the MSN when its AckReq was answered, as an immediate ACK would carry. */
    private int ackMsn;
    /** On the transport's list of responders with a pending ACK (once per flush, however many ACKs it folded). */
    boolean ackListed;
    Responder(QueuePair qp, EngineContext ctx) {
        this.qp = qp;
        this.ctx = ctx;
        this.out = ctx.out();
        this.views = out.views();
        this.inOrder = new InOrder(this, qp);
        this.order = inOrder;
    }

    /** The PSN the next request in order carries (ePSN). */
    int expectedPsn() {
        return ePsn;
    }

    /** Whether a request in sequence arrived since {@link #reset} (the first fires COMM_EST). */
    private boolean firstRequestSeen;

    void reset(int rqPsn, int maxDestRdAtomic) {
        firstRequestSeen = false;
        ePsn = rqPsn;
        msn = 0;
        ackPending = false;
        inProgress = null;
        writeMr = null;
        int n = Math.max(1, maxDestRdAtomic);
        resources = new ResponderResource[n]; // made when first used: a QP given 128 may never use more than a few
        resourcesUsed = 0;
        nextResource = 0;
        if ((qp.extensions & JroceExtensions.SELECTIVE_REPEAT) != 0) {
            if (reorderStore == null) reorderStore = new ReorderStore(this, qp, ctx);
            order = reorderStore;
        } else {
            releaseStore();
            order = inOrder;
        }
        order.reset();
    }

    void onRequest(RocePacket p) {
        QpState st = qp.state;
        if (st != QpState.RTR && st != QpState.RTS && st != QpState.SQD && st != QpState.SQE) {
            ctx.counters().drop(DropReason.QP_STATE);
            return;
        }
        int psn = p.psn();
        int cmp = Psn.compare(psn, ePsn);
        if (cmp > 0) {
            order.onAhead(p, psn);
            return;
        }
        if (cmp < 0) {
            duplicate(p, psn);
            return;
        }
        if (!firstRequestSeen) {
            // the requester is sending, so it has our CM's REP: communication established (IBA 11.6.3, COMM_EST)
            firstRequestSeen = true;
            qp.device().firstPacket(qp.qpNum());
        }
        execute(p, psn);
        order.afterInOrder();
    }

    /**
     * A WRITE MIDDLE past a gap inside the WRITE message being executed lands where it belongs at once (its place
     * follows from its PSN: every PSN from ePSN on is a full-MTU packet of this message up to its LAST, IBA 9.7.5.1.4)
     * and only its PSN is held, so the in-order pass later just moves on. The FIRST checked the rkey and the range;
     * nothing else can act on these bytes before the message ends (a READ behind it waits for it; one before it
     * was answered whole when the FIRST was executed). Returns false where the packet must be held whole.
     */
    boolean placeEarly(RocePacket p, int psn) {
        if (inProgress != Operation.RDMA_WRITE || writeMr == null || p.opcode() != Opcode.RC_RDMA_WRITE_MIDDLE) return false;
        int mtu = qp.mtu;
        if (p.payloadLength() != mtu || !writeMr.rkeyUsable()) return false;
        long at = (long) Psn.distance(ePsn, psn) * mtu;
        if (at + mtu >= writeRemaining) return false; // not a MIDDLE of this message: its LAST or beyond
        out.beforeMemoryWrite();
        writeMr.mem().setBytes(writeMr.offsetOf(writeVa + at), p.buffer(), p.payloadOffset(), mtu);
        return true;
    }

    /**
     * The region a WRITE FIRST held past a gap will write, if its RETH passes the checks its execution makes (the QP's
     * remote write access, the R_Key, the bounds): the MIDDLEs of that message may then be placed on arrival too
     * ({@link ReorderStore}). Null otherwise, and nothing is answered: the FIRST's execution in order does that.
     */
    MemoryRegion writeTargetAhead(RocePacket first) {
        if ((qp.accessFlags & Access.REMOTE_WRITE) == 0 || first.payloadLength() != qp.mtu) return null;
        long dmaLen = first.reth().dmaLengthUnsigned();
        if (dmaLen <= qp.mtu || dmaLen > MAX_DMA_LENGTH) return null;
        MemoryRegion mr = ctx.keys().byRkey(first.reth().rkey());
        return remoteOk(mr, first.reth().va(), dmaLen, Access.REMOTE_WRITE) ? mr : null;
    }

    /** The in-order pass reaches a WRITE MIDDLE placed on arrival: the message moves on by one MTU. */
    boolean executePlaced(int psn) {
        int mtu = qp.mtu;
        if (inProgress != Operation.RDMA_WRITE || writeRemaining <= mtu) {
            // only a peer breaking the opcode sequence gets here: the same answer as for any such packet
            nakAndFail(Aeth.NakCode.INVALID_REQUEST, psn, "RDMA WRITE MIDDLE out of sequence");
            return false;
        }
        writeVa += mtu;
        writeRemaining -= mtu;
        advance(psn);
        return true;
    }

    boolean acceptsRequests() {
        QpState st = qp.state;
        return st == QpState.RTR || st == QpState.RTS || st == QpState.SQD || st == QpState.SQE;
    }

    /** Executes the request with the expected PSN. */
    void execute(RocePacket p, int psn) {
        if (p.opcode() != Opcode.RC_RDMA_READ_REQUEST) out.beforeMemoryWrite(); // READ responses queued carry the bytes as they are
        // responses leave in PSN order, and a request acts on memory as every earlier one left it: the responses of a
        // READ still streaming (it is answered a bounded number of packets per event-loop pass) go out before a later
        // request is executed or acknowledged, as rdma_rxe answers a READ whole before it takes the next request
        // (rxe_resp.c read_reply). Otherwise a WRITE behind a long READ could change bytes the READ has yet to send.
        if (pumpScheduled || oldestStreaming() != null) finishReadStreams();
        Opcode op = p.opcode();
        Operation kind = op.operation();
        // opcode sequence (IBA 9.7.5.1.4): a MIDDLE/LAST needs its FIRST, a new message may not interrupt one
        if (inProgress != null ? (kind != inProgress || op.startsMessage()) : !op.startsMessage()) {
            nakAndFail(Aeth.NakCode.INVALID_REQUEST, psn, "opcode " + op + " out of sequence");
            return;
        }
        if (!checkAccessAndLength(p, op, kind, psn)) return;
        switch (kind) {
            case SEND -> executeSend(p, op, psn);
            case RDMA_WRITE -> executeWrite(p, op, psn);
            case RDMA_READ_REQUEST -> executeRead(p, psn);
            case COMPARE_SWAP, FETCH_ADD -> executeAtomic(p, op, psn);
            default -> nakAndFail(Aeth.NakCode.INVALID_REQUEST, psn, "opcode " + op + " is not a request");
        }
    }

    private boolean checkAccessAndLength(RocePacket p, Opcode op, Operation kind, int psn) {
        int need = switch (kind) {
            case RDMA_WRITE -> Access.REMOTE_WRITE;
            case RDMA_READ_REQUEST -> Access.REMOTE_READ;
            case COMPARE_SWAP, FETCH_ADD -> Access.REMOTE_ATOMIC;
            default -> 0;
        };
        if ((qp.accessFlags & need) != need) {
            nakAndFail(Aeth.NakCode.INVALID_REQUEST, psn, op + " but the QP lacks " + Access.toString(need));
            return false;
        }
        if (kind == Operation.RDMA_READ_REQUEST || kind == Operation.COMPARE_SWAP
                || kind == Operation.FETCH_ADD) {
            if (qp.maxDestRdAtomic == 0) {
                nakAndFail(Aeth.NakCode.INVALID_REQUEST, psn, op + " with max_dest_rd_atomic 0");
                return false;
            }
            return true;
        }
        int len = p.payloadLength();
        int mtu = qp.mtu;
        // rxe check_length: FIRST/MIDDLE carry exactly one MTU, LAST 1..MTU, ONLY 0..MTU
        boolean ok = switch (op.position()) {
            case FIRST, MIDDLE -> len == mtu;
            case LAST -> len >= 1 && len <= mtu;
            case ONLY -> len <= mtu;
        };
        if (!ok) {
            nakAndFail(Aeth.NakCode.INVALID_REQUEST, psn, op + " with payload " + len + " at MTU " + mtu);
        }
        return ok;
    }

    private void executeSend(RocePacket p, Opcode op, int psn) {
        if (op.startsMessage()) {
            if (qp.rq.isEmpty()) {
                rnrNak(psn);
                return;
            }
            recvOffset = 0;
        }
        RecvWqe r = qp.rq.head();
        int len = p.payloadLength();
        if (recvOffset + len > r.capacity) {
            // the receive buffer is too short: local length error here, invalid request for the requester
            inProgress = null;
            nakAndFail(Aeth.NakCode.INVALID_REQUEST, psn, "SEND longer than the receive buffer", r, WcStatus.LOC_LEN_ERR);
            return;
        }
        if (!scatter(r, recvOffset, p.buffer(), p.payloadOffset(), len)) {
            inProgress = null;
            nakAndFail(Aeth.NakCode.REMOTE_OPERATIONAL_ERROR, psn, r.fault != null ? "an SGE of the receive names no usable region"
                    : "receive buffer was deregistered", r, r.fault != null ? r.fault : WcStatus.LOC_PROT_ERR);
            return;
        }
        recvOffset += len;
        advance(psn);
        if (!op.endsMessage()) {
            inProgress = Operation.SEND;
            ackIfAsked(p, psn);
            return;
        }
        inProgress = null;
        int flags = 0;
        int immInv = 0;
        if (op.hasImmDt()) {
            flags = WorkCompletion.WITH_IMM;
            immInv = p.immDt().imm();
        } else if (op.hasIeth()) {
            int rkey = p.ieth().rkey();
            MemoryRegion target = ctx.keys().byRkey(rkey);
            if (target == null || target.pd() != qp.pd() || !target.rkeyUsable()) {
                nakAndFail(Aeth.NakCode.INVALID_REQUEST, psn, "SEND_WITH_INV names unknown rkey 0x" + Integer.toHexString(rkey),
                        r, WcStatus.REM_INV_REQ_ERR);
                return;
            }
            target.invalidateRkey();
            flags = WorkCompletion.WITH_INV;
            immInv = rkey;
        }
        msn = (msn + 1) & Aeth.MSN_MASK;
        if (!qp.completeRecv(r, WcStatus.SUCCESS, WcOpcode.RECV, (int) recvOffset, immInv, flags, p.se())) {
            cqOverrun(psn);
            return;
        }
        ackIfAsked(p, psn);
    }

    private void executeWrite(RocePacket p, Opcode op, int psn) {
        if (op.startsMessage()) {
            long va = p.reth().va();
            int rkey = p.reth().rkey();
            long dmaLen = p.reth().dmaLengthUnsigned();
            MemoryRegion mr = ctx.keys().byRkey(rkey);
            // IBA C9-88 (rxe check_rkey): a zero-length WRITE need not carry a valid R_Key or VA, so none is checked
            if (dmaLen != 0 && (dmaLen > MAX_DMA_LENGTH || !remoteOk(mr, va, dmaLen, Access.REMOTE_WRITE))) {
                nakAndFail(Aeth.NakCode.REMOTE_ACCESS_ERROR, psn, "RDMA WRITE to rkey 0x" + Integer.toHexString(rkey)
                        + " va 0x" + Long.toHexString(va) + " len " + dmaLen + " is outside a writable region");
                return;
            }
            writeMr = dmaLen == 0 ? null : mr;
            writeVa = va;
            writeRemaining = dmaLen;
            writeTotal = dmaLen;
        }
        boolean withImm = op.hasImmDt();
        if (withImm && qp.rq.isEmpty()) {
            rnrNak(psn); // checked before any byte of this packet lands
            return;
        }
        int len = p.payloadLength();
        if (len > writeRemaining || (op.endsMessage() && len != writeRemaining)) {
            inProgress = null;
            nakAndFail(Aeth.NakCode.INVALID_REQUEST, psn, "RDMA WRITE payload does not add up to its DMA length");
            return;
        }
        if (len > 0) {
            if (!writeMr.rkeyUsable()) {
                inProgress = null;
                nakAndFail(Aeth.NakCode.REMOTE_ACCESS_ERROR, psn, "RDMA WRITE region was deregistered");
                return;
            }
            writeMr.mem().setBytes(writeMr.offsetOf(writeVa), p.buffer(), p.payloadOffset(), len);
            writeVa += len;
            writeRemaining -= len;
        }
        advance(psn);
        if (!op.endsMessage()) {
            inProgress = Operation.RDMA_WRITE;
            ackIfAsked(p, psn);
            return;
        }
        inProgress = null;
        msn = (msn + 1) & Aeth.MSN_MASK;
        if (withImm) {
            RecvWqe r = qp.rq.head();
            if (!qp.completeRecv(r, WcStatus.SUCCESS, WcOpcode.RECV_RDMA_WITH_IMM, (int) writeTotal, p.immDt().imm(),
                    WorkCompletion.WITH_IMM, p.se())) {
                cqOverrun(psn);
                return;
            }
        }
        ackIfAsked(p, psn);
    }

    private boolean remoteOk(MemoryRegion mr, long va, long len, int access) {
        return mr != null && mr.pd() == qp.pd() && mr.rkeyUsable() && (mr.access() & access) == access
                && mr.contains(va, len);
    }

    private void executeRead(RocePacket p, int psn) {
        long va = p.reth().va();
        int rkey = p.reth().rkey();
        long len = p.reth().dmaLengthUnsigned();
        MemoryRegion mr = ctx.keys().byRkey(rkey);
        // IBA C9-88: as for WRITE, a zero-length READ is answered without looking at its R_Key or VA
        if (len != 0 && (len > MAX_DMA_LENGTH || !remoteOk(mr, va, len, Access.REMOTE_READ))) {
            nakAndFail(Aeth.NakCode.REMOTE_ACCESS_ERROR, psn, "RDMA READ from rkey 0x" + Integer.toHexString(rkey)
                    + " va 0x" + Long.toHexString(va) + " len " + len + " is outside a readable region");
            return;
        }
        // QP-context rule: more READ/atomic requests in progress than max_dest_rd_atomic is an access error.
        // A READ is in progress here while its responses are still being sent.
        if (streamingCount() >= qp.maxDestRdAtomic) {
            nakAndFail(Aeth.NakCode.INVALID_REQUEST, psn, "more than max_dest_rd_atomic=" + qp.maxDestRdAtomic
                    + " READ/atomic requests outstanding");
            return;
        }
        int n = Math.max(1, (int) ((len + qp.mtu - 1) / qp.mtu));
        ResponderResource r = allocResource();
        r.atomic = false;
        r.valid = true;
        r.firstPsn = psn;
        r.lastPsn = Psn.add(psn, n - 1);
        r.va = va;
        r.rkey = rkey;
        r.length = len;
        r.mr = len == 0 ? null : mr;
        msn = (msn + 1) & Aeth.MSN_MASK; // C9-148: counted when the READ is accepted
        ePsn = Psn.add(psn, n);
        startStream(r, psn, va, len);
    }

    private int streamingCount() {
        int c = 0;
        for (int i = 0; i < resourcesUsed; i++) if (resources[i].valid && resources[i].streaming) c++;
        return c;
    }

    private ResponderResource allocResource() {
        ResponderResource r = resources[nextResource];
        if (r == null) {
            r = resources[nextResource] = new ResponderResource();
            resourcesUsed = nextResource + 1;
        }
        nextResource = (nextResource + 1) % resources.length;
        r.streaming = false;
        return r;
    }

    private void startStream(ResponderResource r, int psn, long va, long len) {
        r.streaming = true;
        r.nextPsn = psn;
        r.nextVa = va;
        r.remaining = len;
        r.firstOfStream = true;
        pumpReads();
    }

    /** Sends READ responses, a bounded number per event-loop pass so other QPs are not starved. */
    void pumpReads() {
        pumpScheduled = false;
        int budget = READ_PACKETS_PER_PASS;
        while (budget > 0) {
            ResponderResource r = oldestStreaming();
            if (r == null) return;
            while (budget > 0 && r.streaming) {
                sendReadResponse(r);
                budget--;
            }
        }
        if (oldestStreaming() != null && !pumpScheduled) {
            pumpScheduled = true;
            ctx.execute(this::pumpReads);
        }
        ctx.flushLater(); // responses written outside a receive pass need their own flush
    }

    /** Sends every response of the READs still streaming, in PSN order. */
    private void finishReadStreams() {
        ResponderResource r;
        while ((r = oldestStreaming()) != null) sendReadResponse(r);
        ctx.flushLater();
    }

    private ResponderResource oldestStreaming() {
        ResponderResource best = null;
        for (int i = 0; i < resourcesUsed; i++) {
            ResponderResource r = resources[i];
            if (r.valid && r.streaming && (best == null || Psn.compare(r.nextPsn, best.nextPsn) < 0)) best = r;
        }
        return best;
    }

    private void sendReadResponse(ResponderResource r) {
        if (qp.state == QpState.ERR || qp.state == QpState.RESET) {
            r.streaming = false;
            return;
        }
        int mtu = qp.mtu;
        int payload = (int) Math.min(mtu, r.remaining);
        boolean endOfStream = r.remaining <= mtu;
        if (!sendReadPacket(r, r.nextPsn, r.nextVa, payload, r.firstOfStream && r.nextPsn == r.firstPsn, endOfStream)) {
            r.streaming = false;
            return;
        }
        r.firstOfStream = false;
        r.nextPsn = Psn.next(r.nextPsn);
        r.nextVa += payload;
        r.remaining -= payload;
        if (endOfStream) r.streaming = false;
    }

    /**
     * One READ response packet. With selective repeat its opcode is the one its place in the message gives (FIRST,
     * MIDDLE, LAST, ONLY), also when it is sent again, so the requester can place it wherever it lands; without, a
     * READ asked again part-way is answered MIDDLE..LAST from the resume point (IBA 9.7.5.1, as rxe_resp.c does).
     * False if the region is gone (the QP was failed).
     */
    private boolean sendReadPacket(ResponderResource r, int psn, long va, int payload, boolean startsStream, boolean endsStream) {
        boolean placed = order.placesReadResponses();
        boolean first = placed ? psn == r.firstPsn : startsStream;
        boolean last = placed ? psn == r.lastPsn : endsStream;
        if (payload > 0 && !r.mr.rkeyUsable()) {
            nakAndFail(Aeth.NakCode.REMOTE_ACCESS_ERROR, psn, "READ region was deregistered");
            return false;
        }
        Opcode op = Opcode.rcReadResponse(first, last);
        emitPendingAck();
        ByteBuf b = out.startPacket(qp, op, payload, false, false, psn);
        if (op.hasAeth()) views.aeth.wrap(b, op.aethOffset()).write(Aeth.ACK_UNLIMITED, msn);
        if (payload > 0) out.payload(b, r.mr, r.mr.offsetOf(va), payload);
        out.finishPacket(qp, b);
        return true;
    }

    /**
     * Selective repeat: a READ asked again for a range this stream has already sent, while the stream is still
     * running: the range is sent again now, and the stream goes on where it was (restarting it from the range would
     * cut off the rest of the message, which the requester would then have to ask for too).
     */
    private void resendReadRange(ResponderResource r, int psn, long va, long len) {
        int mtu = qp.mtu;
        while (true) {
            int payload = (int) Math.min(mtu, len);
            if (!sendReadPacket(r, psn, va, payload, false, false)) {
                r.streaming = false;
                return;
            }
            len -= payload;
            if (len <= 0) break;
            psn = Psn.next(psn);
            va += payload;
        }
        ctx.flushLater();
    }

    private void executeAtomic(RocePacket p, Opcode op, int psn) {
        long va = p.atomicEth().va();
        int rkey = p.atomicEth().rkey();
        MemoryRegion mr = ctx.keys().byRkey(rkey);
        if ((va & 7) != 0) {
            // rxe RESPST_ERR_MISALIGNED_ATOMIC: invalid request
            nakAndFail(Aeth.NakCode.INVALID_REQUEST, psn, "atomic at misaligned va 0x" + Long.toHexString(va));
            return;
        }
        if (!remoteOk(mr, va, 8, Access.REMOTE_ATOMIC)) {
            nakAndFail(Aeth.NakCode.REMOTE_ACCESS_ERROR, psn, "atomic at rkey 0x" + Integer.toHexString(rkey)
                    + " va 0x" + Long.toHexString(va) + " is outside an atomic-enabled region");
            return;
        }
        if (streamingCount() >= qp.maxDestRdAtomic) {
            nakAndFail(Aeth.NakCode.INVALID_REQUEST, psn, "more than max_dest_rd_atomic READ/atomic requests outstanding");
            return;
        }
        int off = mr.offsetOf(va);
        long original = op == Opcode.RC_COMPARE_SWAP
                ? mr.compareAndSwap(off, p.atomicEth().compare(), p.atomicEth().swapAdd())
                : mr.fetchAndAdd(off, p.atomicEth().swapAdd());
        msn = (msn + 1) & Aeth.MSN_MASK;
        ResponderResource r = allocResource();
        r.atomic = true;
        r.valid = true;
        r.firstPsn = psn;
        r.lastPsn = psn;
        r.original = original;
        r.msn = msn;
        ePsn = Psn.next(psn);
        sendAtomicAck(psn, original, msn);
    }

    private void sendAtomicAck(int psn, long original, int ackMsn) {
        emitPendingAck();
        Opcode op = Opcode.RC_ATOMIC_ACKNOWLEDGE;
        ByteBuf b = out.startPacket(qp, op, 0, false, false, psn);
        views.aeth.wrap(b, op.aethOffset()).write(Aeth.ACK_UNLIMITED, ackMsn);
        views.atomicAckEth.wrap(b, op.atomicAckEthOffset()).originalData(original);
        out.finishPacket(qp, b);
    }

    /** IBA 9.7.5.1.2 / rxe duplicate_request: re-ACK, re-read, or replay the saved atomic result. */
    private void duplicate(RocePacket p, int psn) {
        qp.counters.duplicatesSeen++;
        Opcode op = p.opcode();
        switch (op.operation()) {
            case RDMA_READ_REQUEST -> {
                long va = p.reth().va();
                long len = p.reth().dmaLengthUnsigned();
                for (int i = 0; i < resourcesUsed; i++) {
                    ResponderResource r = resources[i];
                    if (!r.valid || r.atomic) continue;
                    if (Psn.compare(psn, r.firstPsn) < 0 || Psn.compare(psn, r.lastPsn) > 0) continue;
                    // the retry must ask for the same bytes or a tail of them, under the same key
                    if (p.reth().rkey() != r.rkey || va < r.va || va + len > r.va + r.length) break;
                    if (r.mr != null && !r.mr.rkeyUsable()) break;
                    int n = Math.max(1, (int) ((len + qp.mtu - 1) / qp.mtu));
                    if (order.placesReadResponses() && r.streaming && Psn.compare(Psn.add(psn, n - 1), r.nextPsn) < 0) {
                        resendReadRange(r, psn, va, len);
                    } else {
                        startStream(r, psn, va, len);
                    }
                    return;
                }
                ctx.counters().drop(DropReason.DUPLICATE_UNKNOWN);
            }
            case COMPARE_SWAP, FETCH_ADD -> {
                for (int i = 0; i < resourcesUsed; i++) {
                    ResponderResource r = resources[i];
                    if (r.valid && r.atomic && r.firstPsn == psn) {
                        sendAtomicAck(psn, r.original, r.msn); // never executed twice
                        return;
                    }
                }
                ctx.counters().drop(DropReason.DUPLICATE_UNKNOWN);
            }
            default -> sendAck(Aeth.ACK_UNLIMITED, Psn.add(ePsn, -1)); // C9-105: ack the last PSN accepted
        }
    }

    private void advance(int psn) {
        ePsn = Psn.next(psn);
    }

    private void ackIfAsked(RocePacket p, int psn) {
        if (p.ackReq() && !order.draining()) coalesceAck(psn);
    }

    /**
     * Owes a plain ACK of {@code psn} with the current MSN: it replaces the pending one (which it covers, PSNs
     * being accepted in order) and leaves at the next flush. No allocation: a flag and two ints on the QP.
     */
    void coalesceAck(int psn) {
        if (ackPending) qp.counters.acksCoalesced++;
        ackPending = true;
        ackPsn = psn;
        ackMsn = msn;
        ctx.ackPending(this);
    }

    /** Sends the pending coalesced ACK, if any. Called before every other packet of this responder and at each flush. */
    void emitPendingAck() {
        if (ackPending) {
            ackPending = false;
            qp.counters.acksSent++;
            writeAck(Aeth.ACK_UNLIMITED, ackPsn, ackMsn);
        }
        order.emitOwed();
    }

    /** Forgets the pending ACK and SACKs: the QP is reset or destroyed, so nothing is sent for it. */
    void dropPendingAck() {
        ackPending = false;
        order.dropOwed();
    }

    /** Gives the selective-repeat store's memory back (the QP is reset or destroyed). */
    void releaseStore() {
        if (reorderStore != null) reorderStore.release();
    }

    /**
     * The receive completion did not fit: the message was not delivered to the application, so it is not
     * acknowledged. The requester learns at once from a remote operational error NAK (IBA 9.9.3.1.2.1:
     * the responder cannot complete the request) instead of retrying into a QP that is now in ERR.
     */
    private void cqOverrun(int psn) {
        qp.counters.naksSent++;
        sendAck(Aeth.nak(Aeth.NakCode.REMOTE_OPERATIONAL_ERROR), psn);
    }

    private void rnrNak(int psn) {
        qp.counters.rnrNaksSent++;
        sendAck(Aeth.rnrNak(qp.minRnrTimer), psn);
    }

    /** Sends an ACK or NAK now, after the pending coalesced ACK (a lower PSN) so the two leave in PSN order. */
    void sendAck(int syndrome, int psn) {
        emitPendingAck();
        if (Aeth.kind(syndrome) == Aeth.Kind.ACK) qp.counters.acksSent++;
        writeAck(syndrome, psn, msn);
    }

    private void writeAck(int syndrome, int psn, int ackMsn) {
        Opcode op = Opcode.RC_ACKNOWLEDGE;
        ByteBuf b = out.startPacket(qp, op, 0, false, false, psn);
        views.aeth.wrap(b, op.aethOffset()).write(syndrome, ackMsn);
        out.finishPacket(qp, b);
    }

    private void nakAndFail(Aeth.NakCode code, int psn, String why) {
        nakAndFail(code, psn, why, null, null);
    }

    /** NAKs and moves to ERR; {@code failed}, the receive WQE in use, completes with {@code status} once in ERR. */
    private void nakAndFail(Aeth.NakCode code, int psn, String why, RecvWqe failed, WcStatus status) {
        qp.counters.naksSent++;
        sendAck(Aeth.nak(code), psn);
        qp.enterError("responder: " + why + " (NAK " + code + ")");
        if (failed != null) qp.completeRecv(failed, status, WcOpcode.RECV, 0, 0, 0, false);
        qp.flushIfError();
    }

    /**
     * Scatters payload into a receive WQE's SGEs at message offset {@code off}; false if a region is gone. The
     * callers checked the message against the WQE's capacity first.
     */
    static boolean scatter(RecvWqe r, long off, ByteBuf src, int srcIdx, int len) {
        return CopyData.scatter(r.sgeMr, r.sgeAddr, r.sgeLen, r.numSge, off, src, srcIdx, len) == CopyData.OK;
    }
}
