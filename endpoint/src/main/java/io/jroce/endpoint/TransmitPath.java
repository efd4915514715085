package io.jroce.endpoint;

import io.jroce.wire.BthView;
import io.jroce.wire.Icrc;
import io.jroce.wire.Opcode;
import io.jroce.wire.RoceV2;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;

/**
 * A shard's transmit path (the send half of rdma_rxe's rxe_net.c, with rxe_icrc.c's stamp): a packet is allocated
 * at its final size from the pooled direct allocator (headers, payload, pad, ICRC; never grown) with its BTH
 * written; the engine writes the rest; finishing it stamps the ICRC for the addresses and the IPv4 ID it will
 * leave with (0, or k as segment k of a GSO super-datagram), counts it, records it and queues it on the socket.
 *
 * <p><b>Payload from registered memory.</b> The engines hand a packet's payload over as region pieces
 * ({@link #payload}). While the socket gathers ({@link UdpPort#gather}: epoll, no datagram filter, no GSO) and no
 * capture is recording, a piece of at least {@link #GATHER_MIN} bytes is not copied: its place in the packet buffer
 * is skipped, the ICRC is computed over headers, pieces and pad in order ({@link Icrc#beginIpv4}), and the datagram
 * goes to {@link GatherSend} with the pieces, which the kernel reads from the region at the flush. Otherwise, and
 * for a packet's pieces past {@link #MAX_PIECES}, the bytes are copied in as before. The wire bytes are the same
 * either way.
 *
 * <p>Loop only; the flyweights, the ICRC state and the region views are this path's scratch.
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
    /** The gathering sender, or null (every payload is copied). */
    private final GatherSend gather;

    /** Below this a payload piece is copied (chosen, not measured: a small copy is cheap, two more iovecs are not free). */
    static final int GATHER_MIN = 256;
    /** Region pieces one packet may leave in the regions (more SGEs than this: the rest are copied). */
    static final int MAX_PIECES = 16;
    /** The packet whose payload may be left in the regions (started while gathering), or null. */
    private ByteBuf open;
    private int staged;
    private final MemoryRegion[] stagedMr = new MemoryRegion[MAX_PIECES];
    private final int[] stagedIndex = new int[MAX_PIECES];
    private final int[] stagedLen = new int[MAX_PIECES];
    private final int[] stagedPos = new int[MAX_PIECES];
    /**
     * This thread's views of the regions it reads for the ICRC (a region's own buffer is shared by every shard, and
     * a view's position moves), by region identity; a region not here gets a new view, once.
     */
    private final MemoryRegion[] viewOf = new MemoryRegion[8];
    private final ByteBuffer[] regionViews = new ByteBuffer[8];

    TransmitPath(UdpPort port, ByteBufAllocator alloc, DeviceCounters counters, PcapTap pcap, boolean ipv6, int localAddr,
                 byte[] localAddr16) {
        this.port = port;
        this.alloc = alloc;
        this.counters = counters;
        this.pcap = pcap;
        this.ipv6 = ipv6;
        this.localAddr = localAddr;
        this.localAddr16 = localAddr16;
        this.gather = port.gather();
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
        send(qp, b, qp.destAddressInt, qp.destAddress16, qp.destPort, qp.destSocket, true);
    }

    @Override
    public ByteBuf startUdPacket(Opcode op, int payload, boolean se, int destQpn, int psn) {
        return start(op, payload, se, false, destQpn, psn);
    }

    @Override
    public void finishUdPacket(QueuePair qp, ByteBuf b, AddressHandle ah) {
        b.writeZero(b.writableBytes());
        send(qp, b, ah.addressInt, ah.address16, ah.udpPort(), ah.socket, false); // one datagram each, never batched
    }

    /** A packet allocated at its final size (headers, payload, pad, ICRC; pooled, never grown), its BTH written. */
    private ByteBuf start(Opcode op, int payload, boolean se, boolean ackReq, int destQpn, int psn) {
        int pad = RoceV2.padFor(payload);
        int length = op.headerLength() + payload + pad + RoceV2.ICRC_LENGTH;
        ByteBuf b = alloc.directBuffer(length, length);
        bth.wrap(b, 0).write(op.code(), se, false, pad, RoceV2.DEFAULT_PKEY, destQpn, ackReq, psn);
        b.writerIndex(op.headerLength());
        open = gather != null && payload >= GATHER_MIN && !pcap.on() && b.hasMemoryAddress() ? b : null;
        staged = 0;
        return b;
    }

    @Override
    public void beforeMemoryWrite() {
        if (gather != null && gather.pieces() > 0) gather.flush();
    }

    @Override
    public void payload(ByteBuf b, MemoryRegion mr, int offset, int len) {
        ByteBuf mem = mr.mem();
        if (b == open && len >= GATHER_MIN && staged < MAX_PIECES && mem.hasMemoryAddress()) {
            int at = b.writerIndex();
            stagedMr[staged] = mr;
            stagedIndex[staged] = offset;
            stagedLen[staged] = len;
            stagedPos[staged] = at;
            staged++;
            b.writerIndex(at + len); // the place stays unwritten: the socket reads these bytes from the region
        } else {
            b.writeBytes(mem, offset, len);
        }
    }

    /**
     * Stamps the ICRC for the destination (IPv4: for our address, DF and the ID the packet will leave with; IPv6:
     * over the masked IPv6 pseudo-header), counts, records and queues the datagram ({@code batched}: it may join a
     * GSO run; otherwise it leaves alone).
     */
    private void send(QueuePair qp, ByteBuf b, int dst, byte[] dst16, int dport, InetSocketAddress to, boolean batched) {
        GsoBatcher batcher = batched ? port.gso() : null;
        int len = b.writerIndex();
        int localPort = port.localPort();
        int pieces = b == open ? staged : 0;
        open = null;
        if (pieces > 0 && pcap.on()) pieces = fillIn(b, pieces); // a capture started since: it records whole packets
        int ipId = gather != null ? (batched ? gather.position(to, qp.destQpn, len, pieces) : 0)
                : batcher == null ? 0 : batcher.position(to, qp.destQpn, len);
        if (pieces > 0) {
            stampPieces(b, len, pieces, ipId, dst, dst16, dport);
        } else if (ipv6) {
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
        if (gather != null) {
            gather.add(b, to, dst, ipv6 ? dst16 : null, qp.destQpn, stagedMr, stagedIndex, stagedLen, stagedPos, pieces, batched);
            for (int i = 0; i < pieces; i++) stagedMr[i] = null;
        } else {
            port.write(b, to, qp.destQpn, batcher != null);
        }
    }

    /** The ICRC over the packet buffer's own bytes and the staged region pieces in their places, in order. */
    private void stampPieces(ByteBuf b, int len, int pieces, int ipId, int dst, byte[] dst16, int dport) {
        int localPort = port.localPort();
        if (ipv6) {
            icrc.beginIpv6(localAddr16, dst16, localPort, dport, len, b, 0);
        } else {
            icrc.beginIpv4(localAddr, dst, ipId, Icrc.IPV4_DF, localPort, dport, len, b, 0);
        }
        int at = BthView.LENGTH;
        for (int i = 0; i < pieces; i++) {
            if (stagedPos[i] > at) icrc.update(b, at, stagedPos[i] - at);
            int from = stagedIndex[i];
            ByteBuffer v = view(stagedMr[i]);
            v.limit(from + stagedLen[i]).position(from);
            icrc.update(v);
            at = stagedPos[i] + stagedLen[i];
        }
        int end = len - RoceV2.ICRC_LENGTH;
        if (end > at) icrc.update(b, at, end - at);
        b.setIntLE(end, icrc.value());
    }

    /** Copies the staged pieces into their places: the packet is whole. Returns 0, the pieces left. */
    private int fillIn(ByteBuf b, int pieces) {
        for (int i = 0; i < pieces; i++) {
            b.setBytes(stagedPos[i], stagedMr[i].mem(), stagedIndex[i], stagedLen[i]);
            stagedMr[i] = null;
        }
        return 0;
    }

    /** This thread's view of {@code mr}'s memory (a region's buffer index is the view's position). */
    private ByteBuffer view(MemoryRegion mr) {
        int h = System.identityHashCode(mr) & (regionViews.length - 1);
        if (viewOf[h] != mr) {
            ByteBuf mem = mr.mem();
            regionViews[h] = mem.nioBuffer(0, mem.capacity());
            viewOf[h] = mr;
        }
        ByteBuffer v = regionViews[h];
        v.clear();
        return v;
    }
}
