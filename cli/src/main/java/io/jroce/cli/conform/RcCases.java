package io.jroce.cli.conform;

import io.jroce.wire.Opcode;
import io.jroce.wire.Psn;

import java.util.ArrayList;
import java.util.List;

import static io.jroce.cli.conform.Kit.c;
import static io.jroce.cli.conform.Kit.memory;
import static io.jroce.cli.conform.Kit.needs;
import static io.jroce.cli.conform.Kit.rkey;
import static io.jroce.cli.conform.Kit.slot;
import static io.jroce.cli.conform.Kit.withMemory;

/**
 * Valid reliable-connection requests, duplicates and PSN sequence errors: everything after which the peer's QP
 * must still work (IBTA vol 1 9.7.5: a PSN sequence error is class B, the QP stays in RTS). Each case owns a
 * slot of the region ({@link Kit#slot}).
 */
final class RcCases {
    private RcCases() {
    }

    private static final String RESP = "rxe_resp.c ";

    static List<Case> all() {
        List<Case> cs = new ArrayList<>();
        cs.add(c("write.only", Case.RC, "RDMA WRITE Only, 64 bytes, AckReq", "IBTA 9.4.3 RDMA WRITE; 9.7.5.2 ACK on AckReq",
                RESP + "check_rkey, execute, acknowledge", withMemory("ACK+0", "written"), p -> {
                    Case.Outcome no = needs(p, Target.Access.WRITE);
                    if (no != null) return no;
                    byte[] d = Probe.pattern(1, 64);
                    int psn = p.take(1);
                    String a = Reply.normalised(p.exchange(1, p.writeOnly(psn, slot(p, 0), rkey(p), d)), psn);
                    return Case.Outcome.of(a + memory(p, slot(p, 0), d, null));
                }));
        cs.add(c("write.zero", Case.RC, "RDMA WRITE Only of 0 bytes with VA 0 and R_Key 0", "IBTA 9.4.3 (a zero-length RDMA WRITE checks no R_Key)",
                RESP + "check_op_valid (the QP must allow remote write), check_rkey (zero-byte op)", List.of("ACK+0"), p -> {
                    Case.Outcome no = needs(p, Target.Access.WRITE);
                    if (no != null) return no;
                    int psn = p.take(1);
                    return Case.Outcome.of(Reply.normalised(p.exchange(1, p.packet(Opcode.RC_RDMA_WRITE_ONLY, psn).ackReq(true).reth(0, 0, 0)), psn));
                }));
        cs.add(c("write.multi", Case.RC, "RDMA WRITE First, Middle, Last (2 PMTU + 100 bytes), AckReq on Last",
                "IBTA 9.4.3; 9.7.5.2 (one ACK for the message)", RESP + "check_op_seq, check_length, write_data_in",
                withMemory("ACK+2", "written"), p -> {
                    Case.Outcome no = needs(p, Target.Access.WRITE);
                    if (no != null) return no;
                    int mtu = p.mtu();
                    long va = Kit.bulk(p, 2L * mtu + 100);
                    if (va < 0) return Case.Outcome.cannotTell("the region is too short for 2 PMTU + 100 bytes");
                    byte[] d = Probe.pattern(3, 2 * mtu + 100);
                    int psn = p.take(3);
                    List<Reply> rs = p.exchange(1,
                            p.packet(Opcode.RC_RDMA_WRITE_FIRST, psn).reth(va, rkey(p), d.length).payload(java.util.Arrays.copyOfRange(d, 0, mtu)),
                            p.packet(Opcode.RC_RDMA_WRITE_MIDDLE, Psn.add(psn, 1)).payload(java.util.Arrays.copyOfRange(d, mtu, 2 * mtu)),
                            p.packet(Opcode.RC_RDMA_WRITE_LAST, Psn.add(psn, 2)).ackReq(true).payload(java.util.Arrays.copyOfRange(d, 2 * mtu, d.length)));
                    return Case.Outcome.of(Reply.normalised(rs, psn) + memory(p, va, d, null));
                }));
        cs.add(c("write.coalesced", Case.RC, "RDMA WRITE without AckReq, then one with AckReq",
                "IBTA 9.7.5.2 (an ACK may cover several requests; no ACK is owed without AckReq)", RESP + "acknowledge (bth_ack)",
                List.of("ACK+1", "ACK+0 ACK+1"), p -> {
                    Case.Outcome no = needs(p, Target.Access.WRITE);
                    if (no != null) return no;
                    int psn = p.take(2);
                    p.send(p.writeOnly(psn, slot(p, 1), rkey(p), Probe.pattern(4, 32)).ackReq(false),
                            p.writeOnly(Psn.add(psn, 1), slot(p, 1) + 32, rkey(p), Probe.pattern(5, 32)));
                    List<Reply> rs = p.collect(1);
                    if (rs.size() == 1 && rs.get(0).psn() == psn) rs.addAll(p.collect(1)); // the first ACK came alone: wait for the second
                    return Case.Outcome.of(Reply.normalised(rs, psn));
                }));
        cs.add(c("msn.count", Case.RC, "two RDMA WRITEs with AckReq, one after the other's ACK: the MSN counts messages",
                "IBTA 9.7.5.2 (MSN, C9-148)", RESP + "execute (resp.msn++), send_common_ack", List.of("ACK+0 ; ACK+1; msn+1"), p -> {
                    Case.Outcome no = needs(p, Target.Access.WRITE);
                    if (no != null) return no;
                    int psn = p.take(2);
                    List<Reply> first = p.exchange(1, p.writeOnly(psn, slot(p, 2), rkey(p), Probe.pattern(6, 16)));
                    List<Reply> second = p.exchange(1, p.writeOnly(Psn.add(psn, 1), slot(p, 2) + 16, rkey(p), Probe.pattern(7, 16)));
                    String fact = first.size() == 1 && second.size() == 1 ? "; msn+" + Psn.distance(first.get(0).msn(), second.get(0).msn()) : "";
                    return Case.Outcome.of(Reply.normalised(first, psn) + " ; " + Reply.normalised(second, psn) + fact);
                }));
        cs.add(c("write.imm", Case.RC, "RDMA WRITE Only with Immediate (consumes a receive WQE)", "IBTA 9.4.3; 9.7.5.2 (RNR NAK when no receive WQE)",
                RESP + "check_resource", List.of("ACK+0", "RNR+0"), p -> {
                    Case.Outcome no = needs(p, Target.Access.WRITE);
                    if (no != null) return no;
                    Case.Outcome ns = Kit.needsSends(p);
                    if (ns != null) return ns;
                    int psn = p.take(1);
                    return Case.Outcome.of(Reply.normalised(p.exchange(1, p.packet(Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, psn).ackReq(true)
                            .reth(slot(p, 3), rkey(p), 8).imm(0x1234).payload(Probe.pattern(8, 8))), psn));
                }));
        cs.add(c("send.only", Case.RC, "SEND Only, 64 bytes", "IBTA 9.4.1 SEND; 9.7.5.2", RESP + "check_resource, send_data_in",
                List.of("ACK+0", "RNR+0"), p -> send(p, 64)));
        cs.add(c("send.zero", Case.RC, "SEND Only of 0 bytes", "IBTA 9.4.1 (zero-length SEND)", RESP + "check_length", List.of("ACK+0", "RNR+0"),
                p -> send(p, 0)));
        cs.add(c("send.multi", Case.RC, "SEND First, Middle, Last (2 PMTU + 4 bytes)", "IBTA 9.4.1; 9.7.5.1 (opcode sequence)",
                RESP + "check_op_seq", List.of("ACK+2", "RNR+0", "RNR+0 NAK-SEQ+0"), p -> {
                    Case.Outcome ns = Kit.needsSends(p);
                    if (ns != null) return ns;
                    int mtu = p.mtu();
                    int psn = p.take(3);
                    return Case.Outcome.of(Reply.normalised(p.exchange(1,
                            p.packet(Opcode.RC_SEND_FIRST, psn).payload(Probe.pattern(9, mtu)),
                            p.packet(Opcode.RC_SEND_MIDDLE, Psn.add(psn, 1)).payload(Probe.pattern(10, mtu)),
                            p.packet(Opcode.RC_SEND_LAST, Psn.add(psn, 2)).ackReq(true).payload(Probe.pattern(11, 4))), psn));
                }));
        cs.add(c("send.imm", Case.RC, "SEND Only with Immediate", "IBTA 9.4.1", RESP + "execute (immediate data)", List.of("ACK+0", "RNR+0"), p -> {
            Case.Outcome ns = Kit.needsSends(p);
            if (ns != null) return ns;
            int psn = p.take(1);
            return Case.Outcome.of(Reply.normalised(p.exchange(1, p.packet(Opcode.RC_SEND_ONLY_WITH_IMMEDIATE, psn).ackReq(true).imm(7)
                    .payload(Probe.pattern(12, 20))), psn));
        }));
        cs.add(c("read.only", Case.RC, "RDMA READ of 64 bytes", "IBTA 9.4.4 RDMA READ (one response packet, same PSN)", RESP + "read_reply",
                List.of("READ-ONLY+0; bytes=64"), p -> read(p, slot(p, 0), 64)));
        cs.add(c("read.multi", Case.RC, "RDMA READ of 2 PMTU + 100 bytes", "IBTA 9.4.4; 9.7.4.1 (a READ uses one PSN per response packet)",
                RESP + "read_reply", List.of("READ-FIRST+0 READ-MIDDLE+1 READ-LAST+2; bytes=multi"), p -> {
                    Case.Outcome no = needs(p, Target.Access.READ);
                    if (no != null) return no;
                    int len = 2 * p.mtu() + 100;
                    long va = Kit.bulk(p, len);
                    if (va < 0) return Case.Outcome.cannotTell("the region is too short for 2 PMTU + 100 bytes");
                    int psn = p.take(3);
                    List<Reply> rs = p.exchange(3, p.read(psn, va, rkey(p), len));
                    int total = rs.stream().mapToInt(r -> r.data().length).sum();
                    return Case.Outcome.of(Reply.normalised(rs, psn) + "; bytes=" + (total == len ? "multi" : total));
                }));
        cs.add(c("read.zero", Case.RC, "RDMA READ of 0 bytes with VA 0 and R_Key 0", "IBTA 9.4.4 (zero-length READ: one empty response)",
                RESP + "check_rkey (zero-byte op), read_reply", List.of("READ-ONLY+0; bytes=0"), p -> {
                    Case.Outcome no = needs(p, Target.Access.READ);
                    if (no != null) return no;
                    int psn = p.take(1);
                    List<Reply> rs = p.exchange(1, p.read(psn, 0, 0, 0));
                    return Case.Outcome.of(Reply.normalised(rs, psn) + "; bytes=" + rs.stream().mapToInt(r -> r.data().length).sum());
                }));
        cs.add(c("atomic.fetch-add", Case.RC, "FETCH_ADD 5 on an aligned 8 bytes", "IBTA 9.4.5 ATOMIC (original value in the ATOMIC ACKNOWLEDGE)",
                RESP + "atomic_reply", List.of("ATOMIC-ACK+0; orig=before; now=sum"), p -> atomic(p, 4, false, 0)));
        cs.add(c("atomic.cmp-swap.equal", Case.RC, "COMPARE_SWAP whose compare value matches", "IBTA 9.4.5", RESP + "atomic_reply",
                List.of("ATOMIC-ACK+0; orig=before; now=swap"), p -> atomic(p, 5, true, 0)));
        cs.add(c("atomic.cmp-swap.differs", Case.RC, "COMPARE_SWAP whose compare value does not match", "IBTA 9.4.5", RESP + "atomic_reply",
                List.of("ATOMIC-ACK+0; orig=before; now=before"), p -> atomic(p, 6, true, 1)));
        cs.addAll(DuplicateCases.all());
        return cs;
    }

