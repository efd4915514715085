package io.jroce.endpoint.cm;

import io.jroce.wire.mad.CmDrep;
import io.jroce.wire.mad.CmDreq;
import io.jroce.wire.mad.CmReq;
import io.jroce.wire.mad.MadHeader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.net.InetAddress;
import java.util.concurrent.TimeUnit;

/**
 * The release of a connection (IBTA 12.9.7; cm.c ib_send_cm_dreq, cm_dreq_handler, cm_drep_handler,
 * cm_enter_timewait) for a {@link CmAgent}: DREQ_SENT, DREQ_RCVD and TIMEWAIT, the DREQ's retries, the DREPs,
 * and the timewait that keeps a released connection known for a while. Runs on the agent's runner.
 */
final class CmRelease {
    private final CmAgent a;

    CmRelease(CmAgent agent) {
        this.a = agent;
    }

    Void disconnect(CmId id) {
        if (id.portSpace == CmPortSpace.UDP) { // cma.c rdma_disconnect: the QP to ERR; ib_cm has nothing to send
            CmAgent.toError(id.qp);
            return null;
        }
        switch (id.state) {
            case ESTABLISHED, REP_SENT -> {
                CmAgent.toError(id.qp);
                sendDreq(id);
            }
            case DREQ_RCVD -> answerDreq(id); // cma.c rdma_disconnect: the DREQ fails in DREQ_RCVD, the DREP goes
            case DREQ_SENT, TIMEWAIT, DONE -> {
                // already released (by us or the peer): rdma_disconnect after DISCONNECTED has nothing to do
            }
            default -> throw new IllegalStateException(id + " is not connected");
        }
        return null;
    }

    void onDreq(InetAddress from, ByteBuf b) {
        CmDreq dreq = new CmDreq().wrap(b, 0);
        long tid = dreq.header().transactionId();
        CmId id = a.byLocalId.get(dreq.remoteCommId());
        if (id == null || id.remoteCommId != dreq.localCommId()) {
            // cm.c cm_dreq_handler: unknown -> cm_issue_drep, so the peer's DREQ does not time out
            a.unmatched++;
            byte[] drep = new byte[MadHeader.MAD_SIZE];
            new CmDrep().wrap(Unpooled.wrappedBuffer(drep), 0).init(tid).localCommId(dreq.remoteCommId())
                    .remoteCommId(dreq.localCommId());
            a.send(from, drep);
            return;
        }
        if (id.qp != null && dreq.remoteQpn() != id.qp.qpNum()) { // cm.c: a DREQ for another QP is dropped
            a.unmatched++;
            return;
        }
        switch (id.state) {
            case ESTABLISHED, REP_SENT -> {
                // cm.c cm_dreq_handler: -> DREQ_RCVD and the application is told (DISCONNECTED); the DREP goes when
                // it calls rdma_disconnect or destroys the id. The kernel waits for that as long as it takes (the
                // peer's DREQ times out meanwhile); this agent answers by itself after the peer's DREQ timeout, so
                // the peer's first resend gets it and no id waits on an application that never disconnects.
                a.cancelTimer(id);
                a.byLocalQpn.remove(id.qp == null ? -1 : id.qp.qpNum(), id);
                CmAgent.toError(id.qp); // the peer's QP is in ERR already (rdma_disconnect moves it before the DREQ)
                id.dreqTid = tid;
                id.state = CmId.State.DREQ_RCVD;
                id.disconnectedReported = true;
                a.post(id, CmEventType.DISCONNECTED, 0, null);
                id.timer = a.exec.schedule(() -> {
                    id.timer = null;
                    if (id.state == CmId.State.DREQ_RCVD) answerDreq(id);
                }, Math.max(1, peerDreqTimeoutMillis(id)), TimeUnit.MILLISECONDS);
            }
            case DREQ_SENT -> { // the DREQs crossed: ours is answered by the peer, the peer's at once
                a.cancelTimer(id);
                id.dreqTid = tid;
                sendDrep(id, tid);
                enterTimewait(id);
            }
            case DREQ_RCVD -> a.duplicates++; // cm.c: a resent DREQ while the application decides is dropped
            case TIMEWAIT -> {
                // cm.c cm_dreq_handler: in timewait every DREQ gets a DREP (also when we sent the DREQ first and the
                // peer's crossed it, so no DREP of ours was ever made)
                a.duplicates++;
                sendDrep(id, tid);
            }
            default -> a.duplicates++;
        }
    }

