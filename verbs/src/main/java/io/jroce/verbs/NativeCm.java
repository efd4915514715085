package io.jroce.verbs;

import io.jroce.endpoint.Gid;
import io.jroce.endpoint.QpAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.cm.CmAgent;
import io.jroce.endpoint.cm.CmConfig;
import io.jroce.endpoint.cm.CmConnParam;
import io.jroce.endpoint.cm.CmEvent;
import io.jroce.endpoint.cm.CmEventChannel;
import io.jroce.endpoint.cm.CmEventType;
import io.jroce.endpoint.cm.CmId;
import io.jroce.endpoint.cm.CmPortSpace;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * What jroce's librdmacm.so.1 calls through JNI: the connection manager ({@link CmAgent}) of the device
 * {@link NativeVerbs} opened, in the same VM, so an id's QP is a QP of the program's own libibverbs. Event channels
 * and ids are named by handles; each carries the address of its C struct (its cookie) so that events name the
 * program's {@code struct rdma_cm_id}. Values are librdmacm's (RDMA_CM_EVENT_*, RDMA_PS_*). A failure is thrown; the
 * C side turns it into an errno (an id in the wrong state: EINVAL).
 */
public final class NativeCm {
    private NativeCm() {}

    private static final HandleTable HANDLES = new HandleTable();
    /** The handle and the C struct of each id the program knows. */
    private static final Map<CmId, long[]> IDS = Collections.synchronizedMap(new IdentityHashMap<>());
    private static CmAgent agent;

    /** The device's connection manager, opened on first use; connections may use up to the port's MTU. */
    private static synchronized CmAgent agent() {
        if (agent == null) agent = CmAgent.open(NativeVerbs.device(), CmConfig.defaults().mtu(NativeVerbs.device().portMtu()));
        return agent;
    }

    /** Bound by librdmacm (RegisterNatives): counts the channel's eventfd up by one (an event is ready). */
    private static native void channelEvent(long cookie);

    // ---------------------------------------------------------------------------------- channels

    /**
     * A channel as the C side sees it: the events moved from the {@link CmEventChannel} into {@code ready}, the
     * channel's eventfd counted up by one for each, so its count is exactly the number of events to take
     * (rdma_get_cm_event reads one count, then takes one event). At most {@link #READY_MAX} wait here; the rest stay
     * in the CmEventChannel, where each listener's backlog still caps its connection requests.
     */
    static final class Channel {
        static final int READY_MAX = 1024;
        final CmEventChannel events = new CmEventChannel();
        private final ArrayDeque<CmEvent> ready = new ArrayDeque<>();
        private final long cookie;
        private boolean open = true;

        Channel(long cookie) {
            this.cookie = cookie;
            events.onPost(this::transfer);
        }

        // on the agent's runner (a new event) and the program's (room made by a take); the C struct and its eventfd go
        // away after close, so no write may race with that
        private synchronized void transfer() {
            while (open && ready.size() < READY_MAX) {
                CmEvent e = events.poll();
                if (e == null) return;
                ready.add(e);
                channelEvent(cookie);
            }
        }

        synchronized CmEvent take() {
            CmEvent e = ready.poll();
            transfer();
            return e;
        }

        synchronized void close() {
            open = false;
            events.onPost(null);
            events.close();
            ready.clear();
        }
    }

    public static int createChannel(long cookie) {
        agent();
        return HANDLES.add(new Channel(cookie));
    }

    public static void destroyChannel(int channel) {
        ((Channel) HANDLES.remove(channel)).close();
    }

    // ---------------------------------------------------------------------------------- ids

    /** RDMA_PS_TCP (RC) and RDMA_PS_UDP (UD, SIDR). */
    public static int createId(int channel, long cookie, int ps) {
        CmPortSpace space = null;
        for (CmPortSpace p : CmPortSpace.values()) if (p.value() == ps) space = p;
        if (space == null) {
            throw new UnsupportedOperationException("port space 0x" + Integer.toHexString(ps) + " (jroce has RDMA_PS_TCP and RDMA_PS_UDP)");
        }
        CmId id = CmId.create(agent(), HANDLES.get(channel, Channel.class).events, null, space);
        return register(id, cookie);
    }

    private static int register(CmId id, long cookie) {
        int h = HANDLES.add(id);
        IDS.put(id, new long[] {h, cookie});
        return h;
    }

