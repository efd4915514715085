package io.jroce.cli.conform;

import io.jroce.endpoint.Gid;
import io.jroce.wire.mad.CmAttribute;
import io.jroce.wire.mad.CmRep;
import io.jroce.wire.mad.CmaHeader;
import io.jroce.wire.mad.MadHeader;
import io.netty.buffer.Unpooled;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

import static io.jroce.cli.conform.Kit.c;
import static io.jroce.cli.conform.Kit.release;

/**
 * The connection manager and the MAD layer on the peer's QP 1 (IBTA 12 and 13), when the QP came through the CM
 * ({@link CmConnection}): how the REP answers the REQ, a lost RTU, a duplicate REQ, REQs the listener must refuse
 * before its application sees them, Gets no agent takes, a SIDR_REQ for a TCP port, and the DREQs at the end. Every
 * REQ of a case has a fresh comm ID and a QPN of its own (a REQ from the QPN of a live connection is stale, cm.c
 * cm_match_req, and would end it), and none is one the listener accepts, so no case reaches the peer's application
 * or touches the QP the other cases use; the run checks after each that the QP still answers.
 */
final class CmCases {
    private CmCases() {
    }

    private static final String CM_C = "drivers/infiniband/core/cm.c ";
    private static final String CMA_C = "drivers/infiniband/core/cma.c ";
    private static final String MAD_C = "drivers/infiniband/core/mad.c ";
    static final String NO_CM = "the QP did not come through the connection manager (--via rping or perftest-*-cm)";

