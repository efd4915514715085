package io.jroce.verbs;

import io.jroce.endpoint.AddressHandle;
import io.jroce.endpoint.AsyncEvent;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.AgentMode;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.DeviceConfig;
import io.jroce.endpoint.Gid;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpAttr;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QpType;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.VerbsException;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * What jroce's libibverbs.so.1 calls through JNI: the verbs of one embedded {@link Device}, with objects named
 * by small integer handles (the C side keeps the handle in its {@code struct ibv_pd}, {@code ibv_cq} ...).
 * Values are in libibverbs' encoding (IBV_QP_* attribute mask bits, IBV_WR_* opcodes, IBV_WC_* statuses), so
 * the C side only copies. Work requests and completions cross in a direct buffer of the calling thread, in
 * native byte order, laid out as {@link #WR_HEADER} and {@link #WC_BYTES} say (jv_post.c writes and reads
 * the same layout). A failure is thrown; the C side turns it into an errno and, with JROCE_VERBS_LOG=debug,
 * prints its message.
 */
public final class NativeVerbs {
    private NativeVerbs() {}

    private static Device device;
    private static final HandleTable HANDLES = new HandleTable();

    // ---------------------------------------------------------------------------------- device

    /** Opens the device on {@code address} (UDP 4791) with the port MTU the C side reports (an IB MTU enum). */
    public static synchronized void open(String address, int activeMtu) throws IOException {
        if (device != null) return;
        // the program's own threads run the device when they poll and post (as a verbs provider's do), unless
        // -Djroce.agent=dedicated in JROCE_JAVA_OPTS asks for a thread of its own
        AgentMode mode = "dedicated".equalsIgnoreCase(System.getProperty("jroce.agent")) ? AgentMode.DEDICATED : AgentMode.INVOKED;
        // no tail-loss probe unless -Djroce.tailProbe=MICROS asks for one: the peer of a verbs program is usually rdma_rxe
        // or a NIC, which recover by sequence NAK and the local ACK timeout as every verbs provider does; against rxe in
        // a VM a 1 ms probe re-asked a 64 KiB READ before its responses arrived, each time making rxe send it all again
        long tailProbe = Long.getLong("jroce.tailProbe", 0);
        DeviceConfig config = new DeviceConfig(InetAddress.getByName(address)).portMtu(Mtu.ofIbvEnum(activeMtu)).agentMode(mode)
                .tailProbeMicros(Math.max(0, tailProbe));
        // -Djroce.pcap=FILE: every datagram the device sends and receives, as jroce's --pcap writes them
        String pcap = System.getProperty("jroce.pcap");
        if (pcap != null && !pcap.isBlank()) config.pcap(java.nio.file.Path.of(pcap));
        device = Device.open(config);
        device.setAsyncEventListener((event, cq, qp, detail) -> {
            Long cookie = COOKIES.get(qp != null ? qp : cq);
            if (cookie != null) asyncEvent(IBV_EVENT[event.ordinal()], cookie);
        });
    }

    /** The C object (struct ibv_cq or ibv_qp address) of each CQ and QP, for the asynchronous events about them. */
    private static final Map<Object, Long> COOKIES = Collections.synchronizedMap(new IdentityHashMap<>());
    /** {@link AsyncEvent} in order, as enum ibv_event_type (verbs.h). */
    private static final int[] IBV_EVENT = {0 /* CQ_ERR */, 1 /* QP_FATAL */, 2 /* QP_REQ_ERR */, 3 /* QP_ACCESS_ERR */,
        4 /* COMM_EST */, 5 /* SQ_DRAINED */, 16 /* QP_LAST_WQE_REACHED */};

    /** Bound by the library (RegisterNatives): queues an asynchronous event for the program's contexts. */
    private static native void asyncEvent(int type, long cookie);

    /** The longest the program's exit waits for the device to close. */
    private static final long EXIT_WAIT_MILLIS = 1000;

    /**
     * Called at the program's exit (the library's atexit handler): the device sends what it holds and closes, so a
     * capture ({@code -Djroce.pcap}) ends with its last packet whole. The exit goes on after
     * {@link #EXIT_WAIT_MILLIS} whatever happened.
     */
    public static void atExit() throws InterruptedException {
        atExit(NativeVerbs::closeAtExit);
    }

