package io.jroce.endpoint;

import io.jroce.wire.Psn;

import java.net.InetAddress;
import java.nio.ByteOrder;
import java.util.Set;

import static io.jroce.endpoint.QpAttr.Field.*;

/**
 * A queue pair, reliable connected ({@link QpType#RC}) or unreliable datagram ({@link QpType#UD}). Application threads post to its send and receive queue rings and ring
 * the doorbell; everything else (requester, completer, responder, timers) runs on the event loop of the device
 * shard that owns the QP (the device's one loop by default), which alone owns the QP's transport state, so the
 * packet path takes no locks.
 */
public final class QueuePair {
    static final boolean LITTLE_ENDIAN_HOST = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;
    /**
     * Device limit on max_rd_atomic / max_dest_rd_atomic (ibv_device_attr.max_qp_rd_atom, max_qp_init_rd_atom): 128, as
     * rdma_rxe's (rxe_param.h RXE_MAX_QP_RD_ATOM), because perftest moves its QP to RTS with the peer's depth as its
     * own (a lower limit here made its READ and atomic tests against rxe fail with EINVAL). A responder makes its
     * resources as it uses them, so a QP given 128 costs what it uses.
     */
    public static final int MAX_RD_ATOMIC = 128;

    private final Device device;
    private final ProtectionDomain pd;
    private final int qpn;
    private final QpType type;
    private final QpInitAttr init;
    private final CompletionQueue sendCq;
    private final CompletionQueue recvCq;
    final QpCounters counters = new QpCounters();

    // --- work queue rings: application threads produce, the event loop consumes ---
    final SendQueue sq;
    final ReceiveQueue rq;
    /** The checks a post makes and the copy of a work request into its slot. */
    private final PostCheck post;

    // --- QP context: fixed at transitions, read by the engines on the event loop ---
    volatile QpState state = QpState.RESET;
    private final QpAttr attrs = new QpAttr();
    int accessFlags;
    int mtu = 1024;
    int destQpn;
    InetAddress destAddress;
    int destPort;
    /** IPv4 destination as a big-endian int (IPv4 device). */
    int destAddressInt;
    /** IPv6 destination's 16 bytes (IPv6 device). */
    byte[] destAddress16;
    java.net.InetSocketAddress destSocket;
    int maxRdAtomic;
    int maxDestRdAtomic;
    int minRnrTimer;
    int timeout;
    long timeoutNanos;
    int retryCnt;
    int rnrRetry;
    /** UD: the QP's Q_Key (what received datagrams must carry). */
    int qkey;
    /** {@link JroceExtensions} agreed with the peer; 0 is plain IBA (Go-Back-N). */
    int extensions;
    /** {@link #setPeerReceiveBuffer}: bytes, 0 unknown; the window it gives, for {@link #peerWindowMtu}. */
    private int peerReceiveBuffer;
    private int peerWindow;
    private int peerWindowMtu;

    final Requester requester;
    final Completer completer;
    final Responder responder;
    private final Runnable doorbellTask = this::doorbell;
    private final java.util.concurrent.atomic.AtomicBoolean doorbellPending = new java.util.concurrent.atomic.AtomicBoolean();
    /** On the shard's timer wheel ({@link Timers}): filed for {@link #timerDue} in slot {@link #timerSlot}. */
    boolean timerListed;
    long timerDue;
    int timerSlot;
    QueuePair timerNext;
    QueuePair timerPrev;
    /** Flow control: new packets this QP sent (a READ: its response packets) not yet acknowledged, in FlowBudget.inFlight. */
    int flowHeld;
    /** Flow control: queued in Transport's waiters for the device-wide budget. */
    boolean flowWaiting;
    private String errorReason;
    /** The shard that owns this QP: its loop runs the engines, timers and completions. */
    final Transport tx;