    /** The cases that leave the connection up: they run with the other groups. */
    static List<Case> all() {
        List<Case> cs = new ArrayList<>();
        cs.add(c("cm.rep.resources", Case.CM, "REQ asking responder resources and initiator depth 255: what the REP grants",
                "IBTA 12.6.8 REP (Responder Resources at most the REQ's Initiator Depth, Initiator Depth at most its Responder Resources)",
                CM_C + "ib_send_cm_rep; librdmacm rdma_accept (each mirrored, clamped to the device's max_qp_rd_atom: rxe 128/128)",
                List.of("REP; resources=within"), p -> {
                    CmConnection k = p.target.cm();
                    if (k == null) return Case.Outcome.cannotTell(NO_CM);
                    CmRep rep = new CmRep().wrap(Unpooled.wrappedBuffer(k.rep), 0);
                    boolean within = rep.responderResources() <= k.req.initiatorDepth() && rep.initiatorDepth() <= k.req.responderResources();
                    return Case.Outcome.of("REP; resources=" + (within ? "within" : "exceeds"));
                }));
        cs.add(c("cm.rtu.lost", Case.CM, "no RTU after the REP for 2 s (the REQ's Local CM Response Timeout: 128 ms)",
                "IBTA 12.7 CM timeouts (the passive side resends the REP until the RTU comes, Max CM Retries times)",
                CM_C + "ib_send_cm_rep (msg->timeout_ms from the REQ), cm_process_send_error", List.of("REP"), p -> {
                    CmConnection k = p.target.cm();
                    if (k == null) return Case.Outcome.cannotTell(NO_CM);
                    if (k.rtuLost == null) return Case.Outcome.cannotTell("the RTU is held back on the first connection only");
                    return Case.Outcome.of(k.rtuLost.split(" ")[0]);
                }));
        cs.add(c("cm.req.duplicate", Case.CM, "the connection's REQ again (same comm ID and transaction ID) once it is established",
                "IBTA 12.9 (a duplicate REQ: the REP may be resent; it does not open a second connection)",
                CM_C + "cm_req_handler, cm_dup_req_handler (established: discarded)", List.of("none", "REP"), p -> {
                    CmConnection k = p.target.cm();
                    if (k == null) return Case.Outcome.cannotTell(NO_CM);
                    k.gsi.send(k.reqMad);
                    return Case.Outcome.of(CmMads.words(k.gsi.collect(p.timeoutNanos(), 0, Gsi.tid(k.req.tid())), k.reqMad));
                }));
        cs.add(c("cm.req.no-listener", Case.CM, "REQ for port 0 of rdma_cm's TCP port space, where nothing can listen",
                "IBTA 12.6.7 REJ, Table 109 reason 8 (invalid Service ID)", CM_C + "cm_req_handler (cm_match_req finds no listener)",
                List.of("REJ-8"), p -> req(p, 1, r -> with(r, CmaHeader.serviceId(CmaHeader.PS_TCP, 0), r.peerGid(), r.dst()), null)));
        cs.add(c("cm.req.foreign-gid", Case.CM, "REQ whose primary path names, as the peer's GID, one the peer does not have",
                "IBTA 12.6.7 REJ, Table 109 reason 12 (invalid GID; the ARI holds a GID of the port)",
                CM_C + "cm_req_handler (cm_init_av_by_path fails: IB_CM_REJ_INVALID_GID with the port's GID at index 0)",
                List.of("REJ-12; ari=16"), p -> req(p, 2, r -> with(r, r.serviceId(), Gid.of(foreign(r.dst())), r.dst()), null)));
        cs.add(c("cm.req.foreign-address", Case.CM, "REQ whose rdma_cm header names a destination address the listener is not bound to",
                "IBTA Annex A11 (RDMA IP CM Service: the REQ's private data names the destination IP address)",
                CMA_C + "cma_ib_req_handler (cma_ib_id_from_event finds no listener for it; cm.c cm_destroy_id: REJ 28)",
                List.of("REJ-28"), p -> req(p, 3, r -> with(r, r.serviceId(), r.peerGid(), foreign(r.dst())), null)));
        cs.add(c("cm.req.bad-cma-version", Case.CM, "REQ whose rdma_cm header has version 1 (rdma_cm knows 0)",
                "IBTA Annex A11 (the IP CM header's version; a listener refuses one it does not know)",
                CMA_C + "cma_save_ip_info / cma_ib_req_handler (cma_version != CMA_VERSION; cm.c cm_destroy_id: REJ 28)",
                List.of("REJ-28"), p -> req(p, 4, r -> r, mad -> mad[CmAttribute.REQ.privateDataOffset()] = 1)));
        cs.add(c("cm.mad.classportinfo", Case.CM, "a Get of the CM class's ClassPortInfo",
                "IBTA 13.4.7 MAD status, 13.4.8.1 ClassPortInfo (a GetResp: the attribute, or status 0x000C when unsupported)",
                MAD_C + "ib_mad_recv_done (no agent takes a CM Get: generate_unmatched_resp)",
                List.of("GETRESP-0x000c; echo=ok", "GETRESP-0x0000; echo=ok"),
                p -> get(p, MadHeader.MGMT_CLASS_CM, MadHeader.CM_CLASS_VERSION, MadHeader.METHOD_GET, MadHeader.ATTR_CLASS_PORT_INFO, 1)));
        cs.add(c("cm.mad.unassigned-class", Case.CM, "a Get to management class 0x30, which no agent has",
                "IBTA 13.4.7 MAD status (unsupported class or method/attribute: a GetResp echoing class, version and attribute)",
                MAD_C + "ib_mad_recv_done (generate_unmatched_resp: IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB)",
                List.of("GETRESP-0x000c; echo=ok", "GETRESP-0x0004; echo=ok"), p -> get(p, 0x30, 1, MadHeader.METHOD_GET, 0x1234, 1)));
        cs.add(c("cm.mad.unknown-attribute", Case.CM, "a CM Send of attribute 0x007F, which no CM message has",
                "IBTA 13.4.6 (a Send is not answered); 12.6 (CM attributes)", CM_C + "cm_recv_handler (unknown attribute: dropped)",
                List.of("none"), p -> get(p, MadHeader.MGMT_CLASS_CM, MadHeader.CM_CLASS_VERSION, MadHeader.METHOD_SEND, 0x007F, 0)));
        cs.add(c("cm.sidr.tcp-listener", Case.CM, "SIDR_REQ for the service ID of the TCP-port-space listener",
                "IBTA 12.11 SIDR (SIDR_REP status 2: rejected, no QPN)",
                CM_C + "cm_sidr_req_handler; " + CMA_C + "cma_ib_req_handler (an RC listener refuses a UD request: IB_SIDR_REJECT)",
                List.of("SIDR_REP-2; qpn=0"), p -> {
                    CmConnection k = p.target.cm();
                    if (k == null) return Case.Outcome.cannotTell(NO_CM);
                    long tid = k.nextTid();
                    byte[] mad = CmMads.sidrReq(tid, CmConnection.newCommId(), k.req.serviceId(), k.req.sourcePort() + 1, k.req.src(), k.req.dst());
                    k.gsi.send(mad);
                    return Case.Outcome.of(CmMads.words(k.gsi.collect(p.timeoutNanos(), 1, Gsi.tid(tid)), mad));
                }));
        cs.add(c("cm.dreq.unknown", Case.CM, "DREQ naming comm IDs of no connection",
                "IBTA 12.9 (a DREQ for a connection the CM does not know is answered with DREP, so the sender need not time out)",
                CM_C + "cm_dreq_handler (no cm_id: cm_issue_drep)", List.of("DREP"), p -> {
                    CmConnection k = p.target.cm();
                    if (k == null) return Case.Outcome.cannotTell(NO_CM);
                    long tid = k.nextTid();
                    int remote = CmConnection.newCommId();
                    if (remote == k.remoteCommId) remote = ~remote;
                    byte[] mad = CmMads.dreq(tid, CmConnection.newCommId(), remote, k.peerQpn ^ 0x400000);
                    k.gsi.send(mad);
                    return Case.Outcome.of(CmMads.words(k.gsi.collect(p.timeoutNanos(), 1, Gsi.tid(tid)), mad));
                }));
        return cs;
    }