    /** Runs {@code work} for the program's exit on a thread of its own, waiting {@link #EXIT_WAIT_MILLIS} at most. */
    static void atExit(Runnable work) throws InterruptedException {
        Thread t = new Thread(work, "jroce-exit");
        t.setDaemon(true);
        t.start();
        t.join(EXIT_WAIT_MILLIS);
    }

    /** At the program's exit, after its connections were ended: the device sends what it holds and closes. */
    static void closeAtExit() {
        Device d;
        synchronized (NativeVerbs.class) {
            d = device;
        }
        if (d != null) d.close();
    }

    static Device device() {
        Device d = device;
        if (d == null) throw new IllegalStateException("the jroce device is not open");
        return d;
    }

    /** The object behind a handle of this table (NativeCm finds the program's PDs and QPs here). */
    static <T> T object(int handle, Class<T> kind) {
        return HANDLES.get(handle, kind);
    }

    /** Forgets an object; what it was decides how it goes (a QP is destroyed, an MR deregistered). */
    public static void release(int handle) {
        Object o = HANDLES.remove(handle);
        COOKIES.remove(o instanceof Cq c ? c.cq : o);
        if (o instanceof QueuePair qp) qp.destroy();
        else if (o instanceof MemoryRegion mr) mr.deregister();
        else if (o instanceof AddressHandle ah) ah.destroy();
    }

    // ---------------------------------------------------------------------------------- PD, MR, CQ

    public static int allocPd() {
        return HANDLES.add(device().allocPd());
    }

    /**
     * Registers the program's own memory: {@code memory} is a direct buffer over it (JNI NewDirectByteBuffer), so
     * the region's virtual addresses are the program's pointers and nothing is copied. Returns the handle;
     * {@code keys} receives lkey and rkey.
     */
    public static int regMr(int pd, ByteBuffer memory, int access, int[] keys) {
        MemoryRegion mr = HANDLES.get(pd, ProtectionDomain.class).registerMemory(memory, access);
        keys[0] = mr.lkey();
        keys[1] = mr.rkey();
        return HANDLES.add(mr);
    }

    public static int createCq(int depth, long cookie) {
        CompletionQueue cq = device().createCq(depth);
        COOKIES.put(cq, cookie);
        return HANDLES.add(new Cq(cq));
    }

    /** {@code ibv_create_ah}: to the address a RoCE v2 GID names, on UDP 4791. */
    public static int createAh(int pd, byte[] dgid) {
        return HANDLES.add(HANDLES.get(pd, ProtectionDomain.class).createAh(Gid.of(dgid).toInetAddress()));
    }

    // ---------------------------------------------------------------------------------- QP

    /** IBV_QPT_RC and IBV_QPT_UD. */
    private static final int IBV_QPT_RC = 2;
    private static final int IBV_QPT_UD = 4;

    /**
     * caps: max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data, sq_sig_all. Returns the
     * handle; {@code out[0]} receives the QP number.
     */
    public static int createQp(int pd, int sendCq, int recvCq, int qpType, int[] caps, int[] out, long cookie) {
        QpType type = switch (qpType) {
            case IBV_QPT_RC -> QpType.RC;
            case IBV_QPT_UD -> QpType.UD;
            default -> throw new UnsupportedOperationException("QP type " + qpType + " (jroce has RC and UD)");
        };
        QpInitAttr init = new QpInitAttr(HANDLES.get(sendCq, Cq.class).cq, HANDLES.get(recvCq, Cq.class).cq)
                .qpType(type).maxSendWr(caps[0]).maxRecvWr(caps[1])
                .maxSendSge(Math.max(1, caps[2])).maxRecvSge(Math.max(1, caps[3]))
                .maxInlineData(caps[4]).sqSigAll(caps[5] != 0);
        QueuePair qp = HANDLES.get(pd, ProtectionDomain.class).createQp(init);
        out[0] = qp.qpNum();
        COOKIES.put(qp, cookie);
        return HANDLES.add(qp);
    }