    QueuePair(Device device, ProtectionDomain pd, int qpn, QpInitAttr init, QpType type, Transport tx) {
        this.device = device;
        this.pd = pd;
        this.qpn = qpn;
        this.type = type;
        this.init = init;
        this.sendCq = init.sendCq;
        this.recvCq = init.recvCq;
        this.tx = tx;
        this.sq = new SendQueue(init.maxSendWr, init.maxSendSge);
        this.rq = new ReceiveQueue(init.maxRecvWr, init.maxRecvSge);
        this.post = new PostCheck(this);
        this.requester = new Requester(this, tx);
        this.completer = new Completer(this, tx);
        this.responder = new Responder(this, tx);
        attrs.state = QpState.RESET;
    }

    static void validateInit(QpInitAttr init) {
        if (init.sendCq == null || init.recvCq == null) throw new IllegalArgumentException("a QP needs a send CQ and a receive CQ");
        if (init.maxSendWr < 1 || init.maxSendWr > 1 << 16) throw new IllegalArgumentException("max_send_wr must be 1..65536, not " + init.maxSendWr);
        if (init.maxRecvWr < 1 || init.maxRecvWr > 1 << 16) throw new IllegalArgumentException("max_recv_wr must be 1..65536, not " + init.maxRecvWr);
        if (init.maxSendSge < 1 || init.maxSendSge > 32) throw new IllegalArgumentException("max_send_sge must be 1..32, not " + init.maxSendSge);
        if (init.maxRecvSge < 1 || init.maxRecvSge > 32) throw new IllegalArgumentException("max_recv_sge must be 1..32, not " + init.maxRecvSge);
        if (init.maxInlineData < 0 || init.maxInlineData > 4096) throw new IllegalArgumentException("max_inline_data must be 0..4096, not " + init.maxInlineData);
    }

    public int qpNum() { return qpn; }
    /** RC or UD. */
    public QpType type() { return type; }
    public ProtectionDomain pd() { return pd; }
    public Device device() { return device; }
    public QpState state() { return state; }
    public QpInitAttr initAttr() { return init; }
    public CompletionQueue sendCq() { return sendCq; }
    public CompletionQueue recvCq() { return recvCq; }
    /** Why the QP entered the error state, or null. */
    public String errorReason() { return errorReason; }

    // ------------------------------------------------------------------------------------------------
    // posting (application threads)

    /**
     * Posts a chain of send work requests. Everything that can be checked now is checked now: QP state,
     * opcode, SGE count, inline size, queue space, and each SGE's lkey, bounds and access. A refused
     * request throws {@link VerbsException} naming it; requests before it in the chain were posted.
     */
    public void postSend(SendWorkRequest first) {
        postSend(first, false);
    }

    /**
     * As {@link #postSend(SendWorkRequest)}; with {@code faultsInCompletion}, as rdma_rxe posts (its post path does not
     * look at lkeys): an SGE whose lkey names no region of this QP's protection domain, that lies outside its region
     * or lacks the local access needed does not refuse the request. It is posted and fails when its data would move:
     * a SEND or RDMA WRITE completes with {@link WcStatus#LOC_QP_OP_ERR} (no such key) or {@link WcStatus#LOC_PROT_ERR}
     * (outside the region) when the requester reaches it, sending nothing of it (rxe_req.c rxe_requester: copy_data's
     * -EINVAL or -EFAULT from finish_packet); a READ or atomic is sent and completes with LOC_PROT_ERR when its response
     * is to be written (rxe_comp.c do_read, do_atomic). Either way the QP then enters the error state and flushes what
     * follows. The verbs library posts this way.
     */
    public void postSend(SendWorkRequest first, boolean faultsInCompletion) {
        // Every check first, up to the first request refused: the posts below then cannot fail half-way, so the
        // slots they claim are always filled and published (WorkQueue: no lock, posting threads never wait).
        int valid = 0;
        VerbsException refused = null;
        try {
            for (SendWorkRequest wr = first; wr != null; wr = wr.next()) {
                post.checkSend(wr, faultsInCompletion);
                valid++;
            }
        } catch (VerbsException e) {
            refused = e;
        }
        int posted = 0;
        try {
            SendWorkRequest wr = first;
            while (posted < valid) {
                int k = valid - posted;
                long at = sq.claim(k);
                if (at < 0) at = sq.claim(k = 1); // the chain does not fit whole: what fits, one by one
                if (at < 0) {
                    throw VerbsException.queueFull("send queue of QP 0x" + Integer.toHexString(qpn) + " is full ("
                            + sq.capacity() + " WRs outstanding): poll completions or create the QP with a larger max_send_wr", wr);
                }
                for (int i = 0; i < k; i++, wr = wr.next()) {
                    SendWqe w = sq.slot(at + i);
                    try {
                        post.fillSend(w, wr);
                    } catch (RuntimeException | Error e) {
                        // a bug or no memory: what was claimed still reaches the loop, failed under its own wr_id,
                        // so the ring never stalls and the caller can tell which requests failed
                        SendWorkRequest f = wr;
                        for (int j = i; j < k; j++, f = f.next()) {
                            sq.slot(at + j).failAtPost(f.wrId());
                            sq.publish(at + j);
                        }
                        posted += k; // the doorbell below completes the failed ones too
                        throw e;
                    }
                    sq.publish(at + i);
                }
                posted += k;
            }
        } finally {
            if (posted > 0) ringDoorbell();
        }
        if (refused != null) throw refused;
    }

