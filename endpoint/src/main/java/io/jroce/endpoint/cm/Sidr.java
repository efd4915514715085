package io.jroce.endpoint.cm;

import io.jroce.wire.mad.CmaHeader;
import io.jroce.wire.mad.MadHeader;
import io.jroce.wire.mad.SidrRep;
import io.jroce.wire.mad.SidrReq;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.net.InetAddress;

/**
 * Service ID Resolution (IBTA 12.11; cm.c cm_sidr_req_handler, cm_sidr_rep_handler) for a {@link CmAgent}: the
 * UD side of the CM, as rdma_cm uses it for its UDP port space. Runs on the agent's thread, like the agent.
 */
final class Sidr {
    private final CmAgent agent;

    Sidr(CmAgent agent) {
        this.agent = agent;
    }

    void onSidrReq(InetAddress from, ByteBuf b) {
        SidrReq req = new SidrReq().wrap(b, 0);
        long tid = req.header().transactionId();
        long sid = req.serviceId();
        int ps = CmaHeader.portSpace(sid);
        if (ps == CmaHeader.PS_TCP && agent.tcpListener(CmaHeader.port(sid)) != null) {
            // ib_cm finds the listener by service ID, rdma_cm refuses a UD request on an RC listener
            // (cma_ib_check_req_qp_type) and cm_destroy_id rejects it: status 2, QPN 0, Q_Key 0
            sendRep(from, tid, req.requestId(), sid, SidrRep.REJECT, 0, 0, null);
            return;
        }
        // cm.c cm_sidr_req_handler: no listener for the service ID
        sendRep(from, tid, req.requestId(), sid, SidrRep.UNSUPPORTED, 0, 0, null);
    }

    void onSidrRep(ByteBuf b) {
        agent.unmatchedSidrRep();
    }

    private void sendRep(InetAddress to, long tid, int requestId, long serviceId, int status, int qpn, int qkey,
                         byte[] privateData) {
        byte[] mad = new byte[MadHeader.MAD_SIZE];
        SidrRep rep = new SidrRep().wrap(Unpooled.wrappedBuffer(mad), 0).init(tid).requestId(requestId).status(status)
                .qpn(qpn).serviceId(serviceId).qkey(qkey);
        if (privateData != null) rep.privateData(privateData, privateData.length);
        agent.send(to, mad);
    }
}