    // IBV_QP_* attribute mask bits (verbs.h enum ibv_qp_attr_mask): the index of each value in modifyQp's array
    static final int STATE = 0, ACCESS_FLAGS = 3, PKEY_INDEX = 4, PORT = 5, QKEY = 6, AV = 7, PATH_MTU = 8,
            TIMEOUT = 9, RETRY_CNT = 10, RNR_RETRY = 11, RQ_PSN = 12, MAX_QP_RD_ATOMIC = 13, MIN_RNR_TIMER = 15,
            SQ_PSN = 16, MAX_DEST_RD_ATOMIC = 17, DEST_QPN = 20;
    static final int ATTR_COUNT = 21;
    /** The attributes jroce takes; any other bit in the mask is refused rather than ignored. */
    static final int SUPPORTED_MASK = bits(STATE, ACCESS_FLAGS, PKEY_INDEX, PORT, QKEY, AV, PATH_MTU, TIMEOUT,
            RETRY_CNT, RNR_RETRY, RQ_PSN, MAX_QP_RD_ATOMIC, MIN_RNR_TIMER, SQ_PSN, MAX_DEST_RD_ATOMIC, DEST_QPN);

    private static int bits(int... b) {
        int m = 0;
        for (int i : b) m |= 1 << i;
        return m;
    }

    /**
     * {@code ibv_modify_qp}: {@code values[bit]} holds the attribute of mask bit {@code bit}; for IBV_QP_AV,
     * {@code dgid} is the destination GID (RoCE v2 routes by it: an address handle without a GRH is refused).
     */
    public static void modifyQp(int qp, int mask, int[] values, byte[] dgid) {
        if ((mask & ~SUPPORTED_MASK) != 0) {
            throw new UnsupportedOperationException("QP attribute mask bits 0x" + Integer.toHexString(mask & ~SUPPORTED_MASK));
        }
        QpAttr a = new QpAttr();
        for (int bit = 0; bit < ATTR_COUNT; bit++) {
            if ((mask & (1 << bit)) == 0) continue;
            int v = values[bit];
            switch (bit) {
                case STATE -> a.state(QpState.values()[v]);
                case ACCESS_FLAGS -> a.accessFlags(v);
                case PKEY_INDEX -> a.pkeyIndex(v);
                case PORT -> a.port(v);
                case QKEY -> a.qkey(v);
                case AV -> {
                    if (dgid == null) throw new IllegalArgumentException("RoCE needs a GRH in the address vector (is_global, dgid)");
                    a.dest(Gid.of(dgid));
                }
                case PATH_MTU -> a.pathMtu(Mtu.ofIbvEnum(v));
                case TIMEOUT -> a.timeout(v);
                case RETRY_CNT -> a.retryCnt(v);
                case RNR_RETRY -> a.rnrRetry(v);
                case RQ_PSN -> a.rqPsn(v);
                case MAX_QP_RD_ATOMIC -> a.maxRdAtomic(v);
                case MIN_RNR_TIMER -> a.minRnrTimer(v);
                case SQ_PSN -> a.sqPsn(v);
                case MAX_DEST_RD_ATOMIC -> a.maxDestRdAtomic(v);
                case DEST_QPN -> a.destQpNum(v);
                default -> throw new AssertionError(bit);
            }
        }
        HANDLES.get(qp, QueuePair.class).modify(a);
    }

    /**
     * {@code ibv_query_qp}'s live part (what the QP holds now, whoever set it: the program, or the connection manager
     * that took it to RTS): {@code out} receives the state (IBV_QPS_*), the send PSN, the receive PSN, the Q_Key, the
     * destination QPN, the path MTU (IBV_MTU_*), the access flags, the P_Key index, the port, max_dest_rd_atomic,
     * max_rd_atomic, min_rnr_timer, timeout, retry_cnt and rnr_retry.
     */
    public static void queryQp(int qp, int[] out) {
        QpAttr a = HANDLES.get(qp, QueuePair.class).query();
        out[0] = a.state().ordinal(); // QpState is in IBV_QPS_* order
        out[1] = a.sqPsn();
        out[2] = a.rqPsn();
        out[3] = a.qkey();
        out[4] = a.destQpNum();
        out[5] = a.pathMtu() == null ? 0 : a.pathMtu().ibvEnum();
        out[6] = a.accessFlags();
        out[7] = a.pkeyIndex();
        out[8] = a.port();
        out[9] = a.maxDestRdAtomic();
        out[10] = a.maxRdAtomic();
        out[11] = a.minRnrTimer();
        out[12] = a.timeout();
        out[13] = a.retryCnt();
        out[14] = a.rnrRetry();
    }

