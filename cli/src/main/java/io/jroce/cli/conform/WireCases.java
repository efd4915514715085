package io.jroce.cli.conform;

import io.jroce.wire.Aeth;
import io.jroce.wire.Opcode;
import io.jroce.wire.RoceV2;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

import static io.jroce.cli.conform.Kit.c;
import static io.jroce.cli.conform.Kit.needs;
import static io.jroce.cli.conform.Kit.rkey;
import static io.jroce.cli.conform.Kit.slot;
import static io.jroce.cli.conform.Kit.withMemory;

/**
 * Packets the peer must drop without an answer: header checks that fail (IBTA 9.6 packet header validation, Annex
 * A17 ICRC), responses it never asked for (IBTA 9.7.6: a requester ignores responses outside its outstanding
 * PSNs), and UD datagrams a QP must not accept. Silence alone proves little, so these cases also check that memory
 * did not change, and the run checks after each that the QP still answers at the expected PSN.
 */
final class WireCases {
    private WireCases() {
    }

    private static final String RECV = "rxe_recv.c ";

    static List<Case> all() {
        List<Case> cs = new ArrayList<>();
        cs.add(c("hdr.bad-icrc", Case.HEADER, "RDMA WRITE at the expected PSN with a corrupt ICRC", "IBTA Annex A17 (RoCEv2 ICRC); 7.8 ICRC check: drop",
                "rxe_icrc.c rxe_icrc_check; rxe_recv.c rxe_rcv", withMemory("none", "unchanged"), p -> dropped(p, 15, Packet::badIcrc)));
        cs.add(c("hdr.bad-pkey", Case.HEADER, "RDMA WRITE with P_Key 0x8001 (another partition)", "IBTA 9.6 (P_Key check: drop and count)",
                RECV + "check_keys (pkey_match)", withMemory("none", "unchanged"), p -> dropped(p, 16, x -> x.pkey(0x8001))));
        cs.add(c("hdr.bad-tver", Case.HEADER, "RDMA WRITE with TVer 1", "IBTA 9.2 BTH (TVer 0; other versions dropped)", RECV + "hdr_check (bth_tver)",
                withMemory("none", "unchanged"), p -> dropped(p, 17, x -> x.tver(1))));
        cs.add(c("hdr.unknown-qpn", Case.HEADER, "RDMA WRITE to a QPN the peer did not offer", "IBTA 9.6 (destination QP check: drop)",
                RECV + "hdr_check (rxe_pool_get_index fails)", withMemory("none", "unchanged"), p -> dropped(p, 18, x -> x.qp(p.target.qpn() ^ 0x400000))));
        cs.add(c("hdr.uc-opcode", Case.HEADER, "UC SEND Only (0x24) to the RC QP", "IBTA 9.6 (opcode of another transport: drop)",
                RECV + "check_type_state", List.of("none"), p -> {
                    int psn = p.epsn();
                    return Case.Outcome.of(Reply.normalised(p.exchange(0, Packet.raw(0x24, 0).qp(p.target.qpn()).psn(psn).ackReq(true)
                            .payload(Probe.pattern(50, 8))), psn));
                }));
        cs.add(c("ud.on-rc-qp", Case.UD, "UD SEND Only with a DETH to the RC QP", "IBTA 9.6 (UD opcode on an RC QP: drop)", RECV + "check_type_state",
                List.of("none"), p -> {
                    int psn = p.epsn();
                    return Case.Outcome.of(Reply.normalised(p.exchange(0, p.packet(Opcode.UD_SEND_ONLY, psn).deth(0x11111111, p.local.qpn())
                            .payload(Probe.pattern(51, 16))), psn));
                }));
        cs.add(c("ud.gsi.bad-qkey", Case.UD, "UD SEND Only to QP1 with a Q_Key other than 0x80010000",
                "IBTA 10.2.4 Q_Keys; 13.5.3 (GSI Q_Key): drop, and QP 1 goes on", RECV + "check_keys (qkey of GSI)", GSI_DROPPED, p -> {
                    int psn = 0x100;
                    return gsiDrops(p, Packet.of(Opcode.UD_SEND_ONLY).qp(1).psn(psn).deth(0x12345678, p.local.qpn()).payload(new byte[256]), psn);
                }));
        cs.add(c("ud.gsi.oversize", Case.UD, "UD SEND Only to QP1 of PMTU + 256 bytes",
                "IBTA 9.6 (a UD message fits one packet of the PMTU): drop, and QP 1 goes on answering MADs",
                "rxe_resp.c check_length (only packets: payload > mtu: RESPST_ERR_LENGTH; Linux 6.1's rxe then has its GSI QP in "
                        + "the error state)", GSI_DROPPED, p -> {
                    int psn = 0x101;
                    return gsiDrops(p, Packet.of(Opcode.UD_SEND_ONLY).qp(1).psn(psn).deth(RoceV2.GSI_QKEY, p.local.qpn())
                            .payload(new byte[p.mtu() + 256]), psn);
                }));
        int ghost = 0x5A5A5A;
        cs.add(c("resp.unsolicited-ack", Case.IGNORE, "an ACK for a PSN the peer never sent", "IBTA 9.7.6 (requester: responses outside the outstanding PSNs are ignored)",
                "rxe_comp.c check_psn, rxe_recv.c check_psn", List.of("none"), p -> ignored(p, Packet.of(Opcode.RC_ACKNOWLEDGE).aeth(Aeth.ACK_UNLIMITED, 1), ghost)));
        cs.add(c("resp.unsolicited-nak", Case.IGNORE, "a PSN sequence error NAK the peer has nothing outstanding for", "IBTA 9.7.6",
                "rxe_comp.c check_psn", List.of("none"), p -> ignored(p, Packet.of(Opcode.RC_ACKNOWLEDGE).aeth(0x60, 1), ghost + 1)));
        cs.add(c("resp.unsolicited-rnr", Case.IGNORE, "an RNR NAK the peer has nothing outstanding for", "IBTA 9.7.6", "rxe_comp.c check_psn",
                List.of("none"), p -> ignored(p, Packet.of(Opcode.RC_ACKNOWLEDGE).aeth(0x20 | 14, 1), ghost + 2)));
        cs.add(c("resp.read-out-of-sequence", Case.IGNORE, "an RDMA READ Response Only for a READ the peer never requested", "IBTA 9.7.6",
                "rxe_comp.c check_psn, check_ack", List.of("none"), p -> ignored(p, Packet.of(Opcode.RC_RDMA_READ_RESPONSE_ONLY)
                        .aeth(Aeth.ACK_UNLIMITED, 1).payload(Probe.pattern(52, 64)), ghost + 3)));
        cs.add(c("resp.read-middle-alone", Case.IGNORE, "an RDMA READ Response Middle with no First", "IBTA 9.7.6", "rxe_comp.c check_ack",
                List.of("none"), p -> ignored(p, Packet.of(Opcode.RC_RDMA_READ_RESPONSE_MIDDLE).payload(Probe.pattern(53, p.mtu())), ghost + 4)));
        cs.add(c("resp.unsolicited-atomic-ack", Case.IGNORE, "an ATOMIC ACKNOWLEDGE for an atomic the peer never sent", "IBTA 9.7.6",
                "rxe_comp.c check_psn", List.of("none"), p -> ignored(p, Packet.of(Opcode.RC_ATOMIC_ACKNOWLEDGE).aeth(Aeth.ACK_UNLIMITED, 1)
                        .atomicAck(42), ghost + 5)));
        return cs;
    }