    /** Posts a chain of receive work requests: SGE-only entries, consumed strictly in order. */
    public void postRecv(ReceiveWorkRequest first) {
        postRecv(first, false);
    }

    /**
     * As {@link #postRecv(ReceiveWorkRequest)}; with {@code faultsInCompletion}, as rdma_rxe posts: an SGE that names
     * no usable region (see {@link #postSend(SendWorkRequest, boolean)}) does not refuse the request. A message whose
     * data reaches that SGE completes it with {@link WcStatus#LOC_QP_OP_ERR} and puts the QP in the error state, and
     * an RC sender gets a remote operational error NAK (rxe_resp.c: copy_data fails, RESPST_ERR_MALFORMED_WQE). The
     * verbs library posts this way.
     */
    public void postRecv(ReceiveWorkRequest first, boolean faultsInCompletion) {
        // as postSend: every check first, then the slots are claimed, filled and published without a lock
        int valid = 0;
        VerbsException refused = null;
        try {
            for (ReceiveWorkRequest wr = first; wr != null; wr = wr.next()) {
                post.checkRecv(wr, faultsInCompletion);
                valid++;
            }
        } catch (VerbsException e) {
            refused = e;
        }
        int posted = 0;
        try {
            ReceiveWorkRequest wr = first;
            while (posted < valid) {
                int k = valid - posted;
                long at = rq.claim(k);
                if (at < 0) at = rq.claim(k = 1);
                if (at < 0) {
                    throw VerbsException.queueFull("receive queue of QP 0x" + Integer.toHexString(qpn) + " is full ("
                            + rq.capacity() + " entries)", wr);
                }
                for (int i = 0; i < k; i++, wr = wr.next()) {
                    post.fillRecv(rq.slot(at + i), wr); // allocates nothing and cannot fail
                    rq.publish(at + i);
                }
                posted += k;
            }
        } finally {
            if (posted > 0 && state == QpState.ERR) ringDoorbell(); // flushed at once
        }
        if (refused != null) throw refused;
    }

    private void ringDoorbell() {
        DeviceAgent agent = tx.agent();
        if (agent.invoked()) {
            // run to completion: the posting thread runs the requester and sends now, when it can drive the device
            int e = agent.enter();
            if (e == DeviceAgent.ENTERED) {
                try {
                    requester.run();
                    tx.flushNow();
                } finally {
                    agent.exit();
                }
                return;
            }
            if (e == DeviceAgent.NESTED) {
                requester.run();
                tx.flushLater();
                return;
            }
        }
        if (doorbellPending.compareAndSet(false, true)) {
            tx.execute(doorbellTask);
        }
    }

    private void doorbell() {
        doorbellPending.set(false);
        requester.run();
        tx.flushLater();
    }

    // ------------------------------------------------------------------------------------------------
    // completions (event loop)

    void completeSend(long wrId, WrOpcode opcode, WcStatus status, int byteLen, int vendorErr) {
        WcOpcode op = opcode.completionOpcode();
        if (!sendCq.push(wrId, status, op, byteLen, 0, qpn, 0, vendorErr, false) && state != QpState.ERR) {
            toError("send CQ overrun");
        }
    }

