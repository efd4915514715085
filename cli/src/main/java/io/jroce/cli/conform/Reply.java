package io.jroce.cli.conform;

import io.jroce.wire.Aeth;
import io.jroce.wire.Icrc;
import io.jroce.wire.Opcode;
import io.jroce.wire.Problem;
import io.jroce.wire.Psn;
import io.jroce.wire.RocePacket;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.net.Inet4Address;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/**
 * A packet the peer sent us, reduced to what a verdict compares: its kind (ACK, a NAK by code, an RNR NAK, a
 * READ response by position, an ATOMIC ACKNOWLEDGE, or anything else by opcode), its PSN relative to the
 * request it answers, and what it carries (READ payload, the atomic's original value, the MSN). A packet whose
 * ICRC does not verify is kept and marked, since sending one is a departure in itself (IBTA Annex A17, rxe_icrc.c).
 *
 * @param kind    ACK, NAK-SEQ, NAK-INV, NAK-ACC, NAK-OP, NAK-RD, NAK-RSVn, RNR, READ-FIRST/MIDDLE/LAST/ONLY,
 *                ATOMIC-ACK, or OP-0xNN (a request or reserved opcode)
 * @param psn     the packet's PSN
 * @param msn     the AETH's MSN, -1 without an AETH
 * @param syndrome the AETH syndrome, -1 without one
 * @param data    READ response payload, or the 8 bytes of the original value of an ATOMIC ACKNOWLEDGE
 * @param icrcOk  whether the ICRC verified
 * @param request whether it is a request (the peer's own traffic, not an answer)
 * @param ackReq  the BTH AckReq bit
 */
record Reply(String kind, int psn, int msn, int syndrome, byte[] data, boolean icrcOk, boolean request, boolean ackReq) {

    /** Decodes a datagram from {@code from} to {@code to}; null when it is not a RoCE packet for {@code ourQpn}. */
    static Reply decode(byte[] bytes, InetSocketAddress from, InetSocketAddress to, int ourQpn) {
        ByteBuf b = Unpooled.wrappedBuffer(bytes);
        RocePacket p = new RocePacket();
        if (p.decode(b, 0, bytes.length) != Problem.NONE) return null;
        if (p.destQp() != ourQpn) return null;
        boolean icrc;
        if (from.getAddress() instanceof Inet4Address f4 && to.getAddress() instanceof Inet4Address t4) {
            icrc = new Icrc().verifyIpv4UnknownId(Packet.ipv4(f4), Packet.ipv4(t4), from.getPort(), to.getPort(), b, 0, bytes.length) >= 0;
        } else {
            icrc = new Icrc().verifyIpv6(from.getAddress().getAddress(), to.getAddress().getAddress(), from.getPort(), to.getPort(),
                    b, 0, bytes.length);
        }
        Opcode op = p.opcode();
        int syndrome = op.hasAeth() ? p.aeth().syndrome() : -1;
        int msn = op.hasAeth() ? p.aeth().msn() : -1;
        byte[] data = new byte[0];
        String kind;
        switch (op) {
            case RC_ACKNOWLEDGE -> kind = aethKind(syndrome);
            case RC_ATOMIC_ACKNOWLEDGE -> {
                kind = Aeth.kind(syndrome) == Aeth.Kind.ACK ? "ATOMIC-ACK" : "ATOMIC-ACK/" + aethKind(syndrome);
                data = Arrays.copyOfRange(bytes, op.atomicAckEthOffset(), op.atomicAckEthOffset() + 8);
            }
            case RC_RDMA_READ_RESPONSE_FIRST, RC_RDMA_READ_RESPONSE_MIDDLE, RC_RDMA_READ_RESPONSE_LAST, RC_RDMA_READ_RESPONSE_ONLY -> {
                kind = "READ-" + op.position().name();
                if (syndrome >= 0 && Aeth.kind(syndrome) != Aeth.Kind.ACK) kind += "/" + aethKind(syndrome);
                data = Arrays.copyOfRange(bytes, p.payloadOffset(), p.payloadOffset() + p.payloadLength());
            }
            default -> kind = String.format("OP-0x%02x", op.code());
        }
        return new Reply(kind, p.psn(), msn, syndrome, data, icrc, op.isRequest(), p.ackReq());
    }

    static String aethKind(int syndrome) {
        return switch (Aeth.kind(syndrome)) {
            case ACK -> "ACK";
            case RNR_NAK -> "RNR";
            case RESERVED -> String.format("AETH-RSV-0x%02x", syndrome);
            case NAK -> switch (Aeth.value(syndrome)) {
                case 0 -> "NAK-SEQ";
                case 1 -> "NAK-INV";
                case 2 -> "NAK-ACC";
                case 3 -> "NAK-OP";
                case 4 -> "NAK-RD";
                default -> "NAK-RSV" + Aeth.value(syndrome);
            };
        };
    }

    /** "ACK+0", "NAK-SEQ-1", "READ-ONLY+0"; a bad ICRC adds "!icrc". */
    String normalised(int base) {
        int d = Psn.compare(psn, base) >> 8;
        return kind + (d >= 0 ? "+" : "") + d + (icrcOk ? "" : "!icrc");
    }

    /** The replies as one string: "none" for silence. */
    static String normalised(List<Reply> rs, int base) {
        if (rs.isEmpty()) return "none";
        return rs.stream().map(r -> r.normalised(base)).collect(Collectors.joining(" "));
    }

    /** The original value of an ATOMIC ACKNOWLEDGE. */
    long atomicOrig() {
        return java.nio.ByteBuffer.wrap(data).getLong();
    }
}