    /** How many values {@link #queryQp} gives. */
    static final int QUERY_QP_VALUES = 15;

    // ---------------------------------------------------------------------------------- posting

    /**
     * One send WR in the buffer: wr_id (8), opcode (4, IBV_WR_*), send_flags (4), num_sge (4), imm_data (4,
     * network order) or invalidate_rkey (host order), remote_addr (8), rkey (4), pad (4), compare_add (8), swap (8),
     * UD: address handle (4, -1 for none), remote_qpn (4), remote_qkey (4), pad (4); then num_sge times addr (8),
     * length (4), lkey (4).
     */
    static final int WR_HEADER = 72;
    static final int SGE_BYTES = 16;
    private static final WrOpcode[] WR_OPCODES = {
        WrOpcode.RDMA_WRITE, WrOpcode.RDMA_WRITE_WITH_IMM, WrOpcode.SEND, WrOpcode.SEND_WITH_IMM,
        WrOpcode.RDMA_READ, WrOpcode.ATOMIC_CMP_AND_SWP, WrOpcode.ATOMIC_FETCH_AND_ADD,
        null /* LOCAL_INV */, null /* BIND_MW */, WrOpcode.SEND_WITH_INV,
    };

    /** Linux errno values a refused post returns (asm-generic/errno-base.h). */
    static final int EINVAL = 22, ENOMEM = 12;

    /**
     * The answer to a post the endpoint refused: the refused WR's index in the chain (those before it were posted,
     * as with rdma-core's {@code bad_wr}) times 256, plus the errno: ENOMEM for a full queue (what rdma_rxe's
     * post_one_send and post_one_recv return), EINVAL otherwise. -1 when all were posted.
     */
    private static int refused(VerbsException e, Object first) {
        Object bad = e.badRequest();
        int index = 0;
        for (Object wr = first; wr != null && wr != bad; index++) {
            wr = wr instanceof SendWorkRequest s ? s.next() : ((ReceiveWorkRequest) wr).next();
        }
        if (bad == null) index = 0;
        lastRefusal.set(e.getMessage());
        // the endpoint says "queue ... is full" for a full work queue; it has no reason code to test instead
        int errno = e.isQueueFull() ? ENOMEM : EINVAL;
        return index * 256 + errno;
    }

    private static final ThreadLocal<String> lastRefusal = new ThreadLocal<>();

    /** Why the calling thread's last post was refused (for JROCE_VERBS_LOG=debug). */
    public static String lastRefusal() {
        return lastRefusal.get();
    }

    /** Posts {@code count} send WRs as one chain; -1, or what {@link #refused} says. */
    public static int postSend(int qp, ByteBuffer wrs, int count) {
        ByteBuffer b = wrs.order(ByteOrder.nativeOrder());
        SendWorkRequest first = null, last = null;
        int at = 0;
        for (int i = 0; i < count; i++) {
            int opcode = b.getInt(at + 8);
            WrOpcode op = opcode >= 0 && opcode < WR_OPCODES.length ? WR_OPCODES[opcode] : null;
            if (op == null) throw new UnsupportedOperationException("send opcode " + opcode);
            int nsge = b.getInt(at + 16);
            SendWorkRequest wr = new SendWorkRequest().wrId(b.getLong(at)).opcode(op).flags(b.getInt(at + 12))
                    .immData(Integer.reverseBytes(b.getInt(at + 20)))
                    .remote(b.getLong(at + 24), b.getInt(at + 32))
                    .compareAdd(b.getLong(at + 40)).swap(b.getLong(at + 48))
                    .sgl(sges(b, at + WR_HEADER, nsge));
            if (op == WrOpcode.SEND_WITH_INV) wr.invalidateRkey(b.getInt(at + 20));
            int ah = b.getInt(at + 56);
            if (ah != -1) wr.ud(HANDLES.get(ah, AddressHandle.class), b.getInt(at + 60), b.getInt(at + 64));
            at += WR_HEADER + nsge * SGE_BYTES;
            if (first == null) first = wr; else last.next(wr);
            last = wr;
        }
        if (first == null) return -1;
        try {
            // as rdma_rxe: an SGE naming no usable region is posted and fails in its completion
            HANDLES.get(qp, QueuePair.class).postSend(first, true);
            return -1;
        } catch (VerbsException e) {
            return refused(e, first);
        }
    }