    private static Case.Outcome send(Probe p, int len) throws java.io.IOException {
        Case.Outcome ns = Kit.needsSends(p);
        if (ns != null) return ns;
        int psn = p.take(1);
        return Case.Outcome.of(Reply.normalised(p.exchange(1, p.sendOnly(psn, Probe.pattern(13, len))), psn));
    }

    private static Case.Outcome read(Probe p, long va, int len) throws java.io.IOException {
        Case.Outcome no = needs(p, Target.Access.READ);
        if (no != null) return no;
        int psn = p.take(1);
        List<Reply> rs = p.exchange(1, p.read(psn, va, rkey(p), len));
        return Case.Outcome.of(Reply.normalised(rs, psn) + "; bytes=" + rs.stream().mapToInt(r -> r.data().length).sum());
    }

    /** Learns the value with FETCH_ADD 0, runs the atomic under test, reads the value again the same way. */
    private static Case.Outcome atomic(Probe p, int slotNo, boolean cmpSwap, long compareOffset) throws java.io.IOException {
        Case.Outcome no = needs(p, Target.Access.ATOMIC);
        if (no != null) return no;
        long va = slot(p, slotNo);
        Long before = Kit.atomicRead(p, va);
        if (before == null) return Case.Outcome.cannotTell("FETCH_ADD 0 to learn the value before got no ATOMIC ACKNOWLEDGE");
        // the swap value always differs from the value before, or a swap would look like none (a second run
        // against the same memory finds the first run's swap value there)
        long operand = cmpSwap ? before ^ 0x1122334455667788L : 5;
        int psn = p.take(1);
        List<Reply> rs = p.exchange(1, cmpSwap ? p.cmpSwap(psn, va, rkey(p), operand, before + compareOffset) : p.fetchAdd(psn, va, rkey(p), operand));
        StringBuilder sb = new StringBuilder(Reply.normalised(rs, psn));
        if (rs.size() == 1 && rs.get(0).kind().equals("ATOMIC-ACK")) {
            sb.append("; orig=").append(rs.get(0).atomicOrig() == before ? "before" : String.format("0x%x", rs.get(0).atomicOrig()));
        }
        Long after = Kit.atomicRead(p, va);
        long expect = cmpSwap ? operand : before + operand;
        // compared as values: both are boxed, and == on two Longs compares identity (equal only for small values)
        sb.append("; now=").append(after == null ? "unreadable" : after.longValue() == before.longValue() ? "before"
                : after == expect ? (cmpSwap ? "swap" : "sum") : String.format("0x%x", after));
        return Case.Outcome.of(sb.toString());
    }
}