    /** A datagram QP 1 must drop: silence, and QP 1 still answering a MAD afterwards where it did before. */
    private static final List<String> GSI_DROPPED = List.of("none; qp1=answers", "none");

    /**
     * Sends {@code pkt} to the peer's QP 1 and reads the answer; when QP 1 answered a Get just before, asks again
     * afterwards, so a peer that drops the datagram but takes its QP 1 down with it (seen: Linux 6.1's rdma_rxe moves its
     * GSI QP to the error state on an oversized datagram, and its CM answers nothing more until the device is reset) is
     * told from one that goes on.
     */
    private static Case.Outcome gsiDrops(Probe p, Packet pkt, int psn) throws IOException {
        boolean before = CmCases.qp1Answers(p);
        String seen = Reply.normalised(p.exchange(0, pkt), psn);
        if (!before || !seen.equals("none")) return Case.Outcome.of(seen);
        return Case.Outcome.of(CmCases.qp1Answers(p) ? "none; qp1=answers" : "none; qp1=silent");
    }

    /** A WRITE at the expected PSN, spoiled by {@code spoil}: no answer, memory unchanged. */
    private static Case.Outcome dropped(Probe p, int slotNo, UnaryOperator<Packet> spoil) throws IOException {
        Case.Outcome no = needs(p, Target.Access.WRITE);
        if (no != null) return no;
        long va = slot(p, slotNo);
        byte[] before = Kit.before(p, va, 32);
        byte[] d = Probe.pattern(60 + slotNo, 32);
        int psn = p.epsn();
        String a = Reply.normalised(p.exchange(0, spoil.apply(p.writeOnly(psn, va, rkey(p), d))), psn);
        return Case.Outcome.of(a + (before == null ? "" : Kit.memory(p, va, d, before)));
    }

    private static Case.Outcome ignored(Probe p, Packet response, int psn) throws IOException {
        return Case.Outcome.of(Reply.normalised(p.exchange(0, response.qp(p.target.qpn()).psn(psn)), psn));
    }
}
