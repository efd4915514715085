package io.jroce.endpoint;

import io.jroce.wire.RocePacket;
import io.jroce.wire.RoceV2;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

/**
 * The receive side of UD queue pairs (rdma_rxe rxe_recv.c for the checks, rxe_resp.c for the delivery): a
 * UD SEND is dispatched by destination QPN alone (a UD QP has no connected peer), checked for P_Key, QP
 * state and Q_Key, and delivered to the head receive WQE behind a 40-byte GRH area. Event loop only.
 *
 * <p>Whatever is wrong with a UD datagram, nothing goes back to the sender (UD has no ACK, NAK or RNR):
 * it is dropped and counted, or, for a receive buffer too short, the WQE completes with LOC_LEN_ERR.
 */
final class UdReceiver {
    /** The GRH area at the start of every UD receive buffer ({@code union rdma_network_hdr}, 40 bytes). */
    static final int GRH_LENGTH = 40;
    /**
     * The hop limit / TTL written into a reconstructed header: the socket does not report the one on the
     * wire (and the ICRC masks it, so it cannot be solved for); 64 is Linux's default.
     */
    static final int RECONSTRUCTED_TTL = 64;
    private static final int UDP_HEADER = 8;

    private final Device device;
    private final Transport tx;
    private final DeviceCounters counters;
    private final ByteBuf grh = Unpooled.buffer(GRH_LENGTH, GRH_LENGTH);

    UdReceiver(Device device, Transport tx, DeviceCounters counters) {
        this.device = device;
        this.tx = tx;
        this.counters = counters;
    }

    /**
     * One UD datagram whose ICRC checked. {@code src16} is the IPv6 sender (null on an IPv4 device),
     * {@code src4} the IPv4 sender as a big-endian int, {@code ipId} the IPv4 Identification the ICRC was
     * solved for, {@code udpLen} the UDP payload length (the whole RoCE packet).
     */
    void receive(RocePacket p, byte[] src16, int src4, int srcPort, int ipId, int udpLen) {
        QueuePair qp = tx.lookupQp(p.destQp());
        if (qp == null) {
            counters.drop(DropReason.UNKNOWN_QP);
            return;
        }
        if (qp.type() != QpType.UD) {
            counters.drop(DropReason.UNSUPPORTED_OPCODE); // a UD opcode for an RC QP (rxe_recv.c check_type_state)
            return;
        }
        // IBA 9.6.1.1 / 10.9 (rxe_recv.c check_keys): P_Key first, then the Q_Key
        if (!RoceV2.pkeyMatch(p.pkey(), RoceV2.DEFAULT_PKEY)) {
            counters.drop(DropReason.PKEY);
            return;
        }
        QpState st = qp.state;
        // rxe_recv.c check_type_state: a request needs RTR or later; in ERR the QP takes nothing
        if (st == QpState.RESET || st == QpState.INIT || st == QpState.ERR) {
            counters.drop(DropReason.QP_STATE);
            return;
        }
        // QP 1 expects IB_QP1_QKEY, every other UD QP its own Q_Key (IBA 10.2.4; rxe_recv.c check_keys)
        int expected = qp.qpNum() == Device.GSI_QPN ? Device.GSI_QKEY : qp.qkey;
        if (p.deth().qkey() != expected) {
            counters.drop(DropReason.QKEY);
            return;
        }
        qp.counters.packetsIn++;
        qp.counters.bytesIn += udpLen;
        if (qp.rq.isEmpty()) {
            counters.drop(DropReason.NO_RECEIVE); // no RNR for UD (IBA 9.7.5.1.2): the datagram is lost
            return;
        }
        RecvWqe r = qp.rq.head();
        int payload = p.payloadLength();
        int srcQp = p.deth().srcQp();
        if (GRH_LENGTH + (long) payload > r.capacity) {
            // rxe_resp.c rxe_resp_check_length -> RESPST_ERR_LENGTH, class D for UD without SRQ: the WQE
            // completes with LOC_LEN_ERR and the QP stays as it was
            qp.completeRecv(r, WcStatus.LOC_LEN_ERR, WcOpcode.RECV, 0, 0, 0, p.se(), srcQp, srcPort);
            return;
        }
        writeGrh(src16, src4, ipId, udpLen);
        if (!Responder.scatter(r, 0, grh, 0, GRH_LENGTH) || !Responder.scatter(r, GRH_LENGTH, p.buffer(), p.payloadOffset(), payload)) {
            qp.enterError(r.fault != null ? "an SGE of the UD receive names no usable region" : "UD receive buffer was deregistered");
            qp.completeRecv(r, r.fault != null ? r.fault : WcStatus.LOC_PROT_ERR, WcOpcode.RECV, 0, 0, 0, false, srcQp, srcPort);
            qp.flushIfError();
            return;
        }
        int flags = WorkCompletion.GRH;
        int imm = 0;
        if (p.opcode().hasImmDt()) {
            flags |= WorkCompletion.WITH_IMM;
            imm = p.immDt().imm();
        }
        qp.completeRecv(r, WcStatus.SUCCESS, WcOpcode.RECV, GRH_LENGTH + payload, imm, flags, p.se(), srcQp, srcPort);
    }

    /**
     * Fills {@link #grh} as rdma_rxe does (rxe_resp.c copies the received network header): IPv4, 20 zero bytes
     * then the IPv4 header; IPv6, the IPv6 header. A UDP socket hides the IP header, so it is rebuilt:
     * <ul>
     * <li>IPv4: version 4, IHL 5; TOS 0 (not reported by the socket, masked by the ICRC); total length
     * 20 + 8 + the UDP payload; Identification: the one the ICRC was solved for, exactly the sender's;
     * flags DF (the only flag the ICRC solve accepts), fragment offset 0; TTL {@link #RECONSTRUCTED_TTL}
     * (unknown, masked by the ICRC); protocol 17; header checksum computed over this header; source: the
     * datagram's sender; destination: this device's address.</li>
     * <li>IPv6: version 6; traffic class and flow label 0 (not reported, masked by the ICRC); payload length
     * 8 + the UDP payload; next header 17; hop limit {@link #RECONSTRUCTED_TTL}; source: the sender;
     * destination: this device's address.</li>
     * </ul>
     */
    private void writeGrh(byte[] src16, int src4, int ipId, int udpLen) {
        ByteBuf g = grh;
        g.clear();
        if (src16 != null) {
            g.writeInt(6 << 28);
            g.writeShort(UDP_HEADER + udpLen);
            g.writeByte(17);
            g.writeByte(RECONSTRUCTED_TTL);
            g.writeBytes(src16);
            g.writeBytes(tx.localAddr16());
        } else {
            g.writeZero(20);
            g.writeByte(0x45);
            g.writeByte(0);
            g.writeShort(20 + UDP_HEADER + udpLen);
            g.writeShort(ipId);
            g.writeShort(io.jroce.wire.Icrc.IPV4_DF);
            g.writeByte(RECONSTRUCTED_TTL);
            g.writeByte(17);
            g.writeShort(0);
            g.writeInt(src4);
            g.writeInt(tx.localAddr());
            g.setShort(30, ipv4Checksum(g, 20));
        }
    }

    /** The IPv4 header checksum (RFC 791: one's complement of the one's-complement sum of the 16-bit words). */
    static int ipv4Checksum(ByteBuf b, int off) {
        int sum = 0;
        for (int i = 0; i < 20; i += 2) sum += b.getUnsignedShort(off + i);
        while ((sum >>> 16) != 0) sum = (sum & 0xFFFF) + (sum >>> 16);
        return ~sum & 0xFFFF;
    }
}