    /** One receive WR: wr_id (8), num_sge (4), pad (4), then the SGEs as for a send. */
    static final int RECV_HEADER = 16;

    public static int postRecv(int qp, ByteBuffer wrs, int count) {
        ByteBuffer b = wrs.order(ByteOrder.nativeOrder());
        ReceiveWorkRequest first = null, last = null;
        int at = 0;
        for (int i = 0; i < count; i++) {
            int nsge = b.getInt(at + 8);
            ReceiveWorkRequest wr = new ReceiveWorkRequest(b.getLong(at), sges(b, at + RECV_HEADER, nsge));
            at += RECV_HEADER + nsge * SGE_BYTES;
            if (first == null) first = wr; else last.next(wr);
            last = wr;
        }
        if (first == null) return -1;
        try {
            HANDLES.get(qp, QueuePair.class).postRecv(first, true);
            return -1;
        } catch (VerbsException e) {
            return refused(e, first);
        }
    }

    private static Sge[] sges(ByteBuffer b, int at, int n) {
        Sge[] s = new Sge[n];
        for (int k = 0; k < n; k++, at += SGE_BYTES) s[k] = new Sge(b.getLong(at), b.getInt(at + 8), b.getInt(at + 12));
        return s;
    }

    // ---------------------------------------------------------------------------------- polling

    /**
     * One completion in the buffer: wr_id (8), status (4, IBV_WC_*), opcode (4, IBV_WC_*), vendor_err (4),
     * byte_len (4), imm_data (4, network order) or invalidated rkey (4, host order), qp_num (4), src_qp (4),
     * wc_flags (4), pad (8).
     */
    static final int WC_BYTES = 48;
    private static final int[] WC_OPCODES = {0 /* SEND */, 1 /* RDMA_WRITE */, 2 /* RDMA_READ */, 3 /* COMP_SWAP */,
        4 /* FETCH_ADD */, 128 /* RECV */, 129 /* RECV_RDMA_WITH_IMM */};

    /** Polls up to {@code max} completions into {@code out}; returns how many. */
    public static int pollCq(int cq, ByteBuffer out, int max) {
        Cq c = HANDLES.get(cq, Cq.class);
        ByteBuffer b = out.order(ByteOrder.nativeOrder());
        int n;
        synchronized (c) {
            if (c.polled.length < max) c.polled = new WorkCompletion[Math.max(max, 2 * c.polled.length)];
            n = c.cq.poll(c.polled, max);
            for (int i = 0; i < n; i++) {
                WorkCompletion wc = c.polled[i];
                int at = i * WC_BYTES;
                b.putLong(at, wc.wrId());
                b.putInt(at + 8, wc.status().ordinal()); // WcStatus is in IBV_WC_* order
                b.putInt(at + 12, wc.opcode() == null ? 0 : WC_OPCODES[wc.opcode().ordinal()]);
                b.putInt(at + 16, wc.vendorErr());
                b.putInt(at + 20, wc.byteLen());
                b.putInt(at + 24, wc.hasInv() ? wc.invalidatedRkey() : Integer.reverseBytes(wc.immData())); // imm_data is __be32
                b.putInt(at + 28, wc.qpNum());
                b.putInt(at + 32, wc.srcQp());
                b.putInt(at + 36, wc.wcFlags());
            }
        }
        return n;
    }

    /** {@code ibv_req_notify_cq}: arms the CQ for one event (it must be watched: a CQ of a completion channel). */
    public static void armCq(int cq, boolean solicitedOnly) {
        HANDLES.get(cq, Cq.class).cq.requestNotify(solicitedOnly);
    }

    /** A CQ of a completion channel: each event it raises is handed to the C side with {@code cookie}. */
    public static void watchCq(int cq, long cookie) {
        HANDLES.get(cq, Cq.class).cq.setEventListener(() -> cqEvent(cookie));
    }

    /** Bound by the library (RegisterNatives): queues the event on the CQ's completion channel. */
    private static native void cqEvent(long cookie);

    /** A completion queue and the completions array its polls reuse. */
    static final class Cq {
        final CompletionQueue cq;
        WorkCompletion[] polled = new WorkCompletion[16];

        Cq(CompletionQueue cq) {
            this.cq = cq;
        }
    }
}
