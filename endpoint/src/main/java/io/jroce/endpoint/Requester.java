package io.jroce.endpoint;

import io.jroce.wire.Opcode;
import io.jroce.wire.Psn;
import io.netty.buffer.ByteBuf;

/**
 * The requester: takes posted send WQEs in order, assigns PSNs, cuts each message into path-MTU packets
 * and transmits them, within the window of unacknowledged PSNs and the {@code max_rd_atomic} limit.
 *
 * <p>Retransmission rewinds the WQE cursor to the PSN to resend from and rebuilds the packets from the
 * registered memory (as rdma_rxe does), instead of holding copies: the verbs contract already forbids the
 * application to touch a buffer until its WR completes, and it keeps the replay state to a few integers
 * per WQE however large the window.
 */
final class Requester {
    /** rdma_rxe's RXE_MAX_PKT_PER_ACK: ask for an ACK at least this often inside long messages. */
    static final int MAX_PKTS_PER_ACK = 64;

    private final QueuePair qp;
    /** The transmit path: the requester sends through it and sees nothing else of the shard. */
    private final PacketOut out;
    private final HeaderViews views;
    private final FlowBudget flow;
    private final Clock clock;
    /** Index of the next WQE to (re)transmit. */
    long sqNext;
    /** PSN for the next new WQE. */
    int sqPsn;
    /** The PSN after the last one transmitted (a READ's: after its last response's): what lies below it is on the wire. */
    private int sentEnd;
    /** READ/atomic WQEs started but not complete. */
    int rdAtomicOutstanding;
    private int noAckPkts;
    /** RNR back-off: no transmission before this time. */
    private long rnrUntil;
    private boolean rnrWaiting;

    Requester(QueuePair qp, EngineContext ctx) {
        this.qp = qp;
        this.out = ctx.out();
        this.views = out.views();
        this.flow = ctx.flow();
        this.clock = ctx.clock();
    }

    // ------------------------------------------------------------------------------------------------
    // what the completer and the QP tell the requester (the requester's state has no other writer)

    /** A READ or atomic WQE completed (or failed): one fewer outstanding against max_rd_atomic. */
    void readRetired() {
        rdAtomicOutstanding--;
    }

    /** An RNR NAK for {@code psn}: resend from there, but not before {@code until} (IBA 9.7.5.2.8). */
    void onRnrNak(int psn, long until) {
        rewind(psn);
        rnrWaiting = true;
        rnrUntil = until;
    }

    /** When the RNR back-off ends (valid while {@link #rnrWaiting}). */
    long rnrUntil() {
        return rnrUntil;
    }

    /** Whether an RNR back-off holds transmission. */
    boolean rnrWaiting() {
        return rnrWaiting;
    }

    /** Ends an RNR back-off whose time has come ({@code now}); false while it still holds. */
    boolean rnrWaitOver(long now) {
        if (now - rnrUntil < 0) return false;
        rnrWaiting = false;
        return true;
    }

    /** Drops an RNR back-off (the QP was reset or failed). */
    void cancelRnrWait() {
        rnrWaiting = false;
    }

    /** WQEs up to {@code consumed} left the send queue (completed or flushed): never transmit them again. */
    void retiredUpTo(long consumed) {
        if (sqNext < consumed) sqNext = consumed;
    }

    /**
     * An ACK inside head WQE {@code w} (AckReq every {@link #MAX_PKTS_PER_ACK} packets) acknowledged its first
     * {@code acked} packets (IBA 9.7.5.1): a Go-Back-N pass that is resending it goes on after them.
     */
    void ackedPart(SendWqe w, int acked) {
        if (sqNext == qp.sq.consumed && w.nextPkt < acked) w.nextPkt = acked; // skip what arrived
    }

    /**
     * Head WQE {@code w} was acknowledged through its last PSN: what a Go-Back-N pass had still to resend of it is
     * not sent (the responder had it all; the NAK or timeout that rewound us was about a later packet).
     */
    void ackedWhole(SendWqe w) {
        if (!w.fullySent()) w.nextPkt = w.npkts;
    }

    /** The PSN the next new WQE starts at (sq_psn, as {@code ibv_query_qp} reports it). */
    int sqPsn() {
        return sqPsn;
    }