    void onDrep(ByteBuf b) {
        CmDrep drep = new CmDrep().wrap(b, 0);
        CmId id = a.byLocalId.get(drep.remoteCommId());
        if (id == null || id.remoteCommId != drep.localCommId()) {
            a.unmatched++;
            return;
        }
        if (id.state != CmId.State.DREQ_SENT) {
            a.duplicates++;
            return;
        }
        a.cancelTimer(id);
        id.lastReply = null;
        enterTimewait(id);
    }

    void sendDreq(CmId id) {
        byte[] mad = new byte[MadHeader.MAD_SIZE];
        id.dreqTid = a.hiTid << 32 | (id.localCommId & 0xFFFFFFFFL);
        new CmDreq().wrap(Unpooled.wrappedBuffer(mad), 0).init(id.dreqTid).localCommId(id.localCommId)
                .remoteCommId(id.remoteCommId).remoteQpn(id.remoteQpn);
        a.cancelTimer(id);
        id.lastReply = null;
        id.state = CmId.State.DREQ_SENT;
        // cm.c ib_send_cm_dreq: the connection's own timeout and retries
        a.sendWithRetry(id, mad, id.retryMillis, id.maxRetries);
    }

    /** DREQ_RCVD -> TIMEWAIT: the DREP for the DREQ received (cm.c ib_send_cm_drep). */
    void answerDreq(CmId id) {
        a.cancelTimer(id);
        sendDrep(id, id.dreqTid);
        enterTimewait(id);
    }

    /**
     * How long the peer waits for a DREP before resending its DREQ (cm.c ib_send_cm_dreq: the connection's
     * timeout_ms): its CM response timeout as our REQ told it (we are active), or as its REQ told us (passive).
     */
    long peerDreqTimeoutMillis(CmId id) {
        if (id.req == null) return CmAgent.convertMillis(a.cfg.cmResponseTimeout);
        CmReq req = new CmReq().wrap(Unpooled.wrappedBuffer(id.req), 0);
        return id.listener != null ? 2 * CmAgent.convertMillis(a.cfg.packetLifeTime) + CmAgent.convertMillis(req.remoteCmResponseTimeout())
                : CmAgent.convertMillis(req.localCmResponseTimeout());
    }

    void sendDrep(CmId id, long tid) {
        byte[] drep = new byte[MadHeader.MAD_SIZE];
        new CmDrep().wrap(Unpooled.wrappedBuffer(drep), 0).init(tid).localCommId(id.localCommId)
                .remoteCommId(id.remoteCommId);
        a.send(id.peer, drep);
    }

    void enterTimewait(CmId id) {
        id.state = CmId.State.TIMEWAIT;
        a.disconnected++;
        if (!id.disconnectedReported) {
            id.disconnectedReported = true;
            a.post(id, CmEventType.DISCONNECTED, 0, null);
        }
        // cm.c cm_enter_timewait: the ids stay known (a late DREQ gets its DREP, a duplicate REQ REJ 10) for the
        // local ACK timeout
        a.exec.schedule(() -> {
            if (id.state != CmId.State.TIMEWAIT) return;
            a.unregister(id);
            if (id.closedByApp) {
                id.state = CmId.State.CLOSED;
                a.ids.remove(id);
            } else {
                id.state = CmId.State.DONE;
                a.post(id, CmEventType.TIMEWAIT_EXIT, 0, null);
            }
            a.timewaitEnded();
        }, Math.max(1, CmAgent.convertMillis(id.ackTimeout)), TimeUnit.MILLISECONDS);
    }
}