    /** rdma_destroy_id: ends what the id was doing (CmId.close) and forgets it; its later events are dropped. */
    public static void destroyId(int id) {
        CmId cm = (CmId) HANDLES.remove(id);
        IDS.remove(cm);
        cm.close();
    }

    private static CmId id(int h) {
        return HANDLES.get(h, CmId.class);
    }

    /** Linux's EADDRINUSE (asm-generic/errno.h). */
    static final int EADDRINUSE = 98;

    /** rdma_bind_addr: 0, or EADDRINUSE when another id holds the port (the agent's message names that errno). */
    public static int bind(int id, int port) {
        try {
            id(id).bind(port);
            return 0;
        } catch (IllegalStateException e) {
            if (e.getMessage() != null && e.getMessage().contains("(EADDRINUSE)")) return EADDRINUSE;
            throw e;
        }
    }

    /** rdma_listen: 0, or EADDRINUSE when other ids share the port (REUSEADDR); the agent's message names that errno. */
    public static int listen(int id, int backlog) {
        try {
            id(id).listen(Math.max(1, backlog));
            return 0;
        } catch (IllegalStateException e) {
            if (e.getMessage() != null && e.getMessage().contains("(EADDRINUSE)")) return EADDRINUSE;
            throw e;
        }
    }

    public static void resolveAddr(int id, byte[] destination, int port, int timeoutMs) throws UnknownHostException {
        id(id).resolveAddr(InetAddress.getByAddress(destination), port, Duration.ofMillis(Math.max(0, timeoutMs)));
    }

    public static void resolveRoute(int id, int timeoutMs) {
        id(id).resolveRoute(Duration.ofMillis(Math.max(0, timeoutMs)));
    }

    /** The id's QP is a QP of the program's libibverbs (its handle there), in RESET: the CM takes it to INIT. */
    public static void useQp(int id, int qp) {
        id(id).useQp(NativeVerbs.object(qp, QueuePair.class));
    }

    /** conn_param.qp_num with no QP on the id: a QP the program connects itself (rping -q). */
    public static void ownQp(int id, int qpn) {
        id(id).ownQp(qpn);
    }

    /** How many values {@link #initQpAttr} gives: modifyQp's 21, the traffic class and the hop limit. */
    static final int INIT_QP_ATTR_VALUES = NativeVerbs.ATTR_COUNT + 2;

    /**
     * rdma_init_qp_attr: {@code values} receives the attributes the way {@link NativeVerbs#modifyQp} takes them
     * (index = IBV_QP_* bit), then the path's traffic class and hop limit; {@code dgid} the destination GID (when the
     * mask has IBV_QP_AV). Returns the mask. {@code state} is an IBV_QPS_* value.
     */
    public static int initQpAttr(int id, int state, int[] values, byte[] dgid) {
        CmId cm = id(id);
        if (state < 0 || state >= QpState.values().length) throw new IllegalArgumentException("QP state " + state);
        QpAttr a = cm.initQpAttr(QpState.values()[state]);
        int mask = 0;
        for (QpAttr.Field f : a.mask()) {
            int bit = switch (f) {
                case STATE -> NativeVerbs.STATE;
                case ACCESS_FLAGS -> NativeVerbs.ACCESS_FLAGS;
                case PKEY_INDEX -> NativeVerbs.PKEY_INDEX;
                case PORT -> NativeVerbs.PORT;
                case PATH_MTU -> NativeVerbs.PATH_MTU;
                case DEST_QPN -> NativeVerbs.DEST_QPN;
                case AV -> NativeVerbs.AV;
                case RQ_PSN -> NativeVerbs.RQ_PSN;
                case MAX_DEST_RD_ATOMIC -> NativeVerbs.MAX_DEST_RD_ATOMIC;
                case MIN_RNR_TIMER -> NativeVerbs.MIN_RNR_TIMER;
                case SQ_PSN -> NativeVerbs.SQ_PSN;
                case TIMEOUT -> NativeVerbs.TIMEOUT;
                case RETRY_CNT -> NativeVerbs.RETRY_CNT;
                case RNR_RETRY -> NativeVerbs.RNR_RETRY;
                case MAX_QP_RD_ATOMIC -> NativeVerbs.MAX_QP_RD_ATOMIC;
                case QKEY -> NativeVerbs.QKEY;
            };
            mask |= 1 << bit;
            values[bit] = switch (f) {
                case STATE -> a.state().ordinal(); // QpState is in IBV_QPS_* order
                case ACCESS_FLAGS -> a.accessFlags();
                case PKEY_INDEX -> a.pkeyIndex();
                case PORT -> a.port();
                case PATH_MTU -> a.pathMtu().ibvEnum();
                case DEST_QPN -> a.destQpNum();
                case AV -> {
                    byte[] g = Gid.of(a.destAddress()).raw();
                    System.arraycopy(g, 0, dgid, 0, 16);
                    yield 0;
                }
                case RQ_PSN -> a.rqPsn();
                case MAX_DEST_RD_ATOMIC -> a.maxDestRdAtomic();
                case MIN_RNR_TIMER -> a.minRnrTimer();
                case SQ_PSN -> a.sqPsn();
                case TIMEOUT -> a.timeout();
                case RETRY_CNT -> a.retryCnt();
                case RNR_RETRY -> a.rnrRetry();
                case MAX_QP_RD_ATOMIC -> a.maxRdAtomic();
                case QKEY -> a.qkey();
            };
        }
        values[NativeVerbs.ATTR_COUNT] = cm.trafficClass();
        values[NativeVerbs.ATTR_COUNT + 1] = HOP_LIMIT;
        return mask;
    }