    /** The PSN after the last one transmitted (a READ's: after its last response's): what lies below it is on the wire. */
    int sentEnd() {
        return sentEnd;
    }

    void reset(int startPsn, long sqIndex) {
        sqNext = sqIndex;
        sqPsn = startPsn;
        sentEnd = startPsn;
        rdAtomicOutstanding = 0;
        noAckPkts = 0;
        rnrWaiting = false;
    }

    /** Transmits whatever the window, the rd_atomic limit and fences allow. Event loop only. */
    /** Whether the last data packet sent carried AckReq (so that a QP that stops sending still hears back). */
    private boolean lastAskedAck = true;

    void run() {
        QpState st = qp.state;
        if (st == QpState.ERR) {
            qp.flushIfError();
            return;
        }
        if ((st != QpState.RTS && st != QpState.SQD) || rnrWaiting) return;
        if (qp.type() == QpType.UD) {
            runUd(st);
            return;
        }
        Completer comp = qp.completer;
        while (sqNext != qp.sq.posted()) {
            SendWqe w = qp.sq.slot(sqNext);
            if (!w.started) {
                if (st == QpState.SQD) break; // draining: nothing new starts
                if (w.fault != null) {
                    // an SGE that names no usable region (posted with faults in the completion): nothing of it is
                    // sent; it fails once the WQEs before it have completed (rxe_req.c: wqe_state_error, completed
                    // with its status when it is the completer's head), and the QP enters the error state
                    if (sqNext == qp.sq.consumed) comp.failOldest(w.fault, 0);
                    break;
                }
                // IBA 10.8.3.3: a fenced WR waits for every earlier READ and atomic to complete
                if ((w.flags & SendFlags.FENCE) != 0 && rdAtomicOutstanding > 0) break;
                if (w.opcode.isReadOrAtomic() && rdAtomicOutstanding >= qp.maxRdAtomic) break;
                if (windowFull(comp, sqPsn)) break;
                if (!flow.allows(qp)) {
                    flow.await(qp);
                    break;
                }
                start(w);
            }
            if (!transmit(w, comp)) break;
            sqNext++;
        }
    }

    /**
     * UD: each WQE is one packet (the port MTU was checked at post time), PSN advancing per packet with no
     * window and no ACK; the WQE completes as soon as its datagram is handed to the socket, as rdma_rxe
     * completes a UD send once rxe_xmit_packet returns (rxe_req.c). In SQD nothing new starts.
     */
    private void runUd(QpState st) {
        if (st == QpState.SQD) return;
        while (sqNext != qp.sq.posted()) {
            SendWqe w = qp.sq.slot(sqNext);
            if (w.fault != null) { // as for RC above; a UD WQE before it has completed already
                qp.completer.failOldest(w.fault, 0);
                return;
            }
            sendUd(w);
            sqNext++;
            long wrId = w.wrId;
            WrOpcode op = w.opcode;
            int length = w.length;
            boolean signaled = w.signaled;
            w.ah = null;
            qp.sq.consumed++; // the slot is free for the next post from here on
            if (signaled) qp.completeSend(wrId, op, WcStatus.SUCCESS, length, 0);
            if (qp.state == QpState.ERR) return; // the send CQ overran
        }
    }

    private void sendUd(SendWqe w) {
        int psn = sqPsn;
        sqPsn = Psn.next(sqPsn);
        boolean imm = w.opcode == WrOpcode.SEND_WITH_IMM;
        Opcode op = imm ? Opcode.UD_SEND_ONLY_WITH_IMMEDIATE : Opcode.UD_SEND_ONLY;
        boolean se = (w.flags & SendFlags.SOLICITED) != 0;
        ByteBuf b = out.startUdPacket(op, w.length, se, w.remoteQpn, psn);
        // QP 1 always sends IB_QP1_QKEY (rxe_req.c init_req_packet); a WR Q_Key with the high-order bit set
        // means "the QP's own Q_Key" (IBA 10.2.4, C10-15)
        int qkey = qp.qpNum() == Device.GSI_QPN ? Device.GSI_QKEY : w.remoteQkey < 0 ? qp.qkey : w.remoteQkey;
        views.deth.wrap(b, op.dethOffset()).write(qkey, qp.qpNum());
        if (imm) views.immDt.wrap(b, op.immDtOffset()).imm(w.immData);
        gather(w, 0, w.length, out, b);
        out.finishUdPacket(qp, b, w.ah);
    }

