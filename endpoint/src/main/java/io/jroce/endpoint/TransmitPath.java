package io.jroce.endpoint;

import io.jroce.wire.BthView;
import io.jroce.wire.Icrc;
import io.jroce.wire.Opcode;
import io.jroce.wire.RoceV2;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

import java.net.InetSocketAddress;

/**
 * A shard's transmit path (the send half of rdma_rxe's rxe_net.c, with rxe_icrc.c's stamp): a packet is allocated
 * at its final size from the pooled direct allocator (headers, payload, pad, ICRC; never grown) with its BTH
 * written; the engine writes the rest; finishing it stamps the ICRC for the addresses and the IPv4 ID it will
 * leave with (0, or k as segment k of a GSO super-datagram), counts it, records it and queues it on the socket.
 * Loop only; the flyweights and the ICRC state are this path's scratch.
 */
final class TransmitPath implements PacketOut {
    private final UdpPort port;
    private final ByteBufAllocator alloc;
    private final DeviceCounters counters;
    private final PcapTap pcap;
    private final boolean ipv6;
    /** IPv4 device: its address as a big-endian int. */
    private final int localAddr;
    /** IPv6 device: its 16 address bytes. */
    private final byte[] localAddr16;
    private final BthView bth = new BthView();
    private final HeaderViews views = new HeaderViews();
    private final Icrc icrc = new Icrc();

    TransmitPath(UdpPort port, ByteBufAllocator alloc, DeviceCounters counters, PcapTap pcap, boolean ipv6, int localAddr,
                 byte[] localAddr16) {
        this.port = port;
        this.alloc = alloc;
        this.counters = counters;
        this.pcap = pcap;
        this.ipv6 = ipv6;
        this.localAddr = localAddr;
        this.localAddr16 = localAddr16;
    }

    @Override
    public HeaderViews views() {
        return views;
    }

    @Override
    public ByteBuf startPacket(QueuePair qp, Opcode op, int payload, boolean se, boolean ackReq, int psn) {
        return start(op, payload, se, ackReq, qp.destQpn, psn);
    }

    @Override
    public void finishPacket(QueuePair qp, ByteBuf b) {
        b.writeZero(b.writableBytes()); // pad and the ICRC field: the buffer was sized to end exactly there
        send(qp, b, qp.destAddressInt, qp.destAddress16, qp.destPort, qp.destSocket, port.gso());
    }

    @Override
    public ByteBuf startUdPacket(Opcode op, int payload, boolean se, int destQpn, int psn) {
        return start(op, payload, se, false, destQpn, psn);
    }

    @Override
    public void finishUdPacket(QueuePair qp, ByteBuf b, AddressHandle ah) {
        b.writeZero(b.writableBytes());
        send(qp, b, ah.addressInt, ah.address16, ah.udpPort(), ah.socket, null); // one datagram each, never batched
    }

    /** A packet allocated at its final size (headers, payload, pad, ICRC; pooled, never grown), its BTH written. */
    private ByteBuf start(Opcode op, int payload, boolean se, boolean ackReq, int destQpn, int psn) {
        int pad = RoceV2.padFor(payload);
        int length = op.headerLength() + payload + pad + RoceV2.ICRC_LENGTH;
        ByteBuf b = alloc.directBuffer(length, length);
        bth.wrap(b, 0).write(op.code(), se, false, pad, RoceV2.DEFAULT_PKEY, destQpn, ackReq, psn);
        b.writerIndex(op.headerLength());
        return b;
    }

    /**
     * Stamps the ICRC for the destination (IPv4: for our address, DF and the ID the packet will leave with; IPv6:
     * over the masked IPv6 pseudo-header), counts, records and queues the datagram ({@code batcher} null: alone).
     */
    private void send(QueuePair qp, ByteBuf b, int dst, byte[] dst16, int dport, InetSocketAddress to, GsoBatcher batcher) {
        int len = b.writerIndex();
        int localPort = port.localPort();
        int ipId = batcher == null ? 0 : batcher.position(to, len);
        if (ipv6) {
            icrc.writeIpv6(localAddr16, dst16, localPort, dport, b, 0, len);
        } else {
            icrc.writeIpv4(localAddr, dst, ipId, Icrc.IPV4_DF, localPort, dport, b, 0, len);
        }
        counters.packetsOut++;
        counters.bytesOut += len;
        qp.counters.packetsOut++;
        qp.counters.bytesOut += len;
        if (pcap.on()) {
            if (ipv6) pcap.record6(localAddr16, localPort, dst16, dport, b, 0, len);
            else pcap.record4(localAddr, localPort, dst, dport, ipId, b, 0, len);
        }
        port.write(b, to, batcher != null);
    }
}
