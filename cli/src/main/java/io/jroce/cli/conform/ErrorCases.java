package io.jroce.cli.conform;

import io.jroce.wire.Opcode;
import io.jroce.wire.Psn;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import static io.jroce.cli.conform.Kit.fatal;
import static io.jroce.cli.conform.Kit.needs;
import static io.jroce.cli.conform.Kit.rkey;
import static io.jroce.cli.conform.Kit.slot;

/**
 * Requests the responder must refuse with a NAK (IBTA 9.7.5.1 responder checks; 9.9.3 class C errors: the NAK is
 * sent and the responder's QP goes to the error state). Each may leave the QP in error, so each runs on its own
 * QP when the peer offers a fresh one, and they run after every other case.
 */
final class ErrorCases {
    private ErrorCases() {
    }

    private static final String RESP = "rxe_resp.c ";

    static List<Case> all() {
        List<Case> cs = new ArrayList<>();
        cs.add(fatal("err.rkey.write", Case.RC, "RDMA WRITE with an R_Key the peer never issued", "IBTA 9.7.5.1 R_Key check (NAK remote access error)",
                RESP + "check_rkey (lookup_mr fails)", List.of("NAK-ACC+0"), p -> write(p, slot(p, 0), ~rkey(p), 16, 16)));
        cs.add(fatal("err.rkey.read", Case.RC, "RDMA READ with an R_Key the peer never issued", "IBTA 9.7.5.1 R_Key check", RESP + "check_rkey",
                List.of("NAK-ACC+0"), p -> {
                    Case.Outcome no = needs(p, Target.Access.READ);
                    if (no != null) return no;
                    int psn = p.take(1);
                    return Case.Outcome.of(Reply.normalised(p.exchange(1, p.read(psn, slot(p, 0), ~rkey(p), 16)), psn));
                }));
        cs.add(fatal("err.rkey.atomic", Case.RC, "FETCH_ADD with an R_Key the peer never issued", "IBTA 9.7.5.1 R_Key check", RESP + "check_rkey",
                List.of("NAK-ACC+0"), p -> {
                    Case.Outcome no = needs(p, Target.Access.ATOMIC);
                    if (no != null) return no;
                    int psn = p.take(1);
                    return Case.Outcome.of(Reply.normalised(p.exchange(1, p.fetchAdd(psn, slot(p, 4), ~rkey(p), 1)), psn));
                }));
        cs.add(fatal("err.bounds.write", Case.RC, "RDMA WRITE of 64 bytes that ends 32 bytes past the region",
                "IBTA 9.7.5.1 (VA and length within the region, NAK remote access error)", RESP + "check_rkey (mr_check_range)",
                List.of("NAK-ACC+0"), p -> {
                    if (p.target.region() != null && p.target.region().length() == 0) return Case.Outcome.cannotTell("the region's length is unknown (--region-length)");
                    return write(p, p.target.region() == null ? 0 : p.target.region().va() + Kit.length(p) - 32, rkey0(p), 64, 64);
                }));
        cs.add(fatal("err.bounds.read", Case.RC, "RDMA READ of 64 bytes that ends 32 bytes past the region", "IBTA 9.7.5.1",
                RESP + "check_rkey (mr_check_range)", List.of("NAK-ACC+0"), p -> {
                    Case.Outcome no = needs(p, Target.Access.READ);
                    if (no != null) return no;
                    if (p.target.region().length() == 0) return Case.Outcome.cannotTell("the region's length is unknown (--region-length)");
                    int psn = p.take(1);
                    return Case.Outcome.of(Reply.normalised(p.exchange(1, p.read(psn, p.target.region().va() + Kit.length(p) - 32, rkey(p), 64)), psn));
                }));
        cs.add(fatal("err.atomic.misaligned", Case.RC, "FETCH_ADD at an address 4 bytes off an 8-byte boundary",
                "IBTA 9.4.5 (atomics on 8-byte aligned addresses; NAK invalid request)", RESP + "atomic_reply (RESPST_ERR_MISALIGNED_ATOMIC)",
                List.of("NAK-INV+0"), p -> {
                    Case.Outcome no = needs(p, Target.Access.ATOMIC);
                    if (no != null) return no;
                    int psn = p.take(1);
                    return Case.Outcome.of(Reply.normalised(p.exchange(1, p.fetchAdd(psn, slot(p, 4) + 4, rkey(p), 1)), psn));
                }));
        cs.add(fatal("err.length.mismatch", Case.RC, "RDMA WRITE Only carrying 64 bytes where the RETH says 128",
                "IBTA 9.7.5.1 length check (NAK invalid request)", RESP + "check_rkey (pktlen != resid: RESPST_ERR_LENGTH)",
                List.of("NAK-INV+0"), p -> write(p, slot(p, 0), rkey0(p), 128, 64)));
        cs.add(fatal("err.length.oversize", Case.RC, "RDMA WRITE Only of PMTU + 4 bytes", "IBTA 9.7.5.1 length check (payload beyond the PMTU)",
                RESP + "check_length (only packets: payload > mtu)", List.of("NAK-INV+0"), p -> write(p, slot(p, 0), rkey0(p), p.mtu() + 4, p.mtu() + 4)));
        cs.add(fatal("err.length.first-short", Case.RC, "RDMA WRITE First carrying less than the PMTU",
                "IBTA 9.7.5.1 length check (First and Middle carry exactly the PMTU)", RESP + "check_length (first/middle: payload != mtu)",
                List.of("NAK-INV+0"), p -> {
                    Case.Outcome no = needs(p, Target.Access.WRITE);
                    if (no != null) return no;
                    int psn = p.take(1);
                    return Case.Outcome.of(Reply.normalised(p.exchange(1, p.packet(Opcode.RC_RDMA_WRITE_FIRST, psn).ackReq(true)
                            .reth(slot(p, 0), rkey(p), 2L * p.mtu()).payload(Probe.pattern(40, 64))), psn));
                }));
        cs.add(fatal("err.length.pad", Case.RC, "RDMA WRITE Only of 62 bytes whose pad count says 0 (so 64 bytes arrive)",
                "IBTA 9.2.4 pad count; 9.7.5.1 length check", RESP + "check_rkey (bth_pad != (-resid & 3): RESPST_ERR_LENGTH)",
                List.of("NAK-INV+0"), p -> {
                    Case.Outcome no = needs(p, Target.Access.WRITE);
                    if (no != null) return no;
                    int psn = p.take(1);
                    return Case.Outcome.of(Reply.normalised(p.exchange(1, p.writeOnly(psn, slot(p, 0), rkey(p), Probe.pattern(41, 62)).pad(0)), psn));
                }));
        cs.add(fatal("err.opseq.missing-first", Case.RC, "RDMA WRITE Middle with no First before it",
                "IBTA 9.7.5.1 opcode sequence check (NAK invalid request)", RESP + "check_op_seq (RESPST_ERR_MISSING_OPCODE_FIRST)",
                List.of("NAK-INV+0"), p -> {
                    Case.Outcome no = needs(p, Target.Access.WRITE);
                    if (no != null) return no;
                    int psn = p.take(1);
                    return Case.Outcome.of(Reply.normalised(p.exchange(1, p.packet(Opcode.RC_RDMA_WRITE_MIDDLE, psn).ackReq(true)
                            .payload(Probe.pattern(42, p.mtu()))), psn));
                }));
        cs.add(fatal("err.opseq.missing-last", Case.RC, "RDMA WRITE First followed by a SEND Only", "IBTA 9.7.5.1 opcode sequence check",
                RESP + "check_op_seq (RESPST_ERR_MISSING_OPCODE_LAST_C)", List.of("NAK-INV+1"), p -> {
                    Case.Outcome no = needs(p, Target.Access.WRITE);
                    if (no != null) return no;
                    Case.Outcome ns = Kit.needsSends(p);
                    if (ns != null) return ns;
                    int psn = p.take(2);
                    return Case.Outcome.of(Reply.normalised(p.exchange(1,
                            p.packet(Opcode.RC_RDMA_WRITE_FIRST, psn).reth(slot(p, 0), rkey(p), 2L * p.mtu()).payload(Probe.pattern(43, p.mtu())),
                            p.sendOnly(Psn.add(psn, 1), Probe.pattern(44, 8))), psn));
                }));
        cs.add(fatal("err.access.not-granted", Case.RC, "RDMA WRITE to memory the peer did not open to remote write",
                "IBTA 9.7.5.1 access check (region: NAK remote access error; QP: NAK invalid request)",
                RESP + "check_op_valid (QP access flags), check_rkey (MR access)", List.of("NAK-ACC+0", "NAK-INV+0"), p -> {
                    Target.Region ro = p.target.readOnly();
                    if (ro == null && p.target.region() != null && !p.target.grants(Target.Access.WRITE)) ro = p.target.region();
                    if (ro == null) return Case.Outcome.cannotTell("no region without remote write is known (jroce: --ro-region)");
                    int psn = p.take(1);
                    return Case.Outcome.of(Reply.normalised(p.exchange(1, p.packet(Opcode.RC_RDMA_WRITE_ONLY, psn).ackReq(true)
                            .reth(ro.va(), ro.rkey(), 8).payload(Probe.pattern(45, 8))), psn));
                }));
        cs.add(fatal("err.length.dma-huge", Case.RC, "RDMA READ with a DMA length of 2^31 + 1",
                "IBTA 9.4.4 (a message is at most 2^31 bytes); 9.7.5.1", RESP + "check_length (dmalen > 1 << 31)",
                List.of("NAK-INV+0", "NAK-ACC+0"), p -> {
                    Case.Outcome no = needs(p, Target.Access.READ);
                    if (no != null) return no;
                    int psn = p.take(1);
                    return Case.Outcome.of(Reply.normalised(p.exchange(1, p.read(psn, p.target.region().va(), rkey(p), 0x80000001L)), psn));
                }));
        cs.add(fatal("hdr.reserved-opcode", Case.HEADER, "RC opcode 0x15 (reserved) with AckReq",
                "IBTA 9.6 header validation (reserved opcode: dropped, or refused as an invalid request)", "rxe_recv.c rxe_rcv (an opcode without a mask goes to the completer, which drops it)",
                List.of("none", "NAK-INV+0"), p -> {
                    int psn = p.epsn();
                    return Case.Outcome.of(Reply.normalised(p.exchange(1, Packet.raw(0x15, 0).qp(p.target.qpn()).psn(psn).ackReq(true)), psn));
                }));
        return cs;
    }

    private static int rkey0(Probe p) {
        return p.target.region() == null ? 0 : rkey(p);
    }

    /** An RDMA WRITE Only whose RETH says {@code dmaLength} and which carries {@code payload} bytes. */
    private static Case.Outcome write(Probe p, long va, int rkey, long dmaLength, int payload) throws IOException {
        Case.Outcome no = needs(p, Target.Access.WRITE);
        if (no != null) return no;
        int psn = p.take(1);
        return Case.Outcome.of(Reply.normalised(p.exchange(1, p.packet(Opcode.RC_RDMA_WRITE_ONLY, psn).ackReq(true).reth(va, rkey, dmaLength)
                .payload(Probe.pattern(46, payload))), psn));
    }
}