    /** True when {@code psn} lies a window or more past the oldest unacknowledged PSN (resends never wait). */
    private boolean windowFull(Completer comp, int psn) {
        return comp.hasOutstanding() && pastWindow(comp, psn);
    }

    /** Whether sending {@code psn} would leave a window of PSNs in flight, as the QP's loss recovery counts them. */
    private boolean pastWindow(Completer comp, int psn) {
        int span = Psn.distance(comp.unackedPsn(), psn);
        if (span >= (1 << 23)) return false; // behind the oldest unacknowledged PSN: a resend
        return comp.recovery().pastWindow(span, windowLimit());
    }

    /**
     * PSNs that may be unacknowledged: the device window under flow control (our receive buffer, and the peer's when
     * it told us), and the congestion window when that is on.
     */
    private int windowLimit() {
        return Math.min(Math.min(flow.windowFor(qp.mtu), qp.peerWindow()), qp.completer.congestionWindow().limit());
    }

    private void start(SendWqe w) {
        int mtu = qp.mtu;
        w.started = true;
        w.firstPsn = sqPsn;
        w.npkts = w.opcode.isAtomic() ? 1 : Math.max(1, (int) ((w.length + (long) mtu - 1) / mtu));
        w.lastPsn = Psn.add(sqPsn, w.npkts - 1);
        w.nextPkt = 0;
        w.respPkts = 0;
        sqPsn = Psn.add(sqPsn, w.npkts);
        if (w.opcode.isReadOrAtomic()) rdAtomicOutstanding++;
    }

    /** Sends the WQE's remaining packets; false if the window closed part-way. */
    private boolean transmit(SendWqe w, Completer comp) {
        if (w.opcode.isReadOrAtomic()) {
            if (w.nextPkt == 0) {
                comp.packetSent(); // timer armed before the packet leaves, so its deadline predates any reply
                comp.recovery().sent(w.firstPsn);
                if (w.opcode == WrOpcode.RDMA_READ) sendReadRequest(w);
                else sendAtomic(w);
                w.nextPkt = 1;
                if (Psn.compare(Psn.next(w.lastPsn), sentEnd) > 0) sentEnd = Psn.next(w.lastPsn);
                if (!w.flowCounted) { // a READ's responses will fill our buffer as data fills the peer's; a retry is counted already
                    w.flowCounted = true;
                    qp.flowTake(w.npkts);
                }
            }
            return true;
        }
        while (w.nextPkt < w.npkts) {
            int psn = Psn.add(w.firstPsn, w.nextPkt);
            if (w.nextPkt < w.sentHigh && comp.recovery().holds(psn)) {
                // a rewind (RNR NAK) over packets the responder holds (SACKed): only its holes go again, as after a
                // sequence NAK; resending the held ones would burst up to the store's size into the peer's buffer
                w.nextPkt++;
                continue;
            }
            if (w.nextPkt > 0 && windowFull(comp, psn)) return false;
            if (w.nextPkt > 0 && w.nextPkt >= w.sentHigh && !flow.allows(qp)) { // resends are counted already
                if (!lastAskedAck) {
                    // stopping here must leave an acknowledgement coming: one more packet, with AckReq
                    comp.packetSent();
                    sendDataPacket(w, w.nextPkt, psn, true);
                    w.nextPkt++;
                }
                flow.await(qp);
                return w.nextPkt == w.npkts;
            }
            comp.packetSent();
            sendDataPacket(w, w.nextPkt, psn);
            w.nextPkt++;
        }
        return true;
    }

