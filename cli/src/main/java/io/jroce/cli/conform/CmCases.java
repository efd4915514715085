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
    /** The cases that need no connection of ours, only the peer's QP 1: they run whichever way the QP came. */
    static final java.util.Set<String> CONNECTIONLESS = java.util.Set.of("cm.req.no-listener", "cm.mad.classportinfo",
            "cm.mad.unassigned-class", "cm.mad.unknown-attribute", "cm.dreq.unknown");
    /** The cases that need the peer's listener: asked while it listens ({@link #askListener}). */
    static final String FOREIGN_GID = "cm.req.foreign-gid";
    static final String FOREIGN_ADDRESS = "cm.req.foreign-address";
    static final String BAD_CMA_VERSION = "cm.req.bad-cma-version";
    static final String SIDR_TCP = "cm.sidr.tcp-listener";
    static final List<String> LISTENER_CASES = List.of(FOREIGN_GID, FOREIGN_ADDRESS, BAD_CMA_VERSION, SIDR_TCP);
    /** REJ 8: no listener for the service ID. */
    private static final String NO_LISTENER = "REJ-8";

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
        cs.add(c("cm.rep.resources-zero", Case.CM, "REQ asking responder resources and initiator depth 0: what the REP grants",
                "IBTA 12.6.8 REP (at most the REQ's values: 0 and 0)",
                CM_C + "ib_send_cm_rep; librdmacm rdma_accept (the REQ's values mirrored: rxe 0/0)", List.of("REP; resources=0/0"), p -> {
                    CmConnection k = p.target.cm();
                    if (k == null) return Case.Outcome.cannotTell(NO_CM);
                    if (k.exchange == null) {
                        return Case.Outcome.cannotTell("asked on perftest -R's exchange connection; the peer serves one connection only, and "
                                + "a second REQ would reach its application");
                    }
                    CmRep rep = new CmRep().wrap(Unpooled.wrappedBuffer(k.exchange.rep), 0);
                    return Case.Outcome.of("REP; resources=" + rep.responderResources() + "/" + rep.initiatorDepth());
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
                List.of("REJ-8"), p -> {
                    CmMads.Req base = base(p);
                    long tid = newTid();
                    byte[] mad = CmMads.req(fresh(base, tid, 1, CmaHeader.serviceId(CmaHeader.PS_TCP, 0), base.peerGid(), base.dst()));
                    return answer(p, mad, tid, 1);
                }));
        cs.add(listener(FOREIGN_GID, "REQ whose primary path names, as the peer's GID, one the peer does not have",
                "IBTA 12.6.7 REJ, Table 109 reason 12 (invalid GID; the ARI holds a GID of the port)",
                CM_C + "cm_req_handler (cm_init_av_by_path fails: IB_CM_REJ_INVALID_GID with the port's GID at index 0)",
                "REJ-12; ari=16"));
        cs.add(listener(FOREIGN_ADDRESS, "REQ whose rdma_cm header names a destination address the listener is not bound to",
                "IBTA Annex A11 (RDMA IP CM Service: the REQ's private data names the destination IP address)",
                CMA_C + "cma_ib_req_handler (cma_ib_id_from_event finds no listener for it; cm.c cm_destroy_id: REJ 28)",
                "REJ-28"));
        cs.add(listener(BAD_CMA_VERSION, "REQ whose rdma_cm header has version 1 (rdma_cm knows 0)",
                "IBTA Annex A11 (the IP CM header's version; a listener refuses one it does not know)",
                CMA_C + "cma_save_ip_info / cma_ib_req_handler (cma_version != CMA_VERSION; cm.c cm_destroy_id: REJ 28)",
                "REJ-28"));
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
        cs.add(listener(SIDR_TCP, "SIDR_REQ for the service ID of the TCP-port-space listener",
                "IBTA 12.11 SIDR (SIDR_REP status 2: rejected, no QPN)",
                CM_C + "cm_sidr_req_handler; " + CMA_C + "cma_ib_req_handler (an RC listener refuses a UD request: IB_SIDR_REJECT)",
                "SIDR_REP-2; qpn=0"));
        cs.add(c("cm.dreq.unknown", Case.CM, "DREQ naming comm IDs of no connection",
                "IBTA 12.9 (a DREQ for a connection the CM does not know is answered with DREP, so the sender need not time out)",
                CM_C + "cm_dreq_handler (no cm_id: cm_issue_drep)", List.of("DREP"), p -> {
                    CmConnection k = p.target.cm();
                    long tid = newTid();
                    int remote = CmConnection.newCommId();
                    if (k != null && remote == k.remoteCommId) remote = ~remote;
                    byte[] mad = CmMads.dreq(tid, CmConnection.newCommId(), remote, p.target.qpn() ^ 0x400000);
                    return answer(p, mad, tid, 1);
                }));
        return cs;
    }

    /** The DREQ cases: they end the connection, so they run after every other case. */
    static List<Case> releases() {
        List<Case> cs = new ArrayList<>();
        cs.add(release("cm.dreq", Case.CM, "DREQ for the connection (resent every 2 s while unanswered, five at most)",
                "IBTA 12.6.10 DREQ, 12.6.11 DREP (the connection is released and the DREQ answered)",
                CM_C + "cm_dreq_handler (DREP when rdma_cm's user disconnects, cma.c rdma_disconnect)", List.of("DREP"), p -> {
                    CmConnection k = p.target.cm();
                    if (k == null) return Case.Outcome.cannotTell(NO_CM);
                    if (k.released) return Case.Outcome.cannotTell("the connection was released already");
                    String a = k.release(p.timeoutNanos()).split(" ")[0];
                    if (a.equals("none")) {
                        return Case.Outcome.cannotTell("no DREP to " + CmConnection.DREQ_SENDS + " DREQs " + CmConnection.DREQ_RESEND_SECONDS
                                + " s apart: the peer's CM may wait for its application to disconnect (cm.c answers from rdma_disconnect)");
                    }
                    return Case.Outcome.of(a);
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

    /** A case that needs the peer's listener ({@link #LISTENER_CASES}): one REQ or SIDR_REQ, one expected answer. */
    private static Case listener(String id, String title, String section, String rxe, String expected) {
        return c(id, Case.CM, title, section, rxe, List.of(expected), p -> listenerCase(p, id));
    }

    /**
     * A case that needs the listener: its answer asked when the connection was made (perftest's server stops listening
     * once its connections are up), else asked now. REJ 8 means nothing listens: the listener's checks cannot be seen.
     */
    private static Case.Outcome listenerCase(Probe p, String id) throws IOException {
        CmConnection k = p.target.cm();
        if (k == null) return Case.Outcome.cannotTell(NO_CM);
        String a = k.listenerAnswers != null ? k.listenerAnswers.get(id) : askListener(id, k.gsi, k.req, p.timeoutNanos());
        if (a == null) return Case.Outcome.cannotTell("not asked while the peer listened");
        if (a.startsWith(NO_LISTENER)) {
            return Case.Outcome.cannotTell("REJ 8: nothing listens on port " + k.cmPort + " now, so the listener's own checks cannot be seen");
        }
        return Case.Outcome.of(a);
    }

    /**
     * Asks each of {@link #LISTENER_CASES} while the peer listens (before the connection whose REQ is {@code base}),
     * each again while the answer is REJ 8 (the listener is not up yet), within {@code deadlineNanos} (System.nanoTime).
     */
    static java.util.Map<String, String> askListenerFirst(Gsi gsi, CmMads.Req base, long nanos, long deadlineNanos) throws IOException {
        java.util.Map<String, String> out = new java.util.LinkedHashMap<>();
        for (String id : LISTENER_CASES) {
            String a = askListener(id, gsi, base, nanos);
            while (a.startsWith(NO_LISTENER) && System.nanoTime() + CmConnection.NOT_LISTENING_NANOS < deadlineNanos) {
                CmConnection.sleepNanos(CmConnection.NOT_LISTENING_NANOS);
                a = askListener(id, gsi, base, nanos);
            }
            out.put(id, a);
        }
        return out;
    }

    /** One of {@link #LISTENER_CASES}: the MAD it sends (a fresh REQ from {@code base}, or a SIDR_REQ), the answer. */
    static String askListener(String id, Gsi gsi, CmMads.Req base, long nanos) throws IOException {
        long tid = java.util.concurrent.ThreadLocalRandom.current().nextLong() & 0x7FFFFFFFFFFFFFFFL;
        byte[] mad = switch (id) {
            case FOREIGN_GID -> CmMads.req(fresh(base, tid, 2, base.serviceId(), Gid.of(foreign(base.dst())), base.dst()));
            case FOREIGN_ADDRESS -> CmMads.req(fresh(base, tid, 3, base.serviceId(), base.peerGid(), foreign(base.dst())));
            case BAD_CMA_VERSION -> {
                byte[] m = CmMads.req(fresh(base, tid, 4, base.serviceId(), base.peerGid(), base.dst()));
                m[CmAttribute.REQ.privateDataOffset()] = 1; // the rdma_cm header's version
                yield m;
            }
            case SIDR_TCP -> CmMads.sidrReq(tid, CmConnection.newCommId(), base.serviceId(), base.sourcePort() + 5, base.src(), base.dst());
            default -> throw new IllegalArgumentException(id);
        };
        gsi.send(mad);
        return CmMads.words(gsi.collect(nanos, 1, Gsi.tid(tid)), mad);
    }

    /**
     * A REQ like {@code base} with a transaction ID, comm ID, QPN ({@code n} * 256 past base's) and source port of
     * its own, for {@code serviceId}, naming {@code peerGid} in its path and {@code dst} in its rdma_cm header.
     */
    private static CmMads.Req fresh(CmMads.Req base, long tid, int n, long serviceId, Gid peerGid, InetAddress dst) {
        return new CmMads.Req(tid, CmConnection.newCommId(), base.caGuid(), serviceId, (base.qpn() + 0x100 * n) & 0xFFFFFF, base.psn(),
                base.mtuEnum(), base.responderResources(), base.initiatorDepth(), base.ourGid(), peerGid, base.sourcePort() + n, base.src(), dst);
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

    /** A MAD of any class and method to QP 1; {@code want} answers (0: silence is right, the whole timeout is waited). */
    private static Case.Outcome get(Probe p, int mgmtClass, int version, int method, int attribute, int want) throws IOException {
        long tid = newTid();
        return answer(p, CmMads.get(tid, mgmtClass, version, method, attribute), tid, want);
    }

    /**
     * Sends {@code mad} to the peer's QP 1 and reads the answers with its transaction ID ({@code want}: how many end the
     * wait; 0 waits the whole timeout). Where the QP did not come through the CM, silence from a QP 1 that has answered
     * nothing at all tells nothing: no CM may run there (a jroce node starts its own with its first CM command).
     */
    private static Case.Outcome answer(Probe p, byte[] mad, long tid, int want) throws IOException {
        Gsi gsi = p.gsi();
        gsi.send(mad);
        String a = CmMads.words(gsi.collect(p.timeoutNanos(), want, Gsi.tid(tid)), mad);
        if (a.equals("none") && p.target.cm() == null && !gsi.answered) {
            return Case.Outcome.cannotTell("QP 1 at " + io.jroce.wire.IpText.of(gsi.peer().getAddress()) + " has answered nothing: no connection "
                    + "manager may run there");
        }
        return Case.Outcome.of(a);
    }

    /** Whether the peer's QP 1 answers a Get of the CM class's ClassPortInfo (any answer with its transaction ID). */
    static boolean qp1Answers(Probe p) throws IOException {
        long tid = newTid();
        Gsi gsi = p.gsi();
        gsi.send(CmMads.get(tid, MadHeader.MGMT_CLASS_CM, MadHeader.CM_CLASS_VERSION, MadHeader.METHOD_GET, MadHeader.ATTR_CLASS_PORT_INFO));
        return !gsi.collect(p.timeoutNanos(), 1, Gsi.tid(tid)).isEmpty();
    }

    /** A transaction ID for one MAD (the top bit clear, as the Linux MAD layer's own). */
    private static long newTid() {
        return java.util.concurrent.ThreadLocalRandom.current().nextLong() & 0x7FFFFFFFFFFFFFFFL;
    }

    /** The connection's REQ, or, without one, a REQ from our QP to the peer's as rdma_cm would write it for port 0. */
    private static CmMads.Req base(Probe p) {
        CmConnection k = p.target.cm();
        if (k != null) return k.req;
        InetAddress ours = p.localAddress().getAddress();
        InetAddress theirs = p.target.roce().getAddress();
        return new CmMads.Req(newTid(), CmConnection.newCommId(), java.util.concurrent.ThreadLocalRandom.current().nextLong(),
                CmaHeader.serviceId(CmaHeader.PS_TCP, 0), p.local.qpn(), p.local.psn(), io.jroce.endpoint.Mtu.ofBytes(p.mtu()).ibvEnum(),
                0, 0, p.local.gid(), Gid.of(theirs), 40000, ours, theirs);
    }
}