    /** Returns false when the receive CQ overran: the QP is then in ERR and the message must not be ACKed. */
    boolean completeRecv(RecvWqe r, WcStatus status, WcOpcode op, int byteLen, int immInv, int flags, boolean solicited) {
        return completeRecv(r, status, op, byteLen, immInv, flags, solicited, 0, 0);
    }

    /** {@link #completeRecv} with a UD sender's QP number and UDP source port. */
    boolean completeRecv(RecvWqe r, WcStatus status, WcOpcode op, int byteLen, int immInv, int flags, boolean solicited, int srcQp,
                         int srcPort) {
        rq.consumed++;
        if (!recvCq.push(r.wrId, status, op, byteLen, immInv, qpn, flags, 0, solicited, srcQp, srcPort)) {
            if (state != QpState.ERR) toError("receive CQ overrun");
            return false;
        }
        return true;
    }

    /**
     * Turns on the jroce-to-jroce {@link JroceExtensions} both sides agreed on out of band. Only in RESET or INIT
     * (before RTR, where the engines take it up), and only when the peer is a jroce endpoint that set the same
     * flags: a peer that did not agree would misread the SACKs. 0 restores plain IBA.
     */
    public void setExtensions(int flags) {
        if ((flags & ~JroceExtensions.ALL) != 0) throw new IllegalArgumentException("unknown extension flags 0x" + Integer.toHexString(flags));
        tx.call(() -> {
            if (state != QpState.RESET && state != QpState.INIT) {
                throw new VerbsException("QP 0x" + Integer.toHexString(qpn) + " is in " + state
                        + ": extensions are set in RESET or INIT, before RTR");
            }
            extensions = flags;
            return null;
        });
    }

    /** The {@link JroceExtensions} in force. */
    public int extensions() {
        return extensions;
    }

    /**
     * What the peer's device told us out of band about its socket's receive buffer ({@link Device#receiveBufferBytes},
     * a jroce peer only): the requester then keeps no more in flight than that buffer holds, as it does against its
     * own device's buffer ({@link FlowBudget}), so a peer with a smaller buffer does not drop at full speed in its
     * kernel. 0 (the default, and every other peer): our own buffer is the only limit. Any state.
     */
    public void setPeerReceiveBuffer(int bytes) {
        if (bytes < 0) throw new IllegalArgumentException("a receive buffer is not negative: " + bytes);
        tx.call(() -> {
            peerReceiveBuffer = bytes;
            peerWindowMtu = 0;
            return null;
        });
    }

    /** The peer's receive buffer in bytes, as told ({@link #setPeerReceiveBuffer}); 0 when unknown. */
    public int peerReceiveBuffer() {
        return peerReceiveBuffer;
    }

    /** PSNs the peer's receive buffer allows in flight at the QP's path MTU; MAX_VALUE when unknown (event loop). */
    int peerWindow() {
        if (peerReceiveBuffer == 0) return Integer.MAX_VALUE;
        if (peerWindowMtu != mtu) {
            peerWindow = FlowBudget.capacity(peerReceiveBuffer, mtu);
            peerWindowMtu = mtu;
        }
        return peerWindow;
    }

    // ------------------------------------------------------------------------------------------------
    // state machine

    /**
     * Modifies the QP ({@code ibv_modify_qp}). The transition and its attributes are validated first: an
     * illegal transition, a missing required attribute or one the transition does not take fails with a
     * message naming it. The change itself is applied on the event loop.
     */
    public void modify(QpAttr attr) {
        tx.call(() -> {
            applyModify(attr);
            return null;
        });
    }

    private void applyModify(QpAttr a) {
        QpState cur = state;
        QpState next = a.has(STATE) ? a.state : cur;
        Set<QpAttr.Field> given = QpStateTable.check(type, cur, next, a.mask(), qpn);
        validateValues(a, given);
        if (given.contains(AV)) checkFamily(a.destAddress);
        // all checks passed: apply
        for (QpAttr.Field f : given) copyField(a, f);
        switch (next) {
            case RESET -> toReset();
            case ERR -> toError("moved to ERR by modify");
            case RTR -> {
                if (cur == QpState.INIT) {
                    responder.reset(attrs.rqPsn, attrs.maxDestRdAtomic);
                }
                state = QpState.RTR;
            }
            case RTS -> {
                if (cur == QpState.RTR) {
                    requester.reset(attrs.sqPsn, sq.consumed);
                    completer.reset(attrs.sqPsn);
                }
                state = QpState.RTS;
                attrs.state = QpState.RTS;
                requester.run();
                tx.flushLater();
            }
            default -> state = next;
        }
        attrs.state = state;
    }