    /**
     * Tail-loss probe: resends the single oldest unacknowledged packet of the head SEND/WRITE with AckReq
     * (for a head READ or atomic: its request, from the first missing response), without rewinding. If that packet (or the NAK for it) was lost, the responder accepts it and
     * acknowledges, and the following NAK restarts Go-Back-N; if it arrived, the duplicate is re-acknowledged.
     * Either way the requester hears from the responder within a round trip instead of waiting out the
     * local ACK timeout. Returns false if there was nothing to probe.
     */
    boolean probe(int unackedPsn) {
        if (qp.sq.isEmpty()) return false;
        SendWqe w = qp.sq.head();
        if (!w.started || w.nextPkt == 0 && sqNext == qp.sq.consumed) return false;
        if (w.opcode == WrOpcode.RDMA_READ) {
            // ask again for the responses from the first missing one: the responder answers a duplicate
            // READ from its resource, and stale responses of the earlier stream are ignored as duplicates
            sendReadRequest(w);
            return true;
        }
        if (w.opcode.isAtomic()) {
            sendAtomic(w); // a duplicate atomic is answered from the saved result, never executed twice
            return true;
        }
        int pkt = Psn.distance(w.firstPsn, unackedPsn);
        if (pkt >= w.npkts || pkt >= w.nextPkt && sqNext == qp.sq.consumed) return false; // not sent yet
        sendDataPacket(w, pkt, unackedPsn, true);
        return true;
    }

    private void sendDataPacket(SendWqe w, int pkt, int psn) {
        sendDataPacket(w, pkt, psn, false);
    }

    private void sendDataPacket(SendWqe w, int pkt, int psn, boolean forceAckReq) {
        qp.completer.recovery().sent(psn);
        int mtu = qp.mtu;
        boolean first = pkt == 0;
        boolean last = pkt == w.npkts - 1;
        long offset = (long) pkt * mtu;
        int payload = (int) Math.min(mtu, w.length - offset);
        Opcode op;
        boolean write = w.opcode.isWrite();
        if (write) {
            op = Opcode.rcWrite(first, last, w.opcode == WrOpcode.RDMA_WRITE_WITH_IMM);
        } else {
            op = Opcode.rcSend(first, last, w.opcode == WrOpcode.SEND_WITH_IMM, w.opcode == WrOpcode.SEND_WITH_INV);
        }
        // AckReq on a message's last packet, every 64 packets, and on the packet that fills the window, so
        // a requester about to wait for window space always has an acknowledgement coming
        boolean windowEdge = pastWindow(qp.completer, Psn.next(psn))
                || pkt >= w.sentHigh && flow.fillsWithNext(mtu); // the packet that fills the device's budget
        boolean ackReq = forceAckReq || last || windowEdge || ++noAckPkts >= MAX_PKTS_PER_ACK;
        lastAskedAck = ackReq;
        if (ackReq) {
            noAckPkts = 0;
            qp.completer.ackRequested(psn, forceAckReq || Psn.compare(psn, qp.completer.unackedPsn()) < 0 || pkt < w.sentHigh);
        }
        if (pkt >= w.sentHigh) {
            w.sentHigh = pkt + 1;
            if (Psn.compare(Psn.next(psn), sentEnd) > 0) sentEnd = Psn.next(psn);
            qp.flowTake(1);
        }
        boolean se = last && (w.flags & SendFlags.SOLICITED) != 0;
        ByteBuf b = out.startPacket(qp, op, payload, se, ackReq, psn);
        if (op.hasReth()) views.reth.wrap(b, op.rethOffset()).write(w.remoteAddr, w.rkey, w.length);
        if (op.hasImmDt()) views.immDt.wrap(b, op.immDtOffset()).imm(w.immData);
        if (op.hasIeth()) views.ieth.wrap(b, op.iethOffset()).rkey(w.invalidateRkey);
        gather(w, offset, payload, out, b);
        out.finishPacket(qp, b);
    }

    /** A READ request resumes after the responses already accepted (IBA 9.7.4.1.4, rxe req_retry). */
    private void sendReadRequest(SendWqe w) {
        long done = (long) w.respPkts * qp.mtu;
        int psn = Psn.add(w.firstPsn, w.respPkts);
        // selective repeat: only the gap, up to the first response already placed past it
        long len = Math.min(w.length - done, (long) qp.completer.readHoleRun(w) * qp.mtu);
        Opcode op = Opcode.RC_RDMA_READ_REQUEST;
        ByteBuf b = out.startPacket(qp, op, 0, false, true, psn);
        views.reth.wrap(b, op.rethOffset()).write(w.remoteAddr + done, w.rkey, (int) len);
        out.finishPacket(qp, b);
    }

