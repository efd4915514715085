package io.jroce.endpoint.cm;

import io.jroce.endpoint.Gid;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.QpAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QueuePair;
import io.jroce.wire.mad.CmAttribute;
import io.jroce.wire.mad.CmRej;
import io.jroce.wire.mad.CmRep;
import io.jroce.wire.mad.CmReq;
import io.jroce.wire.mad.CmRtu;
import io.jroce.wire.mad.CmaHeader;
import io.jroce.wire.mad.MadHeader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.util.concurrent.TimeUnit;

/**
 * The passive side of an RC connection's set-up (IBTA 12.9.5-6; cm.c cm_req_handler, ib_send_cm_rep, cm_rtu_handler,
 * cm_establish; cma.c cma_ib_req_handler, rdma_accept) for a {@link CmAgent}: a REQ checked as ib_cm and rdma_cm
 * check it and turned into a CONNECT_REQUEST, the application's accept (the QP to RTS, the REP) or reject, and the
 * RTU, or the first packet in its stead. Runs on the agent's runner.
 */
final class CmPassive {
    private final CmAgent a;

    CmPassive(CmAgent agent) {
        this.a = agent;
    }

    Void accept(CmId id, CmConnParam param) {
        if (id.state != CmId.State.REQ_RCVD) throw new IllegalStateException(id + ": only a CONNECT_REQUEST's id can be accepted");
        if (id.localQpn() < 0) throw new IllegalStateException(id + ": accept needs a QP (createQp)");
        if (id.portSpace == CmPortSpace.UDP) return a.sidr.accept(id, param);
        if (param.privateDataLength() > CmAgent.REP_PRIVATE_MAX) {
            throw new IllegalArgumentException("REP private data is at most 196 bytes, not " + param.privateDataLength());
        }
        // the answer to a jroce offer: only to a valid one, only when this side allows extensions and its REP data
        // leaves room; what both offer is in force on both QPs, and a REP without the trailer agrees on nothing
        boolean answer = id.peerOffer >= 0 && param.extensions() != 0
                && ExtensionTrailer.fits(param.privateDataLength(), CmAgent.REP_PRIVATE_MAX);
        int ext = answer ? id.peerOffer & param.extensions() : 0;
        CmReq req = new CmReq().wrap(Unpooled.wrappedBuffer(id.req), 0);
        // cm.c cm_init_qp_rtr_attr: the passive QP takes the REQ's path MTU as it is; both ends must agree, since a
        // responder refuses packets longer than its own path MTU (rxe check_length), and the requester chose it
        int mtu = Math.max(Mtu.MTU_256.ibvEnum(), Math.min(req.pathMtu(), Mtu.MTU_4096.ibvEnum()));
        // librdmacm rdma_accept: RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH (and a null conn_param) mirror the REQ's
        // initiator depth / responder resources, clamped to the a.device's maximum; given values are capped the same way
        int respRes = Math.min(Math.min(param.responderResources(), req.initiatorDepth()), CmAgent.MAX_RD_ATOMIC);
        int initDepth = Math.min(Math.min(param.initiatorDepth(), req.responderResources()), CmAgent.MAX_RD_ATOMIC);
        int psn = a.passivePsn(id);
        QueuePair qp = id.qp;
        id.ackTimeout = req.primaryPath().localAckTimeout();
        if (qp != null) {
            // librdmacm rdma_accept moves the QP to RTR and RTS before the REP goes out (ucma_modify_qp_rtr/_rts);
            // Linux convention (cm.c cm_req_handler): the REQ's Starting PSN is what we send from, the REP's is what we expect
            CmAgent.toInit(qp);
            if (param.extensions() != 0) qp.setExtensions(ext); // before RTR, where the engines take them up
            id.extensions = ext;
            qp.modify(new QpAttr().state(QpState.RTR).dest(id.qpDest, a.peerUdpPort).pathMtu(Mtu.ofIbvEnum(mtu))
                    .destQpNum(req.localQpn()).rqPsn(psn).maxDestRdAtomic(respRes).minRnrTimer(CmAgent.MIN_RNR_TIMER));
            qp.modify(new QpAttr().state(QpState.RTS).sqPsn(req.startingPsn()).timeout(CmAgent.rtsTimeout(id))
                    .retryCnt(req.retryCount()).rnrRetry(req.rnrRetryCount()).maxRdAtomic(initDepth));
        } else {
            // the application's own QP (ownQp): it moved the QP with rdma_init_qp_attr's values; nothing is agreed
            answer = false;
            ext = 0;
            id.extensions = 0;
        }
        id.remoteQpn = req.localQpn();
        id.param = param;
        byte[] mad = new byte[MadHeader.MAD_SIZE];
        CmRep rep = new CmRep().wrap(Unpooled.wrappedBuffer(mad), 0).init(id.tid);
        rep.localCommId(id.localCommId).remoteCommId(id.remoteCommId).localQkey(0).localQpn(id.localQpn())
                .startingPsn(psn).responderResources(respRes).initiatorDepth(initDepth)
                .targetAckDelay(a.cfg.caAckDelay).failoverAccepted(0).endToEndFlowControl(param.flowControl())
                .rnrRetryCount(param.rnrRetryCount()).srq(false).localCaGuid(a.caGuid)
                .privateData(param.privateDataRaw(), 0, param.privateDataLength());
        if (answer) {
            Unpooled.wrappedBuffer(mad).setBytes(rep.privateDataIndex() + CmAgent.REP_PRIVATE_MAX - ExtensionTrailer.LENGTH,
                    ExtensionTrailer.encode(ext));
        }
        a.leavePending(id);
        // cm.c ib_send_cm_rep: resent every REQ Local CM Response Timeout, REQ Max CM Retries times
        id.retryMillis = CmAgent.convertMillis(req.localCmResponseTimeout());
        id.maxRetries = req.maxCmRetries();
        id.state = CmId.State.REP_SENT;
        a.byLocalQpn.put(id.localQpn(), id);
        a.sendWithRetry(id, mad, id.retryMillis, id.maxRetries);
        return null;
    }

