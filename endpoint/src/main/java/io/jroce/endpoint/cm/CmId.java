package io.jroce.endpoint.cm;

import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpAttr;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QueuePair;

import java.net.InetAddress;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A connection-manager identifier, librdmacm's {@code struct rdma_cm_id} in the TCP port space (RDMA_PS_TCP): either
 * a listener ({@link #bind}, {@link #listen}) that turns REQs into {@link CmEventType#CONNECT_REQUEST} events with a
 * new id each, or one end of one RC connection ({@link #connect} on the active side, {@link #accept} or
 * {@link #reject} on the passive side, {@link #disconnect}). Its QP ({@link #createQp}) is an ordinary jroce
 * {@link QueuePair}, moved to RTS by the CM with the values carried in REQ and REP.
 *
 * <p>Calls are thread-safe and return once the agent has acted (the MAD is sent); what follows arrives as events on
 * the id's {@link CmEventChannel}. A call in the wrong state throws {@link IllegalStateException}.
 */
public final class CmId implements AutoCloseable {

    /** Where an id is in its life (ib_cm's and rdma_cm's states, merged and simplified). */
    public enum State {
        IDLE, ADDR_RESOLVED, ROUTE_RESOLVED, LISTEN,
        REQ_SENT,
        /** Active side with a QP of the application's own: the REP came, the RTU waits for {@link #establish}. */
        REP_RCVD,
        REQ_RCVD, REP_SENT, ESTABLISHED, DREQ_SENT,
        /** The peer's DREQ came (DISCONNECTED was reported); the DREP waits for {@link #disconnect} or a timeout. */
        DREQ_RCVD,
        TIMEWAIT,
        /** Rejected, unreachable, timed out or disconnected: only {@link #close} is left. */
        DONE,
        CLOSED
    }

    final CmAgent agent;
    final CmEventChannel channel;
    final Object context;
    final CmPortSpace portSpace;
    volatile QueuePair qp;
    /**
     * The number of a QP the application creates and connects itself (librdmacm's conn_param.qp_num with no QP on
     * the id), or -1: the CM puts it in REQ or REP and never modifies it; the application asks {@link #initQpAttr}.
     */
    volatile int ownQpn = -1;
    /** RDMA_OPTION_ID_TOS: the path's traffic class (-1: not set, 0 in the path). */
    volatile int tos = -1;
    /** RDMA_OPTION_ID_ACK_TIMEOUT: the local ACK timeout the QP gets at RTS instead of the CM's (-1: not set). */
    volatile int ackTimeoutOption = -1;
    volatile boolean reuseAddr;
    volatile boolean afOnly;

    // everything below is touched only on the agent's runner (except the volatile ones, read by getters)
    volatile State state = State.IDLE;
    volatile int localPort;
    volatile InetAddress remoteAddress;
    volatile int remotePort;
    boolean closedByApp;
    // listener
    int backlog;
    final AtomicInteger undelivered = new AtomicInteger();
    // connection
    CmId listener;
    /**
     * A passive id's CONNECT_REQUEST: 0 while it waits in the channel, 1 once the application took it, 2 once the
     * listener was destroyed first (the request was rejected and the event is skipped). Set by compare-and-set,
     * since the application takes events on its own thread.
     */
    final AtomicInteger request = new AtomicInteger();
    InetAddress peer;              // where MADs go (the sender of the REQ, or the resolved destination)
    InetAddress qpDest;            // where the QP's packets go
    int localCommId;
    int remoteCommId;
    long remoteCaGuid;
    long tid;
    long dreqTid;
    byte[] req;                    // the REQ received (passive) or sent (active)
    byte[] rep;                    // active: the REP received
    int localPsn = -1;             // passive: the Starting PSN of our REP, chosen when first needed
    byte[] lastReply;              // RTU (active) or MRA to resend on duplicates, DREP in timewait
    int remoteQpn;
    int ackTimeout;
    long retryMillis;
    int maxRetries;
    CmConnParam param;
    int offered;                   // active: the extensions our REQ offered (0: no trailer)
    int peerOffer = -1;            // passive: the flags of the REQ's valid trailer, -1 without one
    volatile int extensions;       // the JroceExtensions agreed for this connection
    boolean disconnectedReported;
    // retransmission
    byte[] outstanding;
    int retriesLeft;
    ScheduledFuture<?> timer;
    ScheduledFuture<?> acceptTimer;
    CmAgent.Key remoteKey;
    CmAgent.Key remoteQpKey;
    // UDP port space
    volatile int qkey;             // the Q_Key of the id's UD QP (0 until it has one)
    long serviceId;                // passive: the SIDR_REQ's
    Sidr.Key sidrKey;              // passive: the SIDR_REQ's (Request ID, sender), while it waits for accept/reject
    volatile CmUdParam ud;         // active: what the SIDR_REP gave

    CmId(CmAgent agent, CmEventChannel channel, Object context) {
        this(agent, channel, context, CmPortSpace.TCP);
    }

    CmId(CmAgent agent, CmEventChannel channel, Object context, CmPortSpace portSpace) {
        this.agent = agent;
        this.channel = channel;
        this.context = context;
        this.portSpace = portSpace;
    }

    /** rdma_create_id(channel, context, RDMA_PS_TCP) on {@code agent}'s device. */
    public static CmId create(CmAgent agent, CmEventChannel channel, Object context) {
        return agent.createId(channel, context);
    }

    /** rdma_create_id with no context. */
    public static CmId create(CmAgent agent, CmEventChannel channel) {
        return agent.createId(channel, null);
    }

    /**
     * rdma_create_id(channel, context, ps): {@link CmPortSpace#UDP} makes a UD id. Its QP ({@link #createQp}, a UD
     * one) is taken to RTS with the id's Q_Key at once; {@link #listen} answers SIDR_REQs for its port's service ID
     * ({@code 0x0000000001110000 | port}) with CONNECT_REQUEST events, which {@link #accept} answers with a SIDR_REP
     * (the QP's number and Q_Key) and {@link #reject} with a SIDR_REP of status 2; {@link #connect} sends SIDR_REQs
     * (resent on the CM response timeout up to Max CM Retries times) and reports ESTABLISHED with the peer's
     * {@link CmUdParam} (address handle, QPN, Q_Key), or UNREACHABLE (status: the SIDR_REP's, or -110 when none came).
     */
    public static CmId create(CmAgent agent, CmEventChannel channel, Object context, CmPortSpace portSpace) {
        return agent.createId(channel, context, portSpace);
    }

    /**
     * rdma_bind_addr to the agent's device address and rdma_cm port {@code port} (0: an ephemeral one). Ports are
     * the agent's own, not the host's TCP ports.
     */
    public void bind(int port) {
        agent.call(() -> agent.bind(this, port));
    }

    /**
     * rdma_listen: REQs for the service ID of the bound port (0x0000000001060000 | port) become CONNECT_REQUEST
     * events. At most {@code backlog} of them wait in the channel untaken; beyond that a REQ is rejected with
     * reason 28 (consumer defined), as rdma_cm does when the ucma backlog is full.
     */
    public void listen(int backlog) {
        agent.call(() -> agent.listen(this, backlog));
    }

    /**
     * rdma_resolve_addr: remembers the destination and its rdma_cm port and reports ADDR_RESOLVED at once (the path
     * is the IP route; the peer device's UDP port is the agent's {@link CmConfig#peerUdpPort}).
     */
    public void resolveAddr(InetAddress destination, int port, Duration timeout) {
        agent.call(() -> agent.resolveAddr(this, destination, port));
    }

    /** rdma_resolve_route: reports ROUTE_RESOLVED at once (RoCEv2 needs no path record query). */
    public void resolveRoute(Duration timeout) {
        agent.call(() -> agent.resolveRoute(this));
    }

    /**
     * rdma_create_qp: creates an RC QP on {@code pd} (which must be of the agent's device) and moves it to INIT, so
     * receives can be posted before the connection is up. The CM moves it to RTR and RTS.
     */
    public QueuePair createQp(ProtectionDomain pd, QpInitAttr init) {
        return agent.call(() -> agent.createQp(this, pd, init));
    }

    /**
     * Uses an existing QP of the agent's device (in RESET or INIT) as this id's QP, instead of {@link #createQp}. In
     * the UDP port space: a UD QP in RESET (taken to RTS) or already in RTS (adopted with its Q_Key).
     */
    public void useQp(QueuePair qp) {
        agent.call(() -> agent.useQp(this, qp));
    }

    /**
     * rdma_connect: sends a REQ (rdma_cm header plus {@code param}'s private data, at most 56 bytes) and resends it
     * on the CM response timeout up to Max CM Retries times. Then ESTABLISHED (REP received, QP in RTS, RTU sent),
     * REJECTED, UNREACHABLE or CONNECT_ERROR follow. Needs a QP and a resolved address.
     */
    public void connect(CmConnParam param) {
        agent.call(() -> agent.connect(this, param == null ? CmConnParam.defaults() : param));
    }

    /** {@link #resolveAddr}, {@link #resolveRoute} and {@link #connect} in one call; the two RESOLVED events are not reported. */
    public void connect(InetAddress destination, int port, CmConnParam param) {
        agent.call(() -> {
            agent.resolveAddrQuiet(this, destination, port);
            return agent.connect(this, param == null ? CmConnParam.defaults() : param);
        });
    }

    /**
     * rdma_accept on an id from CONNECT_REQUEST: moves its QP to RTR and RTS with the REQ's values and sends the REP
     * ({@code param}'s private data, at most 196 bytes; responder resources and initiator depth are capped by the
     * REQ's). ESTABLISHED follows when the RTU arrives. Null param: the defaults.
     */
    public void accept(CmConnParam param) {
        agent.call(() -> agent.accept(this, param == null ? CmConnParam.defaults() : param));
    }

    /** rdma_reject on an id from CONNECT_REQUEST: sends a REJ with reason 28 (consumer defined) and up to 148 bytes of private data. */
    public void reject(byte[] privateData) {
        agent.call(() -> agent.reject(this, privateData == null ? new byte[0] : privateData.clone()));
    }

    /**
     * rdma_disconnect: moves the QP to ERR and sends a DREQ (resent until a DREP or the retries run out); DISCONNECTED
     * follows. After the peer disconnected first (DISCONNECTED reported, state {@link State#DREQ_RCVD}) it sends the
     * DREP that answers the peer's DREQ, as librdmacm's does; the agent sends that DREP by itself after the peer's
     * DREQ timeout when the application does not. Later it does nothing.
     */
    public void disconnect() {
        agent.call(() -> agent.disconnect(this));
    }

    /**
     * The application connects the QP numbered {@code qpn} itself (rdma_connect or rdma_accept with
     * conn_param.qp_num and no QP on the id, as rping -q does): the REQ or REP names it, the CM never modifies it, and
     * the application moves it with {@link #initQpAttr}'s attributes. On the active side the REP is reported as
     * {@link CmEventType#CONNECT_RESPONSE} and {@link #establish} sends the RTU.
     */
    public void ownQp(int qpn) {
        agent.call(() -> agent.ownQp(this, qpn));
    }

    /**
     * rdma_init_qp_attr: the attributes and mask that take the id's QP to {@code state} (INIT, RTR or RTS) as the
     * kernel's rdma_cm computes them (cma.c rdma_init_qp_attr, cm.c cm_init_qp_init_attr / _rtr_attr / _rts_attr):
     * INIT before a connection (pkey index, port, access flags 0; the Q_Key in the UDP port space); once a REQ is
     * sent or received, INIT with local and remote write (and remote read and atomic when the peer may read), RTR with
     * the path, the peer's QPN, the receive PSN and responder resources, RTS with the send PSN, timeouts and
     * initiator depth. A state the connection is not ready for throws IllegalStateException (EINVAL).
     */
    public QpAttr initQpAttr(QpState state) {
        return agent.call(() -> agent.initQpAttr(this, state));
    }

    /** The traffic class of the id's path: RDMA_OPTION_ID_TOS on the active side, the REQ's on the passive side. */
    public int trafficClass() {
        return agent.call(() -> agent.trafficClass(this));
    }

    /**
     * rdma_establish: after {@link CmEventType#CONNECT_RESPONSE} (and the application's QP in RTS), sends the RTU; the
     * connection is up. Else IllegalStateException (EINVAL), as librdmacm's for an id with a QP of the CM's.
     */
    public void establish() {
        agent.call(() -> agent.establish(this));
    }

    /**
     * rdma_notify(IBV_EVENT_COMM_EST): the QP received its first packet before the RTU, so a passive connection waiting
     * for the RTU is established now and reports ESTABLISHED (cm.c cm_establish); one established already throws
     * IllegalStateException "(EISCONN)", any other state IllegalStateException (EINVAL).
     */
    public void commEstablished() {
        agent.call(() -> agent.commEstablished(this));
    }

    /**
     * RDMA_OPTION_ID_TOS: the traffic class of the path (cma.c rdma_set_service_type); set before rdma_resolve_route,
     * it goes into the REQ's primary path and the QP's address vector ({@link #initQpAttr}).
     */
    public void setTos(int tos) {
        if (tos < 0 || tos > 255) throw new IllegalArgumentException("TOS is a byte, not " + tos);
        this.tos = tos;
    }

    /**
     * RDMA_OPTION_ID_ACK_TIMEOUT: the local ACK timeout (4.096 us &times; 2^t) the id's QP gets when the CM takes it to
     * RTS, instead of the one computed from the path (cma.c rdma_set_ack_timeout). RC ids only.
     */
    public void setAckTimeout(int timeout) {
        if (portSpace != CmPortSpace.TCP) throw new IllegalStateException(this + ": the ACK timeout is for RC ids");
        // the kernel takes any byte; the QP's timeout attribute has 5 bits (IBA 9.7.6.1.3), so more is refused here
        if (timeout < 0 || timeout > 31) throw new IllegalArgumentException("the ACK timeout is 0..31, not " + timeout);
        this.ackTimeoutOption = timeout;
    }

    /** RDMA_OPTION_ID_REUSEADDR (cma.c rdma_set_reuseaddr): on any id not listening, off only before it is bound. */
    public void setReuseAddr(boolean on) {
        agent.call(() -> {
            if ((on && state != State.LISTEN) || (state == State.IDLE && localPort == 0)) {
                reuseAddr = on;
                return null;
            }
            throw new IllegalStateException(this + ": REUSEADDR cannot change now");
        });
    }

    /** RDMA_OPTION_ID_AFONLY (cma.c rdma_set_afonly): only before the id listens or resolves an address. */
    public void setAfOnly(boolean on) {
        agent.call(() -> {
            if (state != State.IDLE) throw new IllegalStateException(this + ": AFONLY cannot change now");
            afOnly = on;
            return null;
        });
    }

    /** The RDMA_OPTION_ID_ACK_TIMEOUT set, or -1. */
    public int ackTimeoutOption() { return ackTimeoutOption; }
    public boolean reuseAddr() { return reuseAddr; }
    public boolean afOnly() { return afOnly; }

    /** The number of the id's QP, the CM's or the application's own ({@link #ownQp}); -1 without one. */
    int localQpn() {
        QueuePair q = qp;
        return q != null ? q.qpNum() : ownQpn;
    }

    /**
     * rdma_destroy_id: ends what the id was doing the way ib_cm does for a destroyed id (a REJ for a pending
     * request, a DREQ for an established connection, REJ 4 for a REQ still unanswered) and reports nothing more.
     * The QP is not destroyed.
     */
    @Override
    public void close() {
        agent.call(() -> agent.destroy(this));
    }

    /**
     * The {@link io.jroce.endpoint.JroceExtensions} agreed for this connection in the REQ's and REP's private data
     * (see {@link CmConnParam#extensions}), set on the QP at RTR; 0 until then, and with any peer that did not
     * answer an offer.
     */
    public int extensions() { return extensions; }

    /** The port space the id was created in. */
    public CmPortSpace portSpace() { return portSpace; }
    /** UDP port space: the Q_Key of the id's QP ({@link CmPortSpace#UDP_QKEY} unless accept set another); else 0. */
    public int qkey() { return qkey; }
    /** UDP port space, active side: the peer's address handle, QPN and Q_Key once ESTABLISHED; else null. */
    public CmUdParam udParam() { return ud; }
    /** The QP bound to this id, or null. */
    public QueuePair qp() { return qp; }
    public Object context() { return context; }
    public CmAgent agent() { return agent; }
    public CmEventChannel channel() { return channel; }
    public State state() { return state; }
    /** The rdma_cm port: the listened one, or the active side's source port. */
    public int localPort() { return localPort; }
    public InetAddress localAddress() { return agent.localAddress(); }
    /** The peer's IP address (from the rdma_cm header on the passive side), or null. */
    public InetAddress remoteAddress() { return remoteAddress; }
    /** The peer's rdma_cm port: the destination port (active side) or the requester's source port (passive side). */
    public int remotePort() { return remotePort; }

    void requestTaken() {
        undelivered.decrementAndGet();
    }

    @Override
    public String toString() {
        return "CmId{" + (portSpace == CmPortSpace.UDP ? "UDP " : "") + state + (localCommId != 0 ? String.format(" comm %08x", localCommId) : "")
                + " port " + localPort + (remoteAddress != null ? " peer " + remoteAddress.getHostAddress() + ":" + remotePort : "")
                + (localQpn() >= 0 ? " qpn " + localQpn() : "") + "}";
    }
}