    private void sendAtomic(SendWqe w) {
        Opcode op = w.opcode == WrOpcode.ATOMIC_CMP_AND_SWP ? Opcode.RC_COMPARE_SWAP : Opcode.RC_FETCH_ADD;
        ByteBuf b = out.startPacket(qp, op, 0, false, true, w.firstPsn);
        if (op == Opcode.RC_COMPARE_SWAP) {
            views.atomicEth.wrap(b, op.atomicEthOffset()).write(w.remoteAddr, w.rkey, w.swap, w.compareAdd);
        } else {
            // FETCH_ADD carries the add value in the Swap field; Compare is sent as zero, as rxe_req.c init_req_packet does
            views.atomicEth.wrap(b, op.atomicEthOffset()).write(w.remoteAddr, w.rkey, w.compareAdd, 0);
        }
        out.finishPacket(qp, b);
    }

    /** The {@code len} bytes at message offset {@code off} of the WQE's gather list (or inline data) into packet {@code b}. */
    private static void gather(SendWqe w, long off, int len, PacketOut out, ByteBuf b) {
        if (len == 0) return;
        if (w.inline != null) {
            b.writeBytes(w.inline, (int) off, len);
            return;
        }
        CopyData.gather(w.sgeMr, w.sgeAddr, w.sgeLen, w.numSge, off, len, out, b);
    }

    /** Counts a packet sent again and tells the congestion window. */
    private void resent() {
        qp.counters.selectiveRetransmits++;
        Completer c = qp.completer;
        c.congestionWindow().onResent(clock.nanoTime(), c.srttNanos());
    }

    // ------------------------------------------------------------------------------------------------
    // single resends without a rewind, for a loss recovery that picks them (selective repeat: SelectiveRepeat)

    /** The started, unretired WQE whose PSNs include {@code psn}; null when none does. */
    SendWqe sentWqe(int psn) {
        for (long i = qp.sq.consumed; i != sqNext + 1 && i != qp.sq.posted(); i++) {
            SendWqe w = qp.sq.slot(i);
            if (!w.started) break;
            if (Psn.compare(psn, w.firstPsn) >= 0 && Psn.compare(psn, w.lastPsn) <= 0) return w;
        }
        return null;
    }

    /**
     * Sends READ or atomic {@code w}'s request again, where it stands: a READ from its first missing response
     * (IBA 9.7.4.1.4), an atomic whole (a duplicate is answered from the saved result, never executed twice; IBA
     * 9.7.5.1.2). Only a request transmitted before and not complete: false otherwise (the requester sends it in its
     * turn).
     */
    boolean resendRequest(SendWqe w) {
        if (w.nextPkt <= 0 || w.done) return false;
        qp.completer.packetSent();
        if (w.opcode == WrOpcode.RDMA_READ) sendReadRequest(w);
        else sendAtomic(w);
        resent();
        return true;
    }

    /**
     * Sends packet {@code psn} of SEND or WRITE {@code w} again, with AckReq, so that the responder acknowledges as
     * soon as the gap it fills is closed. Only a packet transmitted before: false otherwise (the requester sends it
     * in its turn).
     */
    boolean resendPacket(SendWqe w, int psn) {
        int pkt = Psn.distance(w.firstPsn, psn);
        if (pkt >= w.sentHigh) return false;
        qp.completer.packetSent();
        sendDataPacket(w, pkt, psn, true);
        resent();
        return true;
    }

    /**
     * Go-Back-N: the next transmission is the packet with {@code psn}; everything after it is sent again.
     * Returns false if no unretired WQE holds that PSN.
     */
    boolean rewind(int psn) {
        for (long i = qp.sq.consumed; i != sqNext + 1 && i != qp.sq.posted(); i++) {
            SendWqe w = qp.sq.slot(i);
            if (!w.started) break;
            if (Psn.compare(psn, w.firstPsn) >= 0 && Psn.compare(psn, w.lastPsn) <= 0) {
                if (w.opcode.isReadOrAtomic()) {
                    w.nextPkt = 0; // resent from respPkts (READ) or whole (atomic)
                } else {
                    w.nextPkt = Psn.distance(w.firstPsn, psn);
                }
                for (long j = i + 1; j != sqNext + 1 && j != qp.sq.posted(); j++) {
                    SendWqe later = qp.sq.slot(j);
                    if (!later.started) break;
                    later.nextPkt = 0;
                    later.respPkts = 0;
                }
                sqNext = i;
                noAckPkts = 0;
                return true;
            }
        }
        return false;
    }
}
