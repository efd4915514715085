package io.jroce.cli.conform;

import io.jroce.wire.Opcode;
import io.jroce.wire.Psn;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import static io.jroce.cli.conform.Kit.c;
import static io.jroce.cli.conform.Kit.needs;
import static io.jroce.cli.conform.Kit.rkey;
import static io.jroce.cli.conform.Kit.slot;

/**
 * Duplicate requests (a PSN before the expected one: IBTA 9.7.5.1, the responder re-acknowledges a SEND or WRITE
 * without executing it again, C9-105; replays a READ from memory; replays an atomic's saved answer without
 * executing it again) and PSN sequence errors (a PSN after the expected one: one NAK naming the expected PSN, the
 * QP stays usable), ending with the RNR case, after which the peer has no receive left.
 */
final class DuplicateCases {
    private DuplicateCases() {
    }

    private static final String RESP = "rxe_resp.c ";
    /** Half of the half window: far ahead or far behind, yet on the same side (rxe.h psn_compare). */
    private static final int FAR = 1 << 22;

    static List<Case> all() {
        List<Case> cs = new ArrayList<>();
        cs.add(c("dup.write", Case.RC, "the last RDMA WRITE again, same PSN", "IBTA 9.7.5.1 duplicate request (C9-105: ACK again, do not execute)",
                RESP + "check_psn, duplicate_request", List.of("ACK+0"), p -> {
                    Case.Outcome no = needs(p, Target.Access.WRITE);
                    if (no != null) return no;
                    int psn = p.take(1);
                    Packet w = p.writeOnly(psn, slot(p, 7), rkey(p), Probe.pattern(20, 24));
                    if (!acked(p.exchange(1, w), psn)) return Case.Outcome.cannotTell("the original RDMA WRITE was not acknowledged");
                    return Case.Outcome.of(Reply.normalised(p.exchange(1, w), psn));
                }));
        cs.add(c("dup.write.older", Case.RC, "an RDMA WRITE two messages back again", "IBTA 9.7.5.1 (C9-105; the ACK may name the latest PSN)",
                RESP + "duplicate_request (ACK of ack_psn - 1)", List.of("ACK+0", "ACK+1"), p -> {
                    Case.Outcome no = needs(p, Target.Access.WRITE);
                    if (no != null) return no;
                    int psn = p.take(2);
                    Packet w = p.writeOnly(psn, slot(p, 8), rkey(p), Probe.pattern(21, 24));
                    p.send(w, p.writeOnly(Psn.add(psn, 1), slot(p, 8) + 32, rkey(p), Probe.pattern(22, 24)));
                    List<Reply> acks = p.collect(2);
                    // one ACK may cover both (IBTA 9.7.5.2: an ACK acknowledges every PSN up to its own)
                    if (acks.stream().noneMatch(a -> a.kind().equals("ACK") && a.psn() == Psn.add(psn, 1))) {
                        return Case.Outcome.cannotTell("the two original RDMA WRITEs were not acknowledged: " + Reply.normalised(acks, psn));
                    }
                    return Case.Outcome.of(Reply.normalised(p.exchange(1, w), psn));
                }));
        cs.add(c("dup.send", Case.RC, "the last SEND again, same PSN", "IBTA 9.7.5.1 (C9-105)", RESP + "duplicate_request", List.of("ACK+0"), p -> {
            Case.Outcome ns = Kit.needsSends(p);
            if (ns != null) return ns;
            int psn = p.take(1);
            Packet s = p.sendOnly(psn, Probe.pattern(23, 16));
            if (!acked(p.exchange(1, s), psn)) return Case.Outcome.cannotTell("the original SEND was not acknowledged (no receive posted?)");
            return Case.Outcome.of(Reply.normalised(p.exchange(1, s), psn));
        }));
        cs.add(c("dup.read", Case.RC, "the last RDMA READ again, same PSN", "IBTA 9.7.5.1 duplicate READ (responded again from memory)",
                RESP + "duplicate_request, find_resource, read_reply", List.of("READ-ONLY+0; bytes=64"), p -> {
                    Case.Outcome no = needs(p, Target.Access.READ);
                    if (no != null) return no;
                    int psn = p.take(1);
                    Packet r = p.read(psn, slot(p, 0), rkey(p), 64);
                    if (p.exchange(1, r).size() != 1) return Case.Outcome.cannotTell("the original RDMA READ was not answered");
                    List<Reply> rs = p.exchange(1, r);
                    return Case.Outcome.of(Reply.normalised(rs, psn) + "; bytes=" + rs.stream().mapToInt(x -> x.data().length).sum());
                }));
        cs.add(c("dup.read.middle", Case.RC, "a 3-packet RDMA READ re-requested from its second PSN",
                "IBTA 9.7.5.1 (a duplicate READ may restart inside the original)", RESP + "duplicate_request (replay from cur_psn), read_reply",
                List.of("READ-MIDDLE+0 READ-LAST+1", "READ-FIRST+0 READ-LAST+1"), p -> {
                    Case.Outcome no = needs(p, Target.Access.READ);
                    if (no != null) return no;
                    int mtu = p.mtu();
                    int len = 2 * mtu + 100;
                    long va = Kit.bulk(p, len);
                    if (va < 0) return Case.Outcome.cannotTell("the region is too short for 2 PMTU + 100 bytes");
                    int psn = p.take(3);
                    if (p.exchange(3, p.read(psn, va, rkey(p), len)).size() != 3) return Case.Outcome.cannotTell("the original READ was not answered");
                    int dup = Psn.add(psn, 1);
                    return Case.Outcome.of(Reply.normalised(p.exchange(2, p.read(dup, va + mtu, rkey(p), len - mtu)), dup));
                }));
        cs.add(c("dup.atomic", Case.RC, "the last FETCH_ADD again, same PSN", "IBTA 9.7.5.1 duplicate atomic (saved answer, not executed again)",
                RESP + "duplicate_request, atomic_reply (res->replay)", List.of("ATOMIC-ACK+0; orig=same; added=once"), p -> {
                    Case.Outcome no = needs(p, Target.Access.ATOMIC);
                    if (no != null) return no;
                    long va = slot(p, 9);
                    Long before = Kit.atomicRead(p, va);
                    if (before == null) return Case.Outcome.cannotTell("FETCH_ADD 0 got no ATOMIC ACKNOWLEDGE");
                    int psn = p.take(1);
                    Packet f = p.fetchAdd(psn, va, rkey(p), 3);
                    if (p.exchange(1, f).size() != 1) return Case.Outcome.cannotTell("the original FETCH_ADD was not answered");
                    List<Reply> rs = p.exchange(1, f);
                    StringBuilder sb = new StringBuilder(Reply.normalised(rs, psn));
                    if (rs.size() == 1 && rs.get(0).kind().equals("ATOMIC-ACK")) {
                        sb.append("; orig=").append(rs.get(0).atomicOrig() == before ? "same" : String.format("0x%x", rs.get(0).atomicOrig()));
                    }
                    Long after = Kit.atomicRead(p, va);
                    sb.append("; added=").append(after == null ? "unreadable" : after == before + 3 ? "once" : after == before + 6 ? "twice"
                            : String.format("0x%x", after - before));
                    return Case.Outcome.of(sb.toString());
                }));
        cs.add(c("dup.read.no-resource", Case.RC, "an RDMA READ at the PSN of an earlier RDMA WRITE",
                "IBTA 9.7.5.1 (a duplicate READ without a responder resource is dropped)", RESP + "duplicate_request (resource not found: class D)",
                List.of("none"), p -> {
                    Case.Outcome no = needs(p, Target.Access.READ | Target.Access.WRITE);
                    if (no != null) return no;
                    int psn = p.take(1);
                    if (!acked(p.exchange(1, p.writeOnly(psn, slot(p, 10), rkey(p), Probe.pattern(24, 8))), psn)) {
                        return Case.Outcome.cannotTell("the RDMA WRITE was not acknowledged");
                    }
                    return Case.Outcome.of(Reply.normalised(p.exchange(0, p.read(psn, slot(p, 10), rkey(p), 8)), psn));
                }));
        cs.add(c("dup.far", Case.RC, "an RDMA WRITE 2^22 PSNs behind the expected PSN",
                "IBTA 9.7.5.1 (the half of the PSN space behind is duplicates: ACK again or drop)", RESP + "check_psn (psn_compare < 0)",
                List.of("ACK+" + (FAR - 1), "none"), p -> {
                    Case.Outcome no = needs(p, Target.Access.WRITE);
                    if (no != null) return no;
                    int psn = Psn.add(p.epsn(), -FAR);
                    return Case.Outcome.of(Reply.normalised(p.exchange(1, p.writeOnly(psn, slot(p, 11), rkey(p), Probe.pattern(25, 8))), psn));
                }));
        cs.add(c("psn.ahead", Case.RC, "an RDMA WRITE one PSN ahead of the expected PSN",
                "IBTA 9.7.5.1 PSN sequence error (NAK naming the expected PSN, class B)", RESP + "check_psn, RESPST_ERR_PSN_OUT_OF_SEQ",
                List.of("NAK-SEQ-1"), p -> ahead(p, 1, Opcode.RC_RDMA_WRITE_ONLY)));
        cs.add(c("psn.ahead.far", Case.RC, "an RDMA WRITE 2^22 PSNs ahead", "IBTA 9.7.5.1 PSN sequence error", RESP + "check_psn",
                List.of("NAK-SEQ-" + FAR), p -> ahead(p, FAR, Opcode.RC_RDMA_WRITE_ONLY)));
        cs.add(c("psn.ahead.read", Case.RC, "an RDMA READ one PSN ahead", "IBTA 9.7.5.1 PSN sequence error", RESP + "check_psn",
                List.of("NAK-SEQ-1"), p -> ahead(p, 1, Opcode.RC_RDMA_READ_REQUEST)));
        cs.add(c("psn.ahead.once", Case.RC, "two requests ahead of the expected PSN, one after the other",
                "IBTA 9.7.5.1 (one NAK per sequence error; later packets of the gap dropped or NAKed again)", RESP + "check_psn (sent_psn_nak)",
                List.of("NAK-SEQ-1 ; none", "NAK-SEQ-1 ; NAK-SEQ-1"), p -> {
                    Case.Outcome no = needs(p, Target.Access.WRITE);
                    if (no != null) return no;
                    int e = p.epsn();
                    int psn = Psn.add(e, 1);
                    String first = Reply.normalised(p.exchange(1, p.writeOnly(psn, slot(p, 12), rkey(p), Probe.pattern(26, 8))), psn);
                    int psn2 = Psn.add(e, 2);
                    p.sendMore(p.writeOnly(psn2, slot(p, 12), rkey(p), Probe.pattern(27, 8)));
                    return Case.Outcome.of(first + " ; " + Reply.normalised(p.collect(1), psn));
                }));
        cs.add(c("psn.resume", Case.RC, "after a sequence error NAK, the expected PSN is executed",
                "IBTA 9.7.5.1 (class B error: the QP goes on)", RESP + "check_psn (clears sent_psn_nak)", withMem(), p -> {
                    Case.Outcome no = needs(p, Target.Access.WRITE);
                    if (no != null) return no;
                    int e = p.epsn();
                    String nak = Reply.normalised(p.exchange(1, p.writeOnly(Psn.add(e, 1), slot(p, 13), rkey(p), Probe.pattern(28, 8))), e);
                    byte[] d = Probe.pattern(29, 16);
                    int psn = p.take(1);
                    String ack = Reply.normalised(p.exchange(1, p.writeOnly(psn, slot(p, 13), rkey(p), d)), psn);
                    return Case.Outcome.of(nak + " ; " + ack + Kit.memory(p, slot(p, 13), d, null));
                }));
        cs.add(c("rnr.no-receive", Case.RC, "SENDs until the peer has no receive WQE left (at most 1100)",
                "IBTA 9.7.5.2 RNR NAK (PSN of the SEND; the packet is dropped)", RESP + "check_resource, RESPST_ERR_RNR",
                List.of("RNR+0; then=RNR+0"), p -> {
                    Case.Outcome ns = Kit.needsSends(p);
                    if (ns != null) return ns;
                    for (int i = 0; i < 1100; i++) {
                        int psn = p.epsn();
                        List<Reply> rs = p.exchange(1, p.sendOnly(psn, Probe.pattern(30, 8)));
                        if (rs.isEmpty() && !p.resync()) {
                            // not this SEND's fault: the peer's QP is gone (an ibv_rc_pingpong server ends after its -n iterations)
                            return Case.Outcome.cannotTell("the peer stopped answering after " + i + " SENDs");
                        }
                        if (rs.size() != 1) return Case.Outcome.of(Reply.normalised(rs, psn) + "; after=" + i);
                        Reply r = rs.get(0);
                        if (r.kind().equals("ACK") && r.psn() == psn) {
                            p.take(1);
                            continue;
                        }
                        // the RNR NAKed SEND was dropped: sent again it must meet the same answer
                        String again = Reply.normalised(p.exchange(1, p.sendOnly(psn, Probe.pattern(30, 8))), psn);
                        return Case.Outcome.of(Reply.normalised(rs, psn) + "; then=" + again);
                    }
                    return Case.Outcome.cannotTell("1100 SENDs were all acknowledged: the peer keeps more receives posted");
                }));
        return cs;
    }

    private static List<String> withMem() {
        return List.of("NAK-SEQ+0 ; ACK+0; mem=written", "NAK-SEQ+0 ; ACK+0");
    }

    private static boolean acked(List<Reply> rs, int psn) {
        return rs.size() == 1 && rs.get(0).kind().equals("ACK") && rs.get(0).psn() == psn;
    }

    private static Case.Outcome ahead(Probe p, int by, Opcode op) throws IOException {
        Case.Outcome no = needs(p, op == Opcode.RC_RDMA_READ_REQUEST ? Target.Access.READ : Target.Access.WRITE);
        if (no != null) return no;
        int psn = Psn.add(p.epsn(), by);
        Packet pk = op == Opcode.RC_RDMA_READ_REQUEST ? p.read(psn, slot(p, 0), rkey(p), 8) : p.writeOnly(psn, slot(p, 14), rkey(p), Probe.pattern(31, 8));
        return Case.Outcome.of(Reply.normalised(p.exchange(1, pk), psn));
    }
}