    private static void validateValues(QpAttr a, Set<QpAttr.Field> given) {
        if (given.contains(DEST_QPN) && (a.destQpNum & ~0xFFFFFF) != 0) throw new VerbsException("dest_qp_num must be 24 bits: 0x" + Integer.toHexString(a.destQpNum));
        if (given.contains(RQ_PSN) && (a.rqPsn & ~Psn.MASK) != 0) throw new VerbsException("rq_psn must be 24 bits: 0x" + Integer.toHexString(a.rqPsn));
        if (given.contains(SQ_PSN) && (a.sqPsn & ~Psn.MASK) != 0) throw new VerbsException("sq_psn must be 24 bits: 0x" + Integer.toHexString(a.sqPsn));
        if (given.contains(PATH_MTU) && a.pathMtu == null) throw new VerbsException("path_mtu must be one of 256, 512, 1024, 2048, 4096");
        if (given.contains(AV) && (a.destAddress == null || a.destPort < 1 || a.destPort > 65535)) throw new VerbsException("the address vector needs a destination address and UDP port");
        if (given.contains(TIMEOUT) && (a.timeout < 0 || a.timeout > 31)) throw new VerbsException("timeout must be 0..31, not " + a.timeout);
        if (given.contains(RETRY_CNT) && (a.retryCnt < 0 || a.retryCnt > 7)) throw new VerbsException("retry_cnt must be 0..7, not " + a.retryCnt);
        if (given.contains(RNR_RETRY) && (a.rnrRetry < 0 || a.rnrRetry > 7)) throw new VerbsException("rnr_retry must be 0..7, not " + a.rnrRetry);
        if (given.contains(MIN_RNR_TIMER) && (a.minRnrTimer < 0 || a.minRnrTimer > 31)) throw new VerbsException("min_rnr_timer must be 0..31, not " + a.minRnrTimer);
        if (given.contains(MAX_QP_RD_ATOMIC) && (a.maxRdAtomic < 0 || a.maxRdAtomic > MAX_RD_ATOMIC)) throw new VerbsException("max_rd_atomic must be 0.." + MAX_RD_ATOMIC + ", not " + a.maxRdAtomic);
        if (given.contains(MAX_DEST_RD_ATOMIC) && (a.maxDestRdAtomic < 0 || a.maxDestRdAtomic > MAX_RD_ATOMIC)) throw new VerbsException("max_dest_rd_atomic must be 0.." + MAX_RD_ATOMIC + ", not " + a.maxDestRdAtomic);
        if (given.contains(ACCESS_FLAGS) && (a.accessFlags & ~Access.ALL) != 0) throw new VerbsException("unknown access flag bits 0x" + Integer.toHexString(a.accessFlags & ~Access.ALL));
        if (given.contains(PKEY_INDEX) && a.pkeyIndex != 0) throw new VerbsException("the P_Key table has one entry (index 0, P_Key 0xFFFF)");
        if (given.contains(PORT) && a.port != 1) throw new VerbsException("the device has one port, number 1");
    }

    /** One socket, one family: an IPv4 device reaches IPv4 peers, an IPv6 device IPv6 peers. */
    private void checkFamily(InetAddress dest) {
        boolean mine6 = device.address() instanceof java.net.Inet6Address;
        boolean theirs6 = dest instanceof java.net.Inet6Address;
        if (mine6 != theirs6) {
            throw new VerbsException("destination " + io.jroce.wire.IpText.of(dest) + " is " + (theirs6 ? "IPv6" : "IPv4")
                    + " but device " + io.jroce.wire.IpText.of(device.address()) + " is " + (mine6 ? "IPv6" : "IPv4"));
        }
    }