    /** The hop limit of the paths the CM builds (cm.c cm_format_req for a routed RoCE v2 path). */
    static final int HOP_LIMIT = 64;

    public static void establish(int id) {
        id(id).establish();
    }

    /** Linux's EISCONN (asm-generic/errno.h). */
    static final int EISCONN = 106;

    /** rdma_notify(IBV_EVENT_COMM_EST): 0, or EISCONN for a connection established already (cm.c cm_establish). */
    public static int commEstablished(int id) {
        try {
            id(id).commEstablished();
            return 0;
        } catch (IllegalStateException e) {
            if (e.getMessage() != null && e.getMessage().contains("(EISCONN)")) return EISCONN;
            throw e;
        }
    }

    // rdma_set_option's RDMA_OPTION_ID_* names (rdma_cma.h)
    static final int OPTION_TOS = 0, OPTION_REUSEADDR = 1, OPTION_AFONLY = 2, OPTION_ACK_TIMEOUT = 3;

    /** rdma_set_option(RDMA_OPTION_ID, name, value): the C side checked the name and the value's size. */
    public static void setOption(int id, int name, int value) {
        CmId cm = id(id);
        switch (name) {
            case OPTION_TOS -> cm.setTos(value);
            case OPTION_REUSEADDR -> cm.setReuseAddr(value != 0);
            case OPTION_AFONLY -> cm.setAfOnly(value != 0);
            case OPTION_ACK_TIMEOUT -> cm.setAckTimeout(value);
            default -> throw new IllegalArgumentException("option " + name);
        }
    }

    /**
     * Called at the program's exit (the library's atexit handler): every id still open is ended as the kernel ends a
     * process's ids when it exits with its rdma_cm file open (ucma_close, rdma_destroy_id, cm.c cm_destroy_id), a
     * connection with its DREQ, a request with its REJ; then the device closes, which sends what it holds before its
     * socket closes. The program's exit goes on after a second whatever happened.
     */
    public static void atExit() throws InterruptedException {
        CmAgent a;
        synchronized (NativeCm.class) {
            a = agent;
        }
        if (a == null) return;
        NativeVerbs.atExit(() -> {
            try {
                a.close();
            } finally {
                NativeVerbs.closeAtExit();
            }
        });
    }

    /** p: responder_resources, initiator_depth, flow_control, retry_count, rnr_retry_count. */
    private static CmConnParam param(int[] p, byte[] privateData) {
        CmConnParam c = CmConnParam.defaults().privateData(privateData);
        if (p == null) return c;
        return c.responderResources(p[0]).initiatorDepth(p[1]).flowControl(p[2] != 0)
                .retryCount(Math.min(7, p[3])).rnrRetryCount(Math.min(7, p[4]));
    }

    public static void connect(int id, int[] p, byte[] privateData) {
        id(id).connect(param(p, privateData));
    }