    /** The DREQ cases: they end the connection, so they run after every other case. */
    static List<Case> releases() {
        List<Case> cs = new ArrayList<>();
        cs.add(release("cm.dreq", Case.CM, "DREQ for the connection (resent each second while unanswered, three at most)",
                "IBTA 12.6.10 DREQ, 12.6.11 DREP (the connection is released and the DREQ answered)",
                CM_C + "cm_dreq_handler (DREP when rdma_cm's user disconnects, cma.c rdma_disconnect)", List.of("DREP"), p -> {
                    CmConnection k = p.target.cm();
                    if (k == null) return Case.Outcome.cannotTell(NO_CM);
                    if (k.released) return Case.Outcome.cannotTell("the connection was released already");
                    return Case.Outcome.of(k.release(p.timeoutNanos()).split(" ")[0]);
                }));
        cs.add(release("cm.dreq.timewait", Case.CM, "the same DREQ again, in timewait", "IBTA 12.9 (timewait: a repeated DREQ gets a DREP again)",
                CM_C + "cm_dreq_handler (IB_CM_TIMEWAIT: the DREP is sent again)", List.of("DREP"), p -> {
                    CmConnection k = p.target.cm();
                    if (k == null) return Case.Outcome.cannotTell(NO_CM);
                    if (k.dreq == null) return Case.Outcome.cannotTell("no DREQ was sent (cm.dreq did not run)");
                    k.gsi.send(k.dreq);
                    long tid = Unpooled.wrappedBuffer(k.dreq).getLong(8);
                    return Case.Outcome.of(CmMads.words(k.gsi.collect(p.timeoutNanos(), 1, Gsi.tid(tid)), k.dreq));
                }));
        return cs;
    }

    /** An address of the documentation ranges (RFC 5737, RFC 3849) in the family of {@code like}: no peer has it. */
    static InetAddress foreign(InetAddress like) {
        try {
            return InetAddress.getByAddress(like instanceof Inet4Address ? new byte[] {(byte) 192, 0, 2, 77}
                    : new byte[] {0x20, 0x01, 0x0d, (byte) 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 77});
        } catch (java.net.UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    private static CmMads.Req with(CmMads.Req r, long serviceId, Gid peerGid, InetAddress dst) {
        return new CmMads.Req(r.tid(), r.commId(), r.caGuid(), serviceId, r.qpn(), r.psn(), r.mtuEnum(), r.responderResources(),
                r.initiatorDepth(), r.ourGid(), peerGid, r.sourcePort(), r.src(), dst);
    }

    /**
     * A fresh REQ (new transaction ID, comm ID, and QPN {@code n} past ours, source port likewise) changed by
     * {@code change} and, byte by byte, by {@code spoil}; the answers with its transaction ID, until the first.
     */
    private static Case.Outcome req(Probe p, int n, UnaryOperator<CmMads.Req> change, java.util.function.Consumer<byte[]> spoil)
            throws IOException {
        CmConnection k = p.target.cm();
        if (k == null) return Case.Outcome.cannotTell(NO_CM);
        CmMads.Req base = k.req;
        CmMads.Req fresh = new CmMads.Req(k.nextTid(), CmConnection.newCommId(), base.caGuid(), base.serviceId(),
                (base.qpn() + 0x100 * n) & 0xFFFFFF, base.psn(), base.mtuEnum(), base.responderResources(), base.initiatorDepth(),
                base.ourGid(), base.peerGid(), base.sourcePort() + n, base.src(), base.dst());
        CmMads.Req r = change.apply(fresh);
        byte[] mad = CmMads.req(r);
        if (spoil != null) spoil.accept(mad);
        k.gsi.send(mad);
        return Case.Outcome.of(CmMads.words(k.gsi.collect(p.timeoutNanos(), 1, Gsi.tid(r.tid())), mad));
    }

    /** A MAD of any class and method to QP 1; {@code want} answers (0: silence is right, the whole timeout is waited). */
    private static Case.Outcome get(Probe p, int mgmtClass, int version, int method, int attribute, int want) throws IOException {
        CmConnection k = p.target.cm();
        if (k == null) return Case.Outcome.cannotTell(NO_CM);
        long tid = k.nextTid();
        byte[] mad = CmMads.get(tid, mgmtClass, version, method, attribute);
        k.gsi.send(mad);
        return Case.Outcome.of(CmMads.words(k.gsi.collect(p.timeoutNanos(), want, Gsi.tid(tid)), mad));
    }
}