    private void copyField(QpAttr a, QpAttr.Field f) {
        switch (f) {
            case ACCESS_FLAGS -> { attrs.accessFlags(a.accessFlags); accessFlags = a.accessFlags; }
            case PKEY_INDEX -> attrs.pkeyIndex(a.pkeyIndex);
            case PORT -> attrs.port(a.port);
            case PATH_MTU -> { attrs.pathMtu(a.pathMtu); mtu = a.pathMtu.bytes(); }
            case DEST_QPN -> { attrs.destQpNum(a.destQpNum); destQpn = a.destQpNum; }
            case AV -> {
                attrs.dest(a.destAddress, a.destPort);
                destAddress = a.destAddress;
                destPort = a.destPort;
                destSocket = new java.net.InetSocketAddress(a.destAddress, a.destPort);
                byte[] b = a.destAddress.getAddress();
                if (b.length == 16) {
                    destAddress16 = b;
                    destAddressInt = 0;
                } else {
                    destAddress16 = null;
                    destAddressInt = (b[0] & 0xFF) << 24 | (b[1] & 0xFF) << 16 | (b[2] & 0xFF) << 8 | (b[3] & 0xFF);
                }
            }
            case RQ_PSN -> attrs.rqPsn(a.rqPsn);
            case SQ_PSN -> attrs.sqPsn(a.sqPsn);
            case MAX_DEST_RD_ATOMIC -> { attrs.maxDestRdAtomic(a.maxDestRdAtomic); maxDestRdAtomic = a.maxDestRdAtomic; }
            case MAX_QP_RD_ATOMIC -> { attrs.maxRdAtomic(a.maxRdAtomic); maxRdAtomic = a.maxRdAtomic; }
            case MIN_RNR_TIMER -> { attrs.minRnrTimer(a.minRnrTimer); minRnrTimer = a.minRnrTimer; }
            case TIMEOUT -> {
                attrs.timeout(a.timeout);
                timeout = a.timeout;
                // IBA 9.7.6.1.3: local ACK timeout = 4.096 us * 2^timeout; 0 means no timer
                timeoutNanos = a.timeout == 0 ? 0 : 4096L << a.timeout;
            }
            case RETRY_CNT -> { attrs.retryCnt(a.retryCnt); retryCnt = a.retryCnt; }
            case RNR_RETRY -> { attrs.rnrRetry(a.rnrRetry); rnrRetry = a.rnrRetry; }
            // QP 1 keeps IB_QP1_QKEY whatever is asked (rxe_recv.c check_keys compares QP 1 with GSI_QKEY)
            case QKEY -> { qkey = qpn == Device.GSI_QPN ? Device.GSI_QKEY : a.qkey; attrs.qkey(qkey); }
            default -> { }
        }
    }

    /** The live attributes ({@code ibv_query_qp}), including the current PSNs. */
    public QpAttr query() {
        return tx.call(() -> {
            QpAttr q = new QpAttr();
            q.state(state).accessFlags(attrs.accessFlags).pkeyIndex(attrs.pkeyIndex).port(attrs.port)
                    .pathMtu(attrs.pathMtu).destQpNum(attrs.destQpNum)
                    .maxDestRdAtomic(attrs.maxDestRdAtomic).maxRdAtomic(attrs.maxRdAtomic)
                    .minRnrTimer(attrs.minRnrTimer).timeout(attrs.timeout).retryCnt(attrs.retryCnt).rnrRetry(attrs.rnrRetry);
            if (type == QpType.UD) q.qkey(qkey);
            if (attrs.destAddress != null) q.dest(attrs.destAddress, attrs.destPort);
            q.rqPsn(state == QpState.RESET || state == QpState.INIT ? attrs.rqPsn : responder.ePsn);
            q.sqPsn(state == QpState.RTS || state == QpState.SQD || state == QpState.ERR ? requester.sqPsn() : attrs.sqPsn);
            return q;
        });
    }

    /** Counters of this QP, read on the event loop. */
    public QpCounters counters() {
        return tx.call(counters::copy);
    }

    /** One line of live state for a 'stats' view: state, PSNs, outstanding WRs, retransmissions. */
    public String describe() {
        return tx.call(this::describeNow);
    }