    Void reject(CmId id, byte[] privateData) {
        if (id.state != CmId.State.REQ_RCVD) throw new IllegalStateException(id + ": only a CONNECT_REQUEST's id can be rejected");
        if (id.portSpace == CmPortSpace.UDP) return a.sidr.reject(id, privateData);
        if (privateData.length > CmAttribute.REJ.privateDataLength()) {
            throw new IllegalArgumentException("REJ private data is at most 148 bytes, not " + privateData.length);
        }
        a.leavePending(id);
        a.sendRej(id.peer, id.tid, CmAgent.rejLocalId(id), id.remoteCommId, CmRej.REJECTED_REQ, CmAgent.REJ_CONSUMER_DEFINED, null, privateData);
        a.finish(id);
        return null;
    }

    void onReq(InetAddress from, ByteBuf b, byte[] mad) {
        CmReq req = new CmReq().wrap(b, 0);
        if (req.pkey() != 0xFFFF && req.pkey() != 0x7FFF) { // rxe answers a foreign P_Key with silence
            a.malformed++;
            return;
        }
        long tid = req.header().transactionId();
        CmAgent.Key key = new CmAgent.Key(req.localCommId(), req.localCaGuid());
        CmId dup = a.byRemote.get(key);
        if (dup != null) { // cm.c cm_match_req / cm_dup_req_handler
            a.duplicates++;
            switch (dup.state) {
                case REQ_RCVD -> a.sendMra(dup);                 // the application is slow: ask for more time
                case TIMEWAIT -> a.sendRej(from, tid, dup.localCommId, req.localCommId(), CmRej.REJECTED_REQ,
                        CmAgent.REJ_STALE_CONN, null, new byte[0]);
                default -> {
                    // REP_SENT and later: the REP's own timer resends it
                }
            }
            return;
        }
        CmAgent.Key qpKey = new CmAgent.Key(req.localQpn(), req.localCaGuid());
        CmId old = a.byRemoteQpn.get(qpKey);
        if (old != null) {
            // cm.c cm_match_req: a new REQ from a QP we are still a.connected to (or in timewait with) is stale: REJ 10,
            // and the old connection, if established, is released with a DREQ (ib_send_cm_dreq)
            a.duplicates++;
            a.sendRej(from, tid, 0, req.localCommId(), CmRej.REJECTED_REQ, CmAgent.REJ_STALE_CONN, null, new byte[0]);
            if (old.state == CmId.State.ESTABLISHED) {
                CmAgent.toError(old.qp);
                a.release.sendDreq(old);
            }
            return;
        }
        long sid = req.serviceId();
        CmId listener = a.listeners.get(sid);
        if (listener != null && listener.portSpace != CmPortSpace.TCP) {
            // ib_cm matched a UD listener's service ID; rdma_cm refuses an RC request there (cma_ib_check_req_qp_type)
            a.sendRej(from, tid, 0, req.localCommId(), CmRej.REJECTED_REQ, CmAgent.REJ_CONSUMER_DEFINED, null, new byte[0]);
            return;
        }
        if (listener == null) { // cm.c cm_req_handler: no listener -> IB_CM_REJ_INVALID_SERVICE_ID
            a.sendRej(from, tid, 0, req.localCommId(), CmRej.REJECTED_REQ, CmAgent.REJ_INVALID_SERVICE_ID, null, new byte[0]);
            return;
        }
        byte[] responderGid = new byte[16];
        req.primaryPath().remoteGid(responderGid, 0);
        if (!a.device.gid(0).equals(Gid.of(responderGid))) {
            // cm.c cm_req_handler: no GID of this port for the path (cm_init_av_by_path fails) -> REJ 12 with the
            // port's GID at index 0 as ARI. rdma_rxe's index 0 is its link-local GID; jroce's table holds only the
            // a.device's address, so that is the GID a peer reads here.
            a.sendRej(from, tid, 0, req.localCommId(), CmRej.REJECTED_REQ, CmAgent.REJ_INVALID_GID, a.device.gid(0).raw(), new byte[0]);
            return;
        }
        CmaHeader cma = new CmaHeader().wrap(b, req.privateDataIndex());
        InetAddress src = cma.sourceAddress();
        if (req.transportServiceType() != CmReq.TRANSPORT_RC || cma.cmaVersion() != CmaHeader.CMA_VERSION || src == null
                || (src instanceof Inet4Address) != (a.localAddress() instanceof Inet4Address)
                || !a.localAddress().equals(cma.destinationAddress())) {
            // rdma_cm refuses what it cannot take after ib_cm accepted the REQ: cm_destroy_id sends REJ 28. That
            // includes a destination address the listener is not bound to (cma.c cma_ib_id_from_event finds no
            // listener: validate_net_dev / cma_match_private_data)
            a.sendRej(from, tid, 0, req.localCommId(), CmRej.REJECTED_REQ, CmAgent.REJ_CONSUMER_DEFINED, null, new byte[0]);
            return;
        }
        if (a.pending >= a.cfg.maxPending || a.ids.size() >= a.cfg.maxIds) {
            a.pendingOverflow++;
            return;
        }
        if (listener.undelivered.get() >= listener.backlog) {
            a.backlogOverflow++;
            a.sendRej(from, tid, 0, req.localCommId(), CmRej.REJECTED_REQ, CmAgent.REJ_CONSUMER_DEFINED, null, new byte[0]);
            return;
        }
        CmId id = new CmId(a, listener.channel, listener.context);
        id.listener = listener;
        id.localPort = listener.localPort;
        id.remoteAddress = src;
        id.remotePort = cma.port();
        id.peer = from;
        id.qpDest = qpDestination(req, from);
        id.localCommId = a.newCommId();
        id.remoteCommId = req.localCommId();
        id.remoteCaGuid = req.localCaGuid();
        id.tid = tid;
        id.req = mad;
        id.remoteKey = key;
        id.remoteQpKey = qpKey;
        id.state = CmId.State.REQ_RCVD;
        a.ids.add(id);
        a.byLocalId.put(id.localCommId, id);
        a.byRemote.put(key, id);
        a.byRemoteQpn.put(qpKey, id);
        a.pending++;
        id.acceptTimer = a.exec.schedule(() -> acceptTimedOut(id), a.cfg.acceptTimeoutMillis, TimeUnit.MILLISECONDS);
        byte[] pd = new byte[CmAgent.REQ_PRIVATE_MAX];
        b.getBytes(req.privateDataIndex() + CmaHeader.LENGTH, pd);
        id.peerOffer = ExtensionTrailer.decode(pd);
        // as seen from here: the requester's initiator depth is what we may grant as responder, and the other way round
        CmConnParam seen = new CmConnParam().responderResources(req.initiatorDepth()).initiatorDepth(req.responderResources())
                .retryCount(req.retryCount()).rnrRetryCount(req.rnrRetryCount()).flowControl(req.endToEndFlowControl())
                .privateData(pd).extensions(Math.max(id.peerOffer, 0));
        listener.undelivered.incrementAndGet();
        listener.channel.post(new CmEvent(CmEventType.CONNECT_REQUEST, id, listener, 0, pd, seen));
    }

