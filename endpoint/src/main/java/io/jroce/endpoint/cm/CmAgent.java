package io.jroce.endpoint.cm;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.DeviceRunner;
import io.jroce.endpoint.Gid;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpAttr;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QueuePair;
import io.jroce.wire.mad.CmAttribute;
import io.jroce.wire.mad.CmMra;
import io.jroce.wire.mad.CmRej;
import io.jroce.wire.mad.CmRep;
import io.jroce.wire.mad.CmReq;
import io.jroce.wire.mad.CmRtu;
import io.jroce.wire.mad.CmaHeader;
import io.jroce.wire.mad.MadHeader;
import io.jroce.wire.mad.SidrRep;
import io.jroce.wire.mad.SidrReq;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The connection manager of one device: the Linux ib_cm state machine (drivers/infiniband/core/cm.c) with rdma_cm's
 * TCP and UDP port spaces on top (cma.c), speaking REQ, MRA, REJ, REP, RTU, DREQ, DREP, SIDR_REQ and SIDR_REP over
 * the device's QP 1 through a {@link MadPort}. This class holds the tables, the application's calls, the active side
 * of RC set-up and the agent's runner; the MAD layer's own answers are {@link MadLayer}'s, the passive side of RC
 * set-up {@link CmPassive}'s, the release (DREQ, DREP, timewait) {@link CmRelease}'s, SIDR and the UDP port space
 * {@link Sidr}'s.
 *
 * <p>The agent runs on the device's {@link DeviceRunner}, beside the packet engines, with no thread of its own: received
 * MADs (QP 1's completions are drained there already), timers and the applications' calls ({@link CmId}) run on it in
 * turn, so one thread at a time owns all state. What peers can make it hold is capped: received MADs waiting for it ({@link CmConfig#maxInboundQueue}),
 * incoming connections not yet answered ({@link CmConfig#maxPending}, each timing out after
 * {@link CmConfig#acceptTimeoutMillis}), CONNECT_REQUESTs per listener (its backlog) and ids in all
 * ({@link CmConfig#maxIds}). QPs are only ever those the application creates. Malformed MADs are dropped and counted.
 */
public final class CmAgent implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(CmAgent.class);
    /** cm.c: REJ reasons (ib_cm.h enum ib_cm_rej_reason) this agent sends. */
    static final int REJ_TIMEOUT = 4;
    static final int REJ_INVALID_SERVICE_ID = 8;
    static final int REJ_STALE_CONN = 10;
    static final int REJ_INVALID_GID = 12;
    static final int REJ_CONSUMER_DEFINED = 28;
    /** IB_RATE_10_GBPS: the packet rate put in REQ paths (rxe derives it from the netdev speed). */
    static final int PACKET_RATE = 3;
    static final int HOP_LIMIT = 64;
    /** min_rnr_timer for the QPs the CM connects (ibv_rc_pingpong's 12; rdma_cm leaves the driver's default). */
    static final int MIN_RNR_TIMER = 12;
    /**
     * The device's max_qp_rd_atom and max_qp_init_rd_atom: what the REP and REQ carry at most, and what
     * {@link CmConnParam#MAX} stands for (librdmacm clamps to the device's values; rdma_rxe's are 128, a jroce QP
     * takes {@link QueuePair#MAX_RD_ATOMIC}, so that is what it offers).
     */
    public static final int MAX_RD_ATOMIC = QueuePair.MAX_RD_ATOMIC;
    static final int REQ_PRIVATE_MAX = CmAttribute.REQ.privateDataLength() - CmaHeader.LENGTH;
    static final int REP_PRIVATE_MAX = CmAttribute.REP.privateDataLength();

    record Key(int commId, long caGuid) {
    }

    final Device device;
    private final MadPort port;
    final CmConfig cfg;
    /** Where the agent runs: the device's runner, beside its packets (no thread of its own). */
    final DeviceRunner exec;
    final SplittableRandom rnd;
    final long caGuid;
    final long hiTid;
    final int peerUdpPort;
    final Map<Integer, CmId> byLocalId = new HashMap<>();
    final Map<Key, CmId> byRemote = new HashMap<>();
    /** Passive connections by the requester's (QPN, CA GUID): cm.c cm_insert_remote_qpn, for stale REQs. */
    final Map<Key, CmId> byRemoteQpn = new HashMap<>();
    /** Passive connections waiting for the RTU, by their QP's number: the first packet on the QP establishes them. */
    final Map<Integer, CmId> byLocalQpn = new HashMap<>();
    /** Listeners by service ID. */
    final Map<Long, CmId> listeners = new HashMap<>();
    /**
     * Bound ports by service ID (each port space has its own ports) with the ids that hold each: more than one only
     * while every one of them set RDMA_OPTION_ID_REUSEADDR and none listens (cma.c cma_check_port).
     */
    private final Map<Long, List<CmId>> boundPorts = new HashMap<>();
    final Set<CmId> ids = new HashSet<>();
    private final AtomicInteger inbound = new AtomicInteger();
    private final AtomicLong inboundOverflow = new AtomicLong();
    private final Object released = new Object();
    private final MadLayer madLayer;
    final Sidr sidr;
    final CmRelease release;
    private final CmPassive passive;
    int pending;
    private int nextCommId;
    private volatile boolean closed;
    // counters (agent runner)
    long madsIn, madsOut, retransmits, malformed, unknownAttribute, unmatched, pendingOverflow,
            backlogOverflow, duplicates, rejSent, rejReceived, connected, disconnected, timedOut, commEstablished;

    private CmAgent(Device device, MadPort port, CmConfig cfg) {
        this.device = device;
        this.port = port;
        this.cfg = cfg;
        this.rnd = new SplittableRandom(cfg.seed);
        this.caGuid = rnd.nextLong() | 0x0200000000000000L;
        this.hiTid = rnd.nextInt() & 0x7FFFFFFFL;
        this.nextCommId = rnd.nextInt();
        this.peerUdpPort = cfg.peerUdpPort > 0 ? cfg.peerUdpPort : device.port();
        this.exec = device.runner();
        this.madLayer = new MadLayer(port, cfg.madReplyRate);
        this.sidr = new Sidr(this);
        this.release = new CmRelease(this);
        this.passive = new CmPassive(this);
        port.start(this::onMad);
        device.setFirstPacketListener(firstPacket);
    }

    /** What the device calls when a QP accepts its first request (COMM_EST, {@link #onFirstPacket}). */
    private final java.util.function.IntConsumer firstPacket = this::onFirstPacket;

    /** Opens the CM of {@code device} on its QP 1 with the default configuration. */
    public static CmAgent open(Device device) {
        return open(device, CmConfig.defaults());
    }

    /**
     * Opens the CM of {@code device} on its QP 1 ({@link Device#openGsi}; a device has one, so one agent per device).
     * MADs and the connected QPs' traffic go to the peers' UDP port {@link CmConfig#peerUdpPort}.
     */
    public static CmAgent open(Device device, CmConfig config) {
        int peerPort = config.peerUdpPort > 0 ? config.peerUdpPort : device.port();
        return new CmAgent(device, new GsiMadPort(device, peerPort), config);
    }

    /**
     * Opens the CM of {@code device} on a {@link MadPort} of the caller's choosing (tests, or a transport other
     * than the device's own QP 1). The agent closes the port when it is closed.
     */
    public static CmAgent open(Device device, MadPort port, CmConfig config) {
        return new CmAgent(device, port, config);
    }

    /** The device this agent connects QPs of. */
    public Device device() {
        return device;
    }

    InetAddress localAddress() {
        return port.localAddress();
    }

    /** The CA GUID this agent puts in REQ and REP (random per agent, so a restarted agent is a new CA to peers). */
    public long caGuid() {
        return caGuid;
    }

    /** A snapshot of the counters. */
    public CmCounters counters() {
        return call(() -> new CmCounters(madsIn, madsOut, retransmits, malformed, unknownAttribute, unmatched,
                inboundOverflow.get(), pendingOverflow, backlogOverflow, duplicates, rejSent, rejReceived, connected,
                disconnected, timedOut, commEstablished, madLayer.repliesCmClass, madLayer.repliesOtherClass, madLayer.rateLimited));
    }

    /** The device's max_qp_rd_atom / max_qp_init_rd_atom ({@link #MAX_RD_ATOMIC}). */
    public int maxRdAtomic() {
        return MAX_RD_ATOMIC;
    }

    /** Incoming connections waiting for accept or reject. */
    public int pendingCount() {
        return call(() -> pending);
    }

    /**
     * Waits until no connection of this agent is being released (DREQ sent or received, or in timewait), at most
     * {@code max}; true if none is. Before {@link #close}, this keeps the agent answering as the kernel's CM does after
     * a process exits: a DREQ repeated in timewait still gets its DREP, a stale REQ its REJ 10.
     */
    public boolean awaitReleased(java.time.Duration max) throws InterruptedException {
        long deadline = System.nanoTime() + max.toNanos();
        while (call(this::releasingCount) > 0) {
            long left = deadline - System.nanoTime();
            if (left <= 0) return false;
            synchronized (released) { // notified at each end of timewait; never held while calling the agent
                TimeUnit.NANOSECONDS.timedWait(released, Math.min(left, TimeUnit.MILLISECONDS.toNanos(50)));
            }
        }
        return true;
    }

    private int releasingCount() {
        int n = 0;
        for (CmId id : ids) {
            if (id.state == CmId.State.DREQ_SENT || id.state == CmId.State.DREQ_RCVD || id.state == CmId.State.TIMEWAIT) n++;
        }
        return n;
    }

    /** A connection left timewait (agent runner). */
    void timewaitEnded() {
        synchronized (released) {
            released.notifyAll();
        }
    }

    /** All ids the agent holds (the application's, pending ones and those in timewait). */
    public int idCount() {
        return call(ids::size);
    }

    // ------------------------------------------------------------------ application calls (agent runner)

    CmId createId(CmEventChannel channel, Object context) {
        return createId(channel, context, CmPortSpace.TCP);
    }

    CmId createId(CmEventChannel channel, Object context, CmPortSpace ps) {
        if (channel == null) throw new IllegalArgumentException("an id needs an event channel");
        if (ps == null) throw new IllegalArgumentException("an id needs a port space");
        return call(() -> {
            checkCapacity();
            CmId id = new CmId(this, channel, context, ps);
            ids.add(id);
            return id;
        });
    }

    Void bind(CmId id, int p) {
        need(id, CmId.State.IDLE);
        if (id.localPort != 0) throw new IllegalStateException(id + " is already bound");
        if (p < 0 || p > 0xFFFF) throw new IllegalArgumentException("port must be 0..65535, not " + p);
        id.localPort = p == 0 ? ephemeralPort(id) : reservePort(id, p);
        return null;
    }

    Void listen(CmId id, int backlog) {
        need(id, CmId.State.IDLE);
        if (id.localPort == 0) id.localPort = ephemeralPort(id);
        // cma.c rdma_listen: a listener holds its port alone, REUSEADDR or not (cma_check_port without reuse)
        List<CmId> holders = boundPorts.get(id.portSpace.serviceId(id.localPort));
        if (holders != null && holders.size() > 1) {
            throw new IllegalStateException("rdma_cm port " + id.localPort + " is shared by other ids (EADDRINUSE)");
        }
        id.backlog = backlog <= 0 ? 128 : backlog;
        id.state = CmId.State.LISTEN;
        listeners.put(id.portSpace.serviceId(id.localPort), id);
        return null;
    }

    Void resolveAddr(CmId id, InetAddress dst, int p) {
        resolveAddrQuiet(id, dst, p);
        post(id, CmEventType.ADDR_RESOLVED, 0, null);
        return null;
    }

    void resolveAddrQuiet(CmId id, InetAddress dst, int p) {
        need(id, CmId.State.IDLE);
        if (p <= 0 || p > 0xFFFF) throw new IllegalArgumentException("port must be 1..65535, not " + p);
        if ((dst instanceof Inet4Address) != (localAddress() instanceof Inet4Address)) {
            throw new IllegalArgumentException(dst.getHostAddress() + " is not of the device's address family");
        }
        if (id.localPort == 0) id.localPort = ephemeralPort(id);
        id.remoteAddress = dst;
        id.remotePort = p;
        id.peer = dst;
        id.qpDest = dst;
        id.state = CmId.State.ADDR_RESOLVED;
    }

    Void resolveRoute(CmId id) {
        need(id, CmId.State.ADDR_RESOLVED);
        id.state = CmId.State.ROUTE_RESOLVED;
        post(id, CmEventType.ROUTE_RESOLVED, 0, null);
        return null;
    }

    QueuePair createQp(CmId id, ProtectionDomain pd, QpInitAttr init) {
        if (pd.device() != device) throw new IllegalArgumentException("the PD is not of this agent's device");
        if (id.qp != null) throw new IllegalStateException(id + " already has a QP");
        if (id.portSpace == CmPortSpace.UDP) return sidr.createQp(id, pd, init);
        QueuePair qp = pd.createQp(init);
        toInit(qp);
        id.qp = qp;
        return qp;
    }

    Void useQp(CmId id, QueuePair qp) {
        if (qp.device() != device) throw new IllegalArgumentException("the QP is not of this agent's device");
        if (id.qp != null) throw new IllegalStateException(id + " already has a QP");
        if (id.portSpace == CmPortSpace.UDP) {
            sidr.useQp(id, qp);
            return null;
        }
        if (qp.state() != QpState.RESET && qp.state() != QpState.INIT) {
            throw new IllegalStateException(qp + " must be in RESET or INIT");
        }
        toInit(qp);
        id.qp = qp;
        return null;
    }

    Void ownQp(CmId id, int qpn) {
        if (id.qp != null || id.ownQpn >= 0) throw new IllegalStateException(id + " already has a QP");
        if (id.portSpace != CmPortSpace.TCP) throw new UnsupportedOperationException("a QP of the application's own in the UDP port space");
        if (qpn <= 1 || qpn > 0xFFFFFF) throw new IllegalArgumentException("QPN must be 2..0xffffff, not " + qpn);
        switch (id.state) {
            case ADDR_RESOLVED, ROUTE_RESOLVED, REQ_RCVD -> id.ownQpn = qpn;
            default -> throw new IllegalStateException(id + ": a QP is named before connect or accept");
        }
        return null;
    }

    /** The passive side's Starting PSN (cma.c: the id's seq_num), chosen once: rdma_init_qp_attr(RTR) may ask before accept. */
    int passivePsn(CmId id) {
        if (id.localPsn < 0) id.localPsn = rnd.nextInt(1 << 24);
        return id.localPsn;
    }

    QpAttr initQpAttr(CmId id, QpState state) {
        QpAttr a = new QpAttr().state(state);
        if (id.portSpace == CmPortSpace.UDP) { // cma.c cma_ib_init_qp_attr, whatever the state asked
            return a.pkeyIndex(0).port(1).qkey(id.qkey != 0 ? id.qkey : CmPortSpace.UDP_QKEY);
        }
        boolean active = id.listener == null;
        switch (id.state) {
            case IDLE, ADDR_RESOLVED, ROUTE_RESOLVED, LISTEN -> {
                // no ib_cm id yet: cma.c cma_ib_init_qp_attr's INIT attributes, whatever the state asked
                return a.pkeyIndex(0).port(1).accessFlags(0);
            }
            case REQ_SENT, REP_RCVD, REQ_RCVD, REP_SENT, ESTABLISHED -> {
            }
            default -> throw new IllegalStateException(id + " has no connection to take a QP to " + state);
        }
        CmReq req = new CmReq().wrap(Unpooled.wrappedBuffer(id.req), 0);
        CmRep rep = id.rep != null ? new CmRep().wrap(Unpooled.wrappedBuffer(id.rep), 0) : null;
        // cm.c: responder resources and initiator depth as ib_cm holds them (cm_req_handler / ib_send_cm_rep on the
        // passive side, ib_send_cm_req / cm_rep_handler on the active side), capped at what a jroce QP takes
        int respRes, initDepth;
        if (active) {
            respRes = rep != null ? rep.initiatorDepth() : req.responderResources();
            initDepth = rep != null ? rep.responderResources() : req.initiatorDepth();
        } else if (id.param != null) { // accepted: what the REP granted (CmPassive.accept)
            respRes = Math.min(id.param.responderResources(), req.initiatorDepth());
            initDepth = Math.min(id.param.initiatorDepth(), req.responderResources());
        } else {
            respRes = req.initiatorDepth();
            initDepth = req.responderResources();
        }
        respRes = Math.min(respRes, MAX_RD_ATOMIC);
        initDepth = Math.min(initDepth, MAX_RD_ATOMIC);
        switch (state) {
            case INIT -> { // cm.c cm_init_qp_init_attr
                int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE;
                if (respRes > 0) access |= Access.REMOTE_READ | Access.REMOTE_ATOMIC;
                return a.accessFlags(access).pkeyIndex(0).port(1);
            }
            case RTR -> { // cm.c cm_init_qp_rtr_attr; cma.c: rq_psn is the id's own Starting PSN
                if (active && rep == null) throw new IllegalStateException(id + ": RTR needs the peer's REP");
                int mtu = Math.max(Mtu.MTU_256.ibvEnum(), Math.min(req.pathMtu(), Mtu.MTU_4096.ibvEnum()));
                return a.dest(id.qpDest, peerUdpPort).pathMtu(Mtu.ofIbvEnum(mtu))
                        .destQpNum(active ? rep.localQpn() : req.localQpn())
                        .rqPsn(active ? req.startingPsn() : passivePsn(id))
                        .maxDestRdAtomic(respRes).minRnrTimer(0);
            }
            case RTS -> { // cm.c cm_init_qp_rts_attr; cma.c: RDMA_OPTION_ID_ACK_TIMEOUT replaces the timeout
                if (active && rep == null) throw new IllegalStateException(id + ": RTS needs the peer's REP");
                int timeout = active ? ackTimeout(rep.targetAckDelay(), cfg.packetLifeTime) : req.primaryPath().localAckTimeout();
                if (id.ackTimeoutOption >= 0) timeout = id.ackTimeoutOption;
                return a.sqPsn(active ? rep.startingPsn() : req.startingPsn()).timeout(timeout)
                        .retryCnt(active ? id.param.retryCount() : req.retryCount())
                        .rnrRetry(active ? rep.rnrRetryCount() : req.rnrRetryCount()).maxRdAtomic(initDepth);
            }
            default -> throw new IllegalStateException("the CM gives attributes for INIT, RTR and RTS, not " + state);
        }
    }

    /** The path's traffic class: the REQ's on the passive side, RDMA_OPTION_ID_TOS (or 0) on the active side. */
    int trafficClass(CmId id) {
        if (id.listener != null && id.req != null) {
            return new CmReq().wrap(Unpooled.wrappedBuffer(id.req), 0).primaryPath().trafficClass();
        }
        return Math.max(id.tos, 0);
    }

    /** rdma_establish: the RTU of a connection whose QP the application took to RTS itself. */
    Void establish(CmId id) {
        if (id.state != CmId.State.REP_RCVD) throw new IllegalStateException(id + ": rdma_establish follows CONNECT_RESPONSE");
        sendRtu(id);
        return null;
    }

    /** The active side's RTU (cm.c ib_send_cm_rtu): the connection is established; kept to answer a repeated REP. */
    private void sendRtu(CmId id) {
        byte[] rtu = new byte[MadHeader.MAD_SIZE];
        new CmRtu().wrap(Unpooled.wrappedBuffer(rtu), 0).init(id.tid).localCommId(id.localCommId).remoteCommId(id.remoteCommId);
        id.lastReply = rtu;
        id.state = CmId.State.ESTABLISHED;
        connected++;
        send(id.peer, rtu);
    }

    /** rdma_notify(IBV_EVENT_COMM_EST): cm.c cm_establish. */
    Void commEstablished(CmId id) {
        switch (id.state) {
            case REP_SENT -> {
                commEstablished++;
                passive.establish(id);
            }
            case ESTABLISHED -> throw new IllegalStateException(id + " is established already (EISCONN)");
            default -> throw new IllegalStateException(id + ": COMM_EST means nothing before the REP is sent");
        }
        return null;
    }

    Void connect(CmId id, CmConnParam param) {
        if (id.state != CmId.State.ROUTE_RESOLVED && id.state != CmId.State.ADDR_RESOLVED) {
            throw new IllegalStateException(id + ": connect needs a resolved address");
        }
        if (id.localQpn() < 0) throw new IllegalStateException(id + ": connect needs a QP (createQp)");
        if (id.portSpace == CmPortSpace.UDP) return sidr.connect(id, param);
        if (param.privateDataLength() > REQ_PRIVATE_MAX) {
            throw new IllegalArgumentException("REQ private data is at most " + REQ_PRIVATE_MAX + " bytes, not " + param.privateDataLength());
        }
        checkCapacity();
        id.param = param;
        id.localCommId = newCommId();
        id.tid = hiTid << 32 | (id.localCommId & 0xFFFFFFFFL);
        id.ackTimeout = ackTimeout(cfg.caAckDelay, cfg.packetLifeTime);
        int psn = rnd.nextInt(1 << 24);
        byte[] mad = new byte[MadHeader.MAD_SIZE];
        ByteBuf b = Unpooled.wrappedBuffer(mad);
        CmReq req = new CmReq().wrap(b, 0).init(id.tid);
        req.localCommId(id.localCommId)
                .serviceId(CmaHeader.serviceId(CmaHeader.PS_TCP, id.remotePort))
                .localCaGuid(caGuid).localQkey(0).localQpn(id.localQpn())
                .responderResources(Math.min(param.responderResources(), MAX_RD_ATOMIC))
                .initiatorDepth(Math.min(param.initiatorDepth(), MAX_RD_ATOMIC))
                .remoteCmResponseTimeout(cfg.cmResponseTimeout).transportServiceType(CmReq.TRANSPORT_RC)
                .endToEndFlowControl(param.flowControl()).startingPsn(psn)
                .localCmResponseTimeout(cfg.cmResponseTimeout).retryCount(param.retryCount())
                .pkey(0xFFFF).pathMtu(cfg.mtu.ibvEnum()).rnrRetryCount(param.rnrRetryCount())
                .maxCmRetries(cfg.maxCmRetries);
        // RoCEv2 paths as cm.c cm_format_req writes them for a routed (hop limit > 1) path: LIDs 0xFFFF, not subnet local
        req.primaryPath().localLid(0xFFFF).remoteLid(0xFFFF)
                .localGid(Gid.of(localAddress()).raw()).remoteGid(Gid.of(id.remoteAddress).raw())
                .flowLabel(0).packetRate(PACKET_RATE).trafficClass(Math.max(id.tos, 0)).hopLimit(HOP_LIMIT).sl(0).subnetLocal(false)
                .localAckTimeout(id.ackTimeout);
        new CmaHeader().wrap(b, req.privateDataIndex()).write(id.localPort, localAddress(), id.remoteAddress);
        b.setBytes(req.privateDataIndex() + CmaHeader.LENGTH, param.privateDataRaw());
        // a jroce offer only when asked for and when the application's data leaves the area's last bytes free
        id.offered = param.extensions() != 0 && ExtensionTrailer.fits(param.privateDataLength(), REQ_PRIVATE_MAX)
                ? param.extensions() : 0;
        if (id.offered != 0) {
            b.setBytes(req.privateDataIndex() + CmaHeader.LENGTH + REQ_PRIVATE_MAX - ExtensionTrailer.LENGTH,
                    ExtensionTrailer.encode(id.offered));
        }
        id.extensions = 0;
        id.req = mad;
        // cm.c ib_send_cm_req: timeout = 2 * packet lifetime + remote CM response timeout
        id.retryMillis = 2 * convertMillis(cfg.packetLifeTime) + convertMillis(cfg.cmResponseTimeout);
        id.maxRetries = cfg.maxCmRetries;
        byLocalId.put(id.localCommId, id);
        id.state = CmId.State.REQ_SENT;
        sendWithRetry(id, mad, id.retryMillis, id.maxRetries);
        return null;
    }

    Void accept(CmId id, CmConnParam param) {
        return passive.accept(id, param);
    }

    Void reject(CmId id, byte[] privateData) {
        return passive.reject(id, privateData);
    }

    Void disconnect(CmId id) {
        return release.disconnect(id);
    }

    Void destroy(CmId id) {
        if (id.state == CmId.State.CLOSED) return null;
        id.closedByApp = true;
        if (id.portSpace == CmPortSpace.UDP) {
            if (id.state == CmId.State.LISTEN) {
                listeners.remove(id.portSpace.serviceId(id.localPort), id);
                rejectUntaken(id);
            } else {
                sidr.destroy(id);
            }
            releasePort(id);
            unregister(id);
            id.state = CmId.State.CLOSED;
            ids.remove(id);
            return null;
        }
        switch (id.state) {
            case LISTEN -> {
                listeners.remove(id.portSpace.serviceId(id.localPort), id);
                rejectUntaken(id);
            }
            case REQ_SENT -> {
                // cm.c cm_destroy_id: REQ_SENT -> REJ "timeout" with our CA GUID as ARI
                cancelTimer(id);
                byte[] ari = new byte[8];
                Unpooled.wrappedBuffer(ari).setLong(0, caGuid);
                sendRej(id.peer, id.tid, id.localCommId, 0, CmRej.REJECTED_REQ, REJ_TIMEOUT, ari, new byte[0]);
            }
            case REQ_RCVD -> {
                leavePending(id);
                sendRej(id.peer, id.tid, rejLocalId(id), id.remoteCommId, CmRej.REJECTED_REQ, REJ_CONSUMER_DEFINED, null, new byte[0]);
            }
            case REP_SENT, REP_RCVD -> {
                cancelTimer(id);
                sendRej(id.peer, id.tid, id.localCommId, id.remoteCommId, CmRej.REJECTED_REP, REJ_CONSUMER_DEFINED, null, new byte[0]);
            }
            case ESTABLISHED -> {
                toError(id.qp);
                release.sendDreq(id); // the entry stays until the DREP or the retries, then timewait, silently
                releasePort(id);
                return null;
            }
            case DREQ_RCVD -> {
                release.answerDreq(id); // cm.c cm_destroy_id: DREQ_RCVD -> DREP, then timewait
                releasePort(id);
                return null;
            }
            case DREQ_SENT, TIMEWAIT -> {
                releasePort(id); // the entry leaves at the end of timewait
                return null;
            }
            default -> {
            }
        }
        releasePort(id);
        unregister(id);
        id.state = CmId.State.CLOSED;
        ids.remove(id);
        return null;
    }

    /**
     * A destroyed listener's requests that still wait in the channel die with it: ucma_destroy_id frees the queued
     * CONNECT_REQUEST events and destroys their new ids (ucma_cleanup_ctx_events), which cm_destroy_id answers with
     * a REJ (consumer defined) in REQ_RCVD. Left alive, a later listener's application would take them from the
     * shared channel as its own (perf -R's server listens once for the exchange QP and again for the test QPs).
     */
    private void rejectUntaken(CmId listener) {
        for (CmId c : new ArrayList<>(ids)) {
            if (c.listener != listener || c.state != CmId.State.REQ_RCVD || !c.request.compareAndSet(0, 2)) continue;
            c.closedByApp = true;
            if (c.portSpace == CmPortSpace.UDP) {
                sidr.destroy(c);
                continue;
            }
            leavePending(c);
            sendRej(c.peer, c.tid, rejLocalId(c), c.remoteCommId, CmRej.REJECTED_REQ, REJ_CONSUMER_DEFINED, null, new byte[0]);
            finish(c);
        }
    }

    // ------------------------------------------------------------------ receive (agent runner)

    private void onMad(InetAddress from, int srcQpn, byte[] mad, int length) {
        if (closed) return;
        if (inbound.incrementAndGet() > cfg.maxInboundQueue) {
            inbound.decrementAndGet();
            inboundOverflow.incrementAndGet();
            return;
        }
        try {
            exec.execute(() -> {
                inbound.decrementAndGet();
                try {
                    handle(from, srcQpn, mad, length);
                } catch (RuntimeException e) {
                    malformed++;
                    log.debug("cm {}: MAD from {} dropped: {}", localAddress().getHostAddress(), from, e.toString());
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            inbound.decrementAndGet(); // closing
        }
    }

    void handle(InetAddress from, int srcQpn, byte[] raw, int length) {
        madsIn++;
        if (length < MadHeader.LENGTH) { // not even a MAD header
            malformed++;
            return;
        }
        byte[] mad = raw;
        if (raw.length != MadHeader.MAD_SIZE || length < MadHeader.MAD_SIZE) {
            // a short MAD reads as zero-padded (rxe's MAD layer does the same); bytes past 256 are not the MAD's
            mad = new byte[MadHeader.MAD_SIZE];
            System.arraycopy(raw, 0, mad, 0, Math.min(Math.min(length, raw.length), MadHeader.MAD_SIZE));
        }
        // mad.c: what no agent takes is answered (Get/Set) or dropped before the CM sees it
        if (madLayer.receive(from, srcQpn, mad) != MadLayer.Verdict.CM) {
            malformed++;
            return;
        }
        if (length < MadHeader.LENGTH + 8) { // not even a Local Comm ID
            malformed++;
            return;
        }
        ByteBuf b = Unpooled.wrappedBuffer(mad);
        MadHeader h = new MadHeader().wrap(b, 0);
        if (h.attributeId() == SidrReq.ATTRIBUTE_ID) {
            sidr.onSidrReq(from, b);
            return;
        }
        if (h.attributeId() == SidrRep.ATTRIBUTE_ID) {
            sidr.onSidrRep(from, b);
            return;
        }
        CmAttribute a = CmAttribute.of(h.attributeId());
        if (a == null) { // cm.c cm_recv_handler: LAP, APR and unknown attributes are dropped
            unknownAttribute++;
            return;
        }
        switch (a) {
            case REQ -> passive.onReq(from, b, mad);
            case MRA -> onMra(b);
            case REJ -> onRej(b);
            case REP -> onRep(from, b);
            case RTU -> passive.onRtu(b);
            case DREQ -> release.onDreq(from, b);
            case DREP -> release.onDrep(b);
        }
    }

    /** The local ACK timeout the id's QP gets at RTS: RDMA_OPTION_ID_ACK_TIMEOUT when set (cma.c rdma_init_qp_attr). */
    static int rtsTimeout(CmId id) {
        return id.ackTimeoutOption >= 0 ? id.ackTimeoutOption : id.ackTimeout;
    }

    private void onRep(InetAddress from, ByteBuf b) {
        CmRep rep = new CmRep().wrap(b, 0);
        CmId id = byLocalId.get(rep.remoteCommId());
        if (id == null) { // cm.c cm_rep_handler -> cm_dup_rep_handler finds nothing: dropped
            unmatched++;
            return;
        }
        if (id.state == CmId.State.ESTABLISHED && rep.localCommId() == id.remoteCommId && id.lastReply != null) {
            duplicates++; // cm_dup_rep_handler: our RTU was lost
            send(id.peer, id.lastReply);
            return;
        }
        if (id.state != CmId.State.REQ_SENT) {
            duplicates++;
            return;
        }
        cancelTimer(id);
        id.remoteCommId = rep.localCommId();
        id.remoteCaGuid = rep.localCaGuid();
        id.remoteQpn = rep.localQpn();
        CmReq req = new CmReq().wrap(Unpooled.wrappedBuffer(id.req), 0);
        CmConnParam p = id.param;
        byte[] pd = new byte[REP_PRIVATE_MAX];
        rep.privateData(pd, 0);
        // in force only when we offered and the REP answers with a subset of the offer (anything else agrees on nothing)
        int answer = id.offered != 0 ? ExtensionTrailer.decode(pd) : -1;
        int ext = answer >= 0 && (answer & ~id.offered) == 0 ? answer : 0;
        if (id.qp == null) {
            // the application's own QP (ownQp): librdmacm reports the REP as CONNECT_RESPONSE and leaves the QP and
            // the RTU to the application (rdma_init_qp_attr, rdma_establish)
            id.rep = new byte[MadHeader.MAD_SIZE];
            b.getBytes(0, id.rep);
            id.ackTimeout = ackTimeout(rep.targetAckDelay(), cfg.packetLifeTime);
            id.extensions = 0;
            id.state = CmId.State.REP_RCVD;
            // as seen from here (cma.c cma_set_rep_event_data): the peer's initiator depth is our responder resources
            CmConnParam seen = new CmConnParam().responderResources(rep.initiatorDepth()).initiatorDepth(rep.responderResources())
                    .retryCount(p.retryCount()).rnrRetryCount(rep.rnrRetryCount()).flowControl(rep.endToEndFlowControl()).privateData(pd);
            if (!id.closedByApp) id.channel.post(new CmEvent(CmEventType.CONNECT_RESPONSE, id, null, 0, pd, seen));
            return;
        }
        try {
            // what librdmacm's ucma_process_conn_resp does with rdma_init_qp_attr's values (cm.c cm_init_qp_rtr_attr,
            // cm_init_qp_rts_attr): rq_psn = our REQ's PSN, sq_psn = the REP's, timeout from the REP's ACK delay
            QueuePair qp = id.qp;
            toInit(qp);
            if (p.extensions() != 0) qp.setExtensions(ext); // before RTR, where the engines take them up
            id.extensions = ext;
            qp.modify(new QpAttr().state(QpState.RTR).dest(id.qpDest, peerUdpPort).pathMtu(Mtu.ofIbvEnum(req.pathMtu()))
                    .destQpNum(rep.localQpn()).rqPsn(req.startingPsn())
                    .maxDestRdAtomic(Math.min(p.responderResources(), QueuePair.MAX_RD_ATOMIC)).minRnrTimer(MIN_RNR_TIMER));
            id.ackTimeout = ackTimeout(rep.targetAckDelay(), cfg.packetLifeTime);
            qp.modify(new QpAttr().state(QpState.RTS).sqPsn(rep.startingPsn()).timeout(rtsTimeout(id))
                    .retryCnt(p.retryCount()).rnrRetry(rep.rnrRetryCount())
                    .maxRdAtomic(Math.min(Math.min(p.initiatorDepth(), rep.responderResources()), QueuePair.MAX_RD_ATOMIC)));
        } catch (RuntimeException e) {
            log.debug("cm: QP refused the REP's values: {}", e.toString());
            toError(id.qp);
            sendRej(id.peer, id.tid, id.localCommId, id.remoteCommId, CmRej.REJECTED_REP, REJ_CONSUMER_DEFINED, null, new byte[0]);
            finish(id);
            post(id, CmEventType.CONNECT_ERROR, 0, null);
            return;
        }
        sendRtu(id);
        post(id, CmEventType.ESTABLISHED, 0, pd);
    }

    /**
     * The first valid packet arrived on QP {@code qpn} (the verbs' IB_EVENT_COMM_EST, which Linux ULPs hand to the CM
     * with rdma_notify): a passive connection still waiting for its RTU is established as if the RTU had come (cm.c
     * ib_cm_notify -> cm_establish: REP_SENT -> ESTABLISHED, the REP's retries stop, rdma_cm reports ESTABLISHED).
     * The RTU was lost, but the requester is sending, so it has the REP. The passive QP is in RTS already (moved
     * there before the REP, as librdmacm does), so the responder calls this on a QP's first valid packet whatever
     * its state; a QPN of no such connection, or a second call, is ignored. Callable from any thread, without
     * blocking: the work is done on the agent's.
     */
    public void onFirstPacket(int qpn) {
        onAgent(() -> {
            CmId id = byLocalQpn.get(qpn);
            if (id != null && id.state == CmId.State.REP_SENT) {
                commEstablished++;
                passive.establish(id);
            }
        });
    }

    /**
     * Queues {@code r} on the agent's runner, also from the runner itself: a call from the receive path (the first
     * packet on a QP) must not change the QP while its packet is being handled.
     */
    private void onAgent(Runnable r) {
        if (closed) return;
        try {
            exec.execute(r);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closing
        }
    }

    private void onRej(ByteBuf b) {
        CmRej rej = new CmRej().wrap(b, 0);
        CmId id = byLocalId.get(rej.remoteCommId());
        if (id == null || (id.remoteCommId != 0 && rej.localCommId() != 0 && rej.localCommId() != id.remoteCommId)) {
            unmatched++;
            return;
        }
        rejReceived++;
        switch (id.state) {
            case REQ_SENT, REP_SENT, REP_RCVD -> {
                cancelTimer(id);
                toError(id.qp);
                byte[] pd = new byte[CmAttribute.REJ.privateDataLength()];
                rej.privateData(pd, 0);
                finish(id);
                post(id, CmEventType.REJECTED, rej.reason(), pd);
            }
            case ESTABLISHED -> {
                // cm.c cm_rej_handler: a REJ to an established connection (a stale one) ends it
                toError(id.qp);
                release.enterTimewait(id);
            }
            default -> duplicates++;
        }
    }

    private void onMra(ByteBuf b) {
        CmMra mra = new CmMra().wrap(b, 0);
        CmId id = byLocalId.get(mra.remoteCommId());
        if (id == null) {
            unmatched++;
            return;
        }
        boolean forUs = (id.state == CmId.State.REQ_SENT && mra.messageMraed() == CmMra.MRAED_REQ)
                || (id.state == CmId.State.REP_SENT && mra.messageMraed() == CmMra.MRAED_REP);
        if (!forUs || id.timer == null) {
            duplicates++;
            return;
        }
        // cm.c cm_mra_handler: the outstanding message waits service timeout + packet lifetime before its next resend
        cancelTimerOnly(id);
        long wait = convertMillis(mra.serviceTimeout()) + convertMillis(cfg.packetLifeTime);
        id.timer = exec.schedule(() -> retry(id), wait, TimeUnit.MILLISECONDS);
    }

    // ------------------------------------------------------------------ for Sidr (agent runner)

    CmId listener(long serviceId) {
        return listeners.get(serviceId);
    }

    // ------------------------------------------------------------------ sending, timers, bookkeeping

    void sendMra(CmId id) {
        if (id.lastReply == null) {
            byte[] mad = new byte[MadHeader.MAD_SIZE];
            new CmMra().wrap(Unpooled.wrappedBuffer(mad), 0).init(id.tid).localCommId(id.localCommId)
                    .remoteCommId(id.remoteCommId).messageMraed(CmMra.MRAED_REQ).serviceTimeout(cfg.mraServiceTimeout);
            id.lastReply = mad;
        }
        send(id.peer, id.lastReply);
    }

    void sendRej(InetAddress to, long tid, int localCommId, int remoteCommId, int rejected, int reason,
                         byte[] ari, byte[] privateData) {
        byte[] mad = new byte[MadHeader.MAD_SIZE];
        CmRej rej = new CmRej().wrap(Unpooled.wrappedBuffer(mad), 0).init(tid).localCommId(localCommId)
                .remoteCommId(remoteCommId).messageRejected(rejected).reason(reason)
                .privateData(privateData, 0, privateData.length);
        if (ari != null) rej.ari(ari, 0, ari.length);
        rejSent++;
        send(to, mad);
    }

    void send(InetAddress to, byte[] mad) {
        madsOut++;
        try {
            port.send(to, mad);
        } catch (RuntimeException e) {
            log.debug("cm: send to {} failed: {}", to, e.toString());
        }
    }

    void sendWithRetry(CmId id, byte[] mad, long timeoutMillis, int retries) {
        id.outstanding = mad;
        id.retriesLeft = retries;
        send(id.peer, mad);
        id.timer = exec.schedule(() -> retry(id), Math.max(1, timeoutMillis), TimeUnit.MILLISECONDS);
    }

    private void retry(CmId id) {
        id.timer = null;
        if (id.outstanding == null) return;
        if (id.retriesLeft-- > 0) {
            retransmits++;
            send(id.peer, id.outstanding);
            id.timer = exec.schedule(() -> retry(id), Math.max(1, id.retryMillis), TimeUnit.MILLISECONDS);
            return;
        }
        id.outstanding = null;
        timedOut++;
        switch (id.state) {
            case REQ_SENT, REP_SENT -> { // IB_CM_REQ_ERROR / IB_CM_REP_ERROR / IB_CM_SIDR_REQ_ERROR -> UNREACHABLE
                if (id.portSpace != CmPortSpace.UDP) toError(id.qp); // a UD QP serves other peers too
                finish(id);
                post(id, CmEventType.UNREACHABLE, CmEvent.ETIMEDOUT, null);
            }
            case DREQ_SENT -> release.enterTimewait(id); // no DREP: released all the same
            default -> {
            }
        }
    }

    /** The id's connection is over (rejected, unreachable, refused): it leaves the tables, the application keeps it. */
    void finish(CmId id) {
        cancelTimer(id);
        unregister(id);
        if (id.closedByApp || id.listener != null && id.state == CmId.State.REQ_RCVD) {
            // a request the application never saw to the end: nothing of it remains
            ids.remove(id);
        }
        id.state = CmId.State.DONE;
    }

    /** cm.c cm_format_rej: a REJ of a REQ not yet MRA'd carries Local Comm ID 0, after an MRA our own. */
    static int rejLocalId(CmId id) {
        return id.lastReply != null ? id.localCommId : 0;
    }

    void unregister(CmId id) {
        if (id.localCommId != 0) byLocalId.remove(id.localCommId, id);
        if (id.remoteKey != null) byRemote.remove(id.remoteKey, id);
        if (id.remoteQpKey != null) byRemoteQpn.remove(id.remoteQpKey, id);
        if (id.localQpn() >= 0) byLocalQpn.remove(id.localQpn(), id);
        if (id.acceptTimer != null) id.acceptTimer.cancel(false);
    }

    void leavePending(CmId id) {
        if (id.state == CmId.State.REQ_RCVD) pending--;
        if (id.acceptTimer != null) {
            id.acceptTimer.cancel(false);
            id.acceptTimer = null;
        }
    }

    void cancelTimer(CmId id) {
        id.outstanding = null;
        cancelTimerOnly(id);
    }

    private static void cancelTimerOnly(CmId id) {
        if (id.timer != null) {
            id.timer.cancel(false);
            id.timer = null;
        }
    }

    void post(CmId id, CmEventType type, int status, byte[] privateData) {
        if (id.closedByApp) return;
        id.channel.post(new CmEvent(type, id, null, status, privateData == null ? new byte[0] : privateData, null));
    }

    void checkCapacity() {
        if (ids.size() >= cfg.maxIds) throw new IllegalStateException("the CM holds " + ids.size() + " ids, its maximum");
    }

    static void need(CmId id, CmId.State s) {
        if (id.state != s) throw new IllegalStateException(id + " must be " + s);
    }

    int newCommId() {
        int c;
        do {
            c = nextCommId++;
        } while (c == 0 || byLocalId.containsKey(c));
        return c;
    }

    private int ephemeralPort(CmId id) {
        for (int i = 0; i < 65536; i++) {
            int p = 32768 + rnd.nextInt(61000 - 32768);
            long sid = id.portSpace.serviceId(p);
            if (!boundPorts.containsKey(sid)) {
                boundPorts.put(sid, new ArrayList<>(List.of(id)));
                return p;
            }
        }
        throw new IllegalStateException("no free rdma_cm port");
    }

    /** cma.c cma_check_port: a port another id holds is EADDRINUSE unless both set REUSEADDR and it does not listen. */
    private int reservePort(CmId id, int p) {
        List<CmId> holders = boundPorts.computeIfAbsent(id.portSpace.serviceId(p), k -> new ArrayList<>());
        for (CmId h : holders) {
            if (!(id.reuseAddr && h.reuseAddr && h.state != CmId.State.LISTEN)) {
                throw new IllegalStateException("rdma_cm port " + p + " is in use (EADDRINUSE)");
            }
        }
        holders.add(id);
        return p;
    }

    void releasePort(CmId id) {
        if (id.listener != null || id.localPort == 0) return;
        long sid = id.portSpace.serviceId(id.localPort);
        List<CmId> holders = boundPorts.get(sid);
        if (holders != null && holders.remove(id) && holders.isEmpty()) boundPorts.remove(sid);
    }

    static void toInit(QueuePair qp) {
        if (qp.state() == QpState.RESET) {
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1)
                    .accessFlags(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
        }
    }

    static void toError(QueuePair qp) {
        if (qp == null) return;
        try {
            if (qp.state() != QpState.ERR && qp.state() != QpState.RESET) qp.modify(new QpAttr().state(QpState.ERR));
        } catch (RuntimeException e) {
            log.debug("cm: {} to ERR: {}", qp, e.toString());
        }
    }

    /** cm.c cm_convert_to_ms: 4.096 us &times; 2^x, approximated as 2^(x-8) ms. */
    static long convertMillis(int exponent) {
        return 1L << Math.max(exponent - 8, 0);
    }

    /** cm.c cm_ack_timeout: the local ACK timeout from the CA's ACK delay and the path's packet lifetime. */
    static int ackTimeout(int caAckDelay, int packetLifeTime) {
        int t = packetLifeTime + 1;
        if (t >= caAckDelay) {
            t += (caAckDelay >= t - 1) ? 1 : 0;
        } else {
            t = caAckDelay + (t >= caAckDelay - 1 ? 1 : 0);
        }
        return Math.min(31, t);
    }

    // ------------------------------------------------------------------ the agent's runner

    <T> T call(Callable<T> task) {
        if (exec.inRunner()) {
            try {
                return task.call();
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
        if (closed) throw new IllegalStateException("the CM agent is closed");
        try {
            return exec.call(task);
        } catch (RuntimeException e) {
            e.addSuppressed(new Exception("called here"));
            throw e;
        }
    }

    /**
     * Stops the agent: every id still open is destroyed as the kernel destroys a process's ids when it exits with
     * them open (ucma_close_id, rdma_destroy_id, cm.c cm_destroy_id): a connection gets its DREQ, a request its REJ,
     * a DREQ the application has not answered its DREP, so the peer is not left to time out. Each is sent once (no
     * retries: nothing is left to answer them), then ids get no more events and the MAD port is closed.
     */
    @Override
    public void close() {
        if (closed) return;
        try {
            call(() -> {
                for (CmId id : new ArrayList<>(ids)) destroy(id);
                for (CmId id : new ArrayList<>(ids)) cancelTimer(id);
                return null;
            });
        } catch (RuntimeException ignored) {
            // closing anyway
        }
        closed = true;
        device.removeFirstPacketListener(firstPacket);
        port.close();
    }
}