    String describeNow() {
        {
            String head = "";
            if (!sq.isEmpty()) {
                SendWqe w = sq.head();
                head = String.format(" head %s psn 0x%06x..0x%06x next_pkt %d resp %d%s", w.opcode, w.firstPsn, w.lastPsn,
                        w.nextPkt, w.respPkts, w.started ? "" : " (not started)");
            }
            return String.format(
                    "qp 0x%06x %s dest 0x%06x sq_psn 0x%06x unacked 0x%06x e_psn 0x%06x sq %d/%d (cursor +%d) rq %d/%d"
                            + " retries %d timeouts %d timer %s%s rd_atomic %d srtt %dus%s%s",
                    qpn, state, destQpn, requester.sqPsn(), completer.unackedPsn(), responder.ePsn,
                    sq.depth(), sq.capacity(), requester.sqNext - sq.consumed, rq.depth(), rq.capacity(),
                    counters.retries, counters.timeouts, completer.retransmitArmed() ? "on" : "off",
                    requester.rnrWaiting() ? " rnr-wait" : "", requester.rdAtomicOutstanding, completer.srttNanos() / 1000, head,
                    errorReason == null ? "" : " error: " + errorReason);
        }
    }

    /** Flow control: {@code n} of this QP's packets were acknowledged (event loop). */
    void flowRelease(int n) {
        int r = Math.min(n, flowHeld);
        flowHeld -= r;
        tx.flow.inFlight -= r;
    }

    /** Flow control: a packet (or a READ's responses) now in flight (event loop). */
    void flowTake(int n) {
        flowHeld += n;
        tx.flow.inFlight += n;
    }

    private void toReset() {
        flowRelease(flowHeld);
        state = QpState.RESET;
        responder.dropPendingAck(); // none is sent for a QP that is reset or destroyed
        responder.releaseStore();
        // RESET discards every WQE without completions (IBA 10.3.1)
        sq.discardAll();
        rq.discardAll();
        completer.stopRetransmitTimer();
        requester.cancelRnrWait();
        tx.timers().cancel(this);
        errorReason = null;
    }

    /** Moves to ERR and flushes both queues (event loop). */
    void toError(String reason) {
        enterError(reason);
        flushIfError();
    }

    /**
     * Moves to ERR without flushing yet (event loop), so that the WQE that failed can complete with its own
     * status before the flush; the QP is already in ERR when that completion can be polled.
     */
    void enterError(String reason) {
        flowRelease(flowHeld);
        if (state != QpState.ERR) {
            // a request executed earlier in this receive burst is still acknowledged, ahead of any NAK that follows
            responder.emitPendingAck();
            errorReason = reason;
            state = QpState.ERR;
            attrs.state = QpState.ERR;
            completer.stopRetransmitTimer();
            requester.cancelRnrWait();
            device.asyncEvent(AsyncEvent.QP_FATAL, null, this, reason);
        }
    }

    /** In ERR every outstanding WR completes with WR_FLUSH_ERR, signaled or not (IBA 10.3.1 error state;
     * rxe_comp.c flush_send_queue and rxe_resp.c flush_recv_queue). */
    void flushIfError() {
        if (state != QpState.ERR) return;
        while (!sq.isEmpty()) {
            SendWqe w = sq.head();
            sendCq.push(w.wrId, WcStatus.WR_FLUSH_ERR, w.opcode.completionOpcode(), 0, 0, qpn, 0, 0, false);
            sq.consumed++;
        }
        requester.retiredUpTo(sq.consumed);
        while (!rq.isEmpty()) {
            RecvWqe r = rq.head();
            recvCq.push(r.wrId, WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, 0, 0, qpn, 0, 0, false);
            rq.consumed++;
        }
    }

    /** Destroys the QP: it leaves the device's QP table and its queues are discarded. */
    public void destroy() {
        tx.call(() -> {
            if (state != QpState.RESET) toReset();
            device.removeQp(this);
            return null;
        });
    }

    @Override
    public String toString() {
        return "QP 0x" + Integer.toHexString(qpn) + " (" + state + ")";
    }
}