    /** The RC QP's destination: the REQ's Primary Local Port GID (where rxe's passive QP sends too), else the sender. */
    private static InetAddress qpDestination(CmReq req, InetAddress from) {
        byte[] g = new byte[16];
        req.primaryPath().localGid(g, 0);
        Gid gid = Gid.of(g);
        InetAddress a = gid.toInetAddress();
        if (a == null || a.isAnyLocalAddress() || (a instanceof Inet4Address) != (from instanceof Inet4Address)) return from;
        return a;
    }

    private void acceptTimedOut(CmId id) {
        if (id.state != CmId.State.REQ_RCVD) return;
        a.timedOut++;
        a.leavePending(id);
        a.sendRej(id.peer, id.tid, CmAgent.rejLocalId(id), id.remoteCommId, CmRej.REJECTED_REQ, CmAgent.REJ_CONSUMER_DEFINED, null, new byte[0]);
        a.finish(id);
    }

    void onRtu(ByteBuf b) {
        CmRtu rtu = new CmRtu().wrap(b, 0);
        CmId id = a.byLocalId.get(rtu.remoteCommId());
        if (id == null || rtu.localCommId() != id.remoteCommId) {
            a.unmatched++;
            return;
        }
        if (id.state != CmId.State.REP_SENT) {
            a.duplicates++; // also the RTU of a connection its first packet established
            return;
        }
        establish(id);
    }

    void establish(CmId id) {
        a.cancelTimer(id);
        a.byLocalQpn.remove(id.localQpn(), id);
        id.state = CmId.State.ESTABLISHED;
        a.connected++;
        a.post(id, CmEventType.ESTABLISHED, 0, new byte[0]);
    }
}
