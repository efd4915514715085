package io.jroce.endpoint.cm;

import io.jroce.endpoint.AddressHandle;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpAttr;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QpType;
import io.jroce.endpoint.QueuePair;
import io.jroce.wire.mad.CmaHeader;
import io.jroce.wire.mad.MadHeader;
import io.jroce.wire.mad.SidrRep;
import io.jroce.wire.mad.SidrReq;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.net.InetAddress;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Service ID Resolution (IBTA 12.11; cm.c cm_sidr_req_handler, cm_sidr_rep_handler) and rdma_cm's UDP port space on
 * top of it (cma.c cma_resolve_ib_udp, cma_sidr_rep_handler, cma_send_sidr_rep, cma_init_ud_qp) for a
 * {@link CmAgent}. A SIDR exchange is one request and one reply: nothing is held after it, except a passive request
 * while the application decides (capped as the agent's other pending requests). Runs on the agent's runner.
 */
final class Sidr {
    /** What of a SIDR_REQ's private data is the application's: the area minus rdma_cm's header. */
    static final int REQ_PRIVATE_MAX = SidrReq.PRIVATE_DATA_LENGTH - CmaHeader.LENGTH;

    /** A passive request: the requester's Request ID and address (cm.c cm_insert_remote_sidr). */
    record Key(int requestId, InetAddress from) {
    }

    private final CmAgent agent;
    private final Map<Key, CmId> requests = new HashMap<>();

    Sidr(CmAgent agent) {
        this.agent = agent;
    }

    // ------------------------------------------------------------------ QPs

    QueuePair createQp(CmId id, ProtectionDomain pd, QpInitAttr init) {
        if (init.qpType() != QpType.UD) throw new IllegalArgumentException(id + ": the UDP port space takes a UD QP");
        QueuePair qp = pd.createQp(init);
        toRts(id, qp);
        return qp;
    }

    /** An existing UD QP: taken to RTS from RESET as createQp does, or adopted as it is in RTS (its Q_Key kept). */
    void useQp(CmId id, QueuePair qp) {
        if (qp.type() != QpType.UD) throw new IllegalArgumentException(id + ": the UDP port space takes a UD QP");
        if (qp.state() == QpState.RTS) {
            id.qkey = qp.query().qkey();
            id.qp = qp;
            return;
        }
        if (qp.state() != QpState.RESET) throw new IllegalStateException(qp + " must be in RESET or RTS");
        toRts(id, qp);
    }

    /** cma.c cma_init_ud_qp: INIT with the id's Q_Key (RDMA_UDP_QKEY unless set), then RTR, then RTS with SQ PSN 0. */
    private static void toRts(CmId id, QueuePair qp) {
        int qkey = id.qkey != 0 ? id.qkey : CmPortSpace.UDP_QKEY;
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(qkey));
        qp.modify(new QpAttr().state(QpState.RTR));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
        id.qkey = qkey;
        id.qp = qp;
    }

    // ------------------------------------------------------------------ active side

    Void connect(CmId id, CmConnParam param) {
        if (param.privateDataLength() > REQ_PRIVATE_MAX) {
            throw new IllegalArgumentException("SIDR_REQ private data is at most " + REQ_PRIVATE_MAX + " bytes, not "
                    + param.privateDataLength());
        }
        agent.checkCapacity();
        id.param = param;
        id.localCommId = agent.newCommId();
        id.tid = agent.hiTid << 32 | (id.localCommId & 0xFFFFFFFFL);
        byte[] mad = new byte[MadHeader.MAD_SIZE];
        ByteBuf b = Unpooled.wrappedBuffer(mad);
        SidrReq req = new SidrReq().wrap(b, 0).init(id.tid).requestId(id.localCommId).pkey(0xFFFF)
                .serviceId(CmPortSpace.UDP.serviceId(id.remotePort));
        new CmaHeader().wrap(b, req.privateDataIndex()).write(id.localPort, agent.localAddress(), id.remoteAddress);
        req.privateData(CmaHeader.LENGTH, param.privateDataRaw(), param.privateDataLength());
        id.req = mad;
        // cma.c cma_resolve_ib_udp: timeout 1 << (CMA_CM_RESPONSE_TIMEOUT - 8) ms, CMA_MAX_CM_RETRIES retries
        id.retryMillis = CmAgent.convertMillis(agent.cfg.cmResponseTimeout);
        id.maxRetries = agent.cfg.maxCmRetries;
        agent.byLocalId.put(id.localCommId, id);
        id.state = CmId.State.REQ_SENT;
        agent.sendWithRetry(id, mad, id.retryMillis, id.maxRetries);
        return null;
    }

    void onSidrRep(InetAddress from, ByteBuf b) {
        SidrRep rep = new SidrRep().wrap(b, 0);
        CmId id = agent.byLocalId.get(rep.requestId());
        if (id == null || id.portSpace != CmPortSpace.UDP || id.state != CmId.State.REQ_SENT) {
            agent.unmatched++; // cm.c cm_sidr_rep_handler: no such request, or answered already
            return;
        }
        agent.cancelTimer(id);
        byte[] pd = new byte[SidrRep.PRIVATE_DATA_LENGTH];
        rep.copyPrivateData(pd, 0);
        if (rep.status() != SidrRep.SUCCESS) {
            // cma.c cma_sidr_rep_handler: any status but success is RDMA_CM_EVENT_UNREACHABLE with that status
            agent.rejReceived++;
            agent.finish(id);
            post(id, CmEventType.UNREACHABLE, rep.status(), pd, null);
            return;
        }
        AddressHandle ah = id.qp.pd().createAh(id.qpDest, agent.peerUdpPort);
        id.ud = new CmUdParam(ah, rep.qpn(), rep.qkey());
        agent.unregister(id);
        id.state = CmId.State.ESTABLISHED;
        agent.connected++;
        post(id, CmEventType.ESTABLISHED, 0, pd, id.ud);
    }

    // ------------------------------------------------------------------ passive side

    void onSidrReq(InetAddress from, ByteBuf b) {
        SidrReq req = new SidrReq().wrap(b, 0);
        long tid = req.header().transactionId();
        long sid = req.serviceId();
        CmId listener = agent.listener(sid);
        if (listener == null) { // cm.c cm_sidr_req_handler: no listener for the service ID
            sendRep(from, tid, req.requestId(), sid, SidrRep.UNSUPPORTED, 0, 0, null);
            return;
        }
        if (listener.portSpace != CmPortSpace.UDP) {
            // ib_cm finds the listener by service ID, rdma_cm refuses a UD request on an RC listener
            // (cma_ib_check_req_qp_type) and cm_destroy_id rejects it: status 2, QPN 0, Q_Key 0
            sendRep(from, tid, req.requestId(), sid, SidrRep.REJECT, 0, 0, null);
            return;
        }
        CmaHeader cma = new CmaHeader().wrap(b, req.privateDataIndex());
        InetAddress src = cma.sourceAddress();
        if (cma.cmaVersion() != CmaHeader.CMA_VERSION || src == null
                || !agent.localAddress().equals(cma.destinationAddress())) {
            // rdma_cm finds no listener for the header's addresses (cma_ib_id_from_event): rejected as above
            sendRep(from, tid, req.requestId(), sid, SidrRep.REJECT, 0, 0, null);
            return;
        }
        Key key = new Key(req.requestId(), from);
        if (requests.containsKey(key)) { // a resend while the application decides: cm.c drops it
            agent.duplicates++;
            return;
        }
        if (agent.pending >= agent.cfg.maxPending || agent.ids.size() >= agent.cfg.maxIds) {
            agent.pendingOverflow++;
            return;
        }
        if (listener.undelivered.get() >= listener.backlog) {
            agent.backlogOverflow++;
            sendRep(from, tid, req.requestId(), sid, SidrRep.REJECT, 0, 0, null);
            return;
        }
        CmId id = new CmId(agent, listener.channel, listener.context, CmPortSpace.UDP);
        id.listener = listener;
        id.localPort = listener.localPort;
        id.remoteAddress = src;
        id.remotePort = cma.port();
        id.peer = from;
        id.qpDest = from;
        id.remoteCommId = req.requestId();
        id.tid = tid;
        id.serviceId = sid;
        id.sidrKey = key;
        id.state = CmId.State.REQ_RCVD;
        agent.ids.add(id);
        requests.put(key, id);
        agent.pending++;
        id.acceptTimer = agent.exec.schedule(() -> acceptTimedOut(id), agent.cfg.acceptTimeoutMillis, TimeUnit.MILLISECONDS);
        byte[] pd = new byte[REQ_PRIVATE_MAX];
        b.getBytes(req.privateDataIndex() + CmaHeader.LENGTH, pd);
        listener.undelivered.incrementAndGet();
        listener.channel.post(new CmEvent(CmEventType.CONNECT_REQUEST, id, listener, 0, pd, null));
    }

    /** cma.c rdma_accept for UD -> cma_send_sidr_rep(IB_SIDR_SUCCESS): the QP's number and Q_Key. */
    Void accept(CmId id, CmConnParam param) {
        if (param.privateDataLength() > SidrRep.PRIVATE_DATA_LENGTH) {
            throw new IllegalArgumentException("SIDR_REP private data is at most " + SidrRep.PRIVATE_DATA_LENGTH
                    + " bytes, not " + param.privateDataLength());
        }
        if (param.qkey() != 0 && param.qkey() != id.qkey) {
            id.qp.modify(new QpAttr().state(QpState.RTS).qkey(param.qkey()));
            id.qkey = param.qkey();
        }
        leave(id);
        sendRep(id.peer, id.tid, id.remoteCommId, id.serviceId, SidrRep.SUCCESS, id.qp.qpNum(), id.qkey,
                param.privateDataRaw());
        agent.unregister(id);
        id.state = CmId.State.ESTABLISHED; // nothing more to say to the peer: SIDR has no RTU
        return null;
    }

    /** cma.c rdma_reject for UD -> cma_send_sidr_rep(IB_SIDR_REJECT). */
    Void reject(CmId id, byte[] privateData) {
        if (privateData.length > SidrRep.PRIVATE_DATA_LENGTH) {
            throw new IllegalArgumentException("SIDR_REP private data is at most " + SidrRep.PRIVATE_DATA_LENGTH
                    + " bytes, not " + privateData.length);
        }
        leave(id);
        sendRep(id.peer, id.tid, id.remoteCommId, id.serviceId, SidrRep.REJECT, 0, 0, privateData);
        agent.finish(id);
        return null;
    }

    /** An id of the UDP port space goes: a request not yet answered is rejected (cm.c cm_destroy_id). */
    void destroy(CmId id) {
        switch (id.state) {
            case REQ_RCVD -> {
                leave(id);
                sendRep(id.peer, id.tid, id.remoteCommId, id.serviceId, SidrRep.REJECT, 0, 0, null);
                agent.finish(id);
            }
            case REQ_SENT -> agent.finish(id);
            default -> {
            }
        }
    }

    private void acceptTimedOut(CmId id) {
        if (id.state != CmId.State.REQ_RCVD) return;
        agent.timedOut++;
        leave(id);
        sendRep(id.peer, id.tid, id.remoteCommId, id.serviceId, SidrRep.REJECT, 0, 0, null);
        agent.finish(id);
    }

    private void leave(CmId id) {
        if (id.sidrKey != null) requests.remove(id.sidrKey, id);
        agent.leavePending(id);
    }

    private void post(CmId id, CmEventType type, int status, byte[] privateData, CmUdParam ud) {
        if (id.closedByApp) return;
        id.channel.post(new CmEvent(type, id, null, status, privateData, null, ud));
    }

    private void sendRep(InetAddress to, long tid, int requestId, long serviceId, int status, int qpn, int qkey,
                         byte[] privateData) {
        byte[] mad = new byte[MadHeader.MAD_SIZE];
        SidrRep rep = new SidrRep().wrap(Unpooled.wrappedBuffer(mad), 0).init(tid).requestId(requestId).status(status)
                .qpn(qpn).serviceId(serviceId).qkey(qkey);
        if (privateData != null) rep.privateData(privateData, privateData.length);
        if (status != SidrRep.SUCCESS) agent.rejSent++;
        agent.send(to, mad);
    }
}