    /** p null: rdma_accept with no conn_param (the REQ's values). */
    public static void accept(int id, int[] p, byte[] privateData) {
        id(id).accept(p == null ? CmConnParam.defaults().privateData(privateData) : param(p, privateData));
    }

    public static void reject(int id, byte[] privateData) {
        id(id).reject(privateData);
    }

    public static void disconnect(int id) {
        id(id).disconnect();
    }

    /**
     * The id's addresses: {@code ports} receives the local and the remote rdma_cm port; {@code local} and {@code remote}
     * the addresses' bytes (4 or 16); returns the local address's length times 256 plus the remote one's (0 when there
     * is none yet).
     */
    public static int address(int id, int[] ports, byte[] local, byte[] remote) {
        CmId cm = id(id);
        ports[0] = cm.localPort();
        ports[1] = cm.remotePort();
        byte[] l = cm.localAddress().getAddress();
        System.arraycopy(l, 0, local, 0, l.length);
        InetAddress r = cm.remoteAddress();
        if (r == null) return l.length * 256;
        byte[] rb = r.getAddress();
        System.arraycopy(rb, 0, remote, 0, rb.length);
        return l.length * 256 + rb.length;
    }

    // ---------------------------------------------------------------------------------- events

    /** CmEventType in order, as enum rdma_cm_event_type (rdma_cma.h). */
    private static final int[] EVENT = {0 /* ADDR_RESOLVED */, 2 /* ROUTE_RESOLVED */, 4 /* CONNECT_REQUEST */,
        6 /* CONNECT_ERROR */, 7 /* UNREACHABLE */, 8 /* REJECTED */, 9 /* ESTABLISHED */, 10 /* DISCONNECTED */,
        15 /* TIMEWAIT_EXIT */, 5 /* CONNECT_RESPONSE */};

    /**
     * Takes the channel's next event (the C side took its count): -1 when it belongs to an id already destroyed. Else
     * {@code out} receives the type (RDMA_CM_EVENT_*), the status, the id's handle, the id's cookie (0 for the new id of
     * a CONNECT_REQUEST, which the C side then names with {@link #adoptId}), the listening id's cookie, and the
     * CONNECT_REQUEST's responder_resources, initiator_depth, flow_control, retry_count, rnr_retry_count, and (UDP port
     * space, ESTABLISHED) the peer's QPN and Q_Key; the private data goes into {@code privateData}, whose length is
     * returned.
     */
    public static int getEvent(int channel, long[] out, byte[] privateData) {
        Channel ch = HANDLES.get(channel, Channel.class);
        CmEvent e = ch.take();
        if (e == null) return -1;
        long[] known = IDS.get(e.id());
        long handle, cookie;
        if (e.type() == CmEventType.CONNECT_REQUEST) {
            long[] listener = IDS.get(e.listenId());
            if (listener == null) { // its listener was destroyed: refuse the request as ucma does for one still queued
                e.id().close();
                return -1;
            }
            handle = register(e.id(), 0);
            cookie = 0;
            out[4] = listener[1];
        } else {
            if (known == null) return -1; // an event of an id already destroyed
            handle = known[0];
            cookie = known[1];
            out[4] = 0;
        }
        out[0] = EVENT[e.type().ordinal()];
        out[1] = e.status();
        out[2] = handle;
        out[3] = cookie;
        CmConnParam p = e.param();
        out[5] = p == null ? 0 : p.responderResources();
        out[6] = p == null ? 0 : p.initiatorDepth();
        out[7] = p == null ? 0 : p.flowControl() ? 1 : 0;
        out[8] = p == null ? 0 : p.retryCount();
        out[9] = p == null ? 0 : p.rnrRetryCount();
        out[10] = e.ud() == null ? 0 : e.ud().qpNum();
        out[11] = e.ud() == null ? 0 : e.ud().qkey() & 0xFFFFFFFFL;
        byte[] pd = e.privateData();
        int n = Math.min(pd.length, privateData.length);
        System.arraycopy(pd, 0, privateData, 0, n);
        return n;
    }

    /** Names the C struct of a CONNECT_REQUEST's new id. */
    public static void adoptId(int id, long cookie) {
        long[] known = IDS.get(id(id));
        if (known != null) known[1] = cookie;
    }
}
