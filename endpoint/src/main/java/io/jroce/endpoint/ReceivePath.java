package io.jroce.endpoint;

import io.jroce.wire.BthView;
import io.jroce.wire.Icrc;
import io.jroce.wire.Opcode;
import io.jroce.wire.Problem;
import io.jroce.wire.RoceV2;
import io.jroce.wire.RocePacket;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.DatagramPacket;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Arrays;

/**
 * A shard's receive path (rdma_rxe's rxe_recv.c): every datagram the socket reads is checked and dispatched here,
 * in this order: its sender against the device's allowed networks, its length (a datagram as long as the receive slot may have been cut), its sender's family, the
 * shard that owns its destination QP (handed over when another does), the ICRC, the decode, then by opcode: a CNP
 * to its QP's congestion control, UD to {@link UdReceiver}, RC to its QP after the QP type, the sender and the
 * P_Key are checked; requests to the responder, responses to the completer. Whatever fails a check is dropped and
 * counted by reason ({@link DropReason}); nothing here throws on bad input. Loop only.
 */
final class ReceivePath {
    private static final Logger log = LoggerFactory.getLogger(ReceivePath.class);
    private final Transport shard;
    private final QpTable qps;
    private final UdReceiver udReceiver;
    private final DeviceCounters counters;
    private final PcapTap pcap;
    /** The networks the device admits datagrams from ({@link DeviceConfig#allow}). */
    private final AccessList access;
    private final boolean ipv6;
    private final int localAddr;
    private final byte[] localAddr16;
    private final Icrc icrc = new Icrc();
    private final RocePacket rx = new RocePacket();
    /** The last IPv6 sender's bytes: one copy per change of sender, not per packet. */
    private byte[] lastSource16 = new byte[16];
    private final Inbound inbound = new Inbound();

    ReceivePath(Transport shard, QpTable qps, UdReceiver udReceiver, DeviceCounters counters, PcapTap pcap, AccessList access,
                boolean ipv6, int localAddr, byte[] localAddr16) {
        this.access = access;
        this.shard = shard;
        this.qps = qps;
        this.udReceiver = udReceiver;
        this.counters = counters;
        this.pcap = pcap;
        this.ipv6 = ipv6;
        this.localAddr = localAddr;
        this.localAddr16 = localAddr16;
    }

    /** The socket pipeline's handler: one per shard. */
    Inbound handler() {
        return inbound;
    }

    final class Inbound extends SimpleChannelInboundHandler<DatagramPacket> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, DatagramPacket packet) {
            receive(packet);
        }

        /** The end of a receive burst: the coalesced ACKs of its requests leave first (in {@link Transport#flushNow}). */
        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            shard.flushNow();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            // a failed sendmmsg (ENOBUFS, EPERM from a firewall) loses datagrams; retransmission recovers them
            counters.sendErrors++;
            if (log.isDebugEnabled()) log.debug("socket error: {}", cause.toString());
        }
    }

    /** A datagram Netty read (NIO, UDP GRO, or while a datagram filter is installed). */
    private void receive(DatagramPacket packet) {
        ByteBuf buf = packet.content();
        InetSocketAddress sender = packet.sender();
        InetAddress from = sender.getAddress();
        if (from instanceof Inet4Address source) {
            // Inet4Address.hashCode() is the address as a big-endian int: no byte[] copy per packet
            receive(buf, buf.readerIndex(), buf.readableBytes(), source.hashCode(), null, sender.getPort());
        } else if (from instanceof Inet6Address source6) {
            // Inet6Address.equals compares the 16 bytes without copying them: one copy per change of sender
            if (!source6.equals(lastFrom6)) {
                lastFrom6 = source6;
                lastFrom16 = source6.getAddress();
            }
            receive(buf, buf.readerIndex(), buf.readableBytes(), 0, lastFrom16, sender.getPort());
        } else {
            counters.packetsIn++;
            counters.drop(DropReason.WRONG_SOURCE);
        }
    }

    /** The last IPv6 sender of a datagram Netty read, and its bytes. */
    private Inet6Address lastFrom6;
    private byte[] lastFrom16;

    /**
     * One datagram, {@code len} bytes at {@code off} of {@code buf}, from {@code src4} (an IPv4 sender, {@code src16}
     * null) or from the 16 bytes of {@code src16} (an IPv6 sender; read during this call only), UDP port
     * {@code srcPort}. Allocates nothing unless the IPv6 sender changed.
     */
    void receive(ByteBuf buf, int off, int len, int src4, byte[] src16, int srcPort) {
        counters.packetsIn++;
        counters.bytesIn += len;
        if (!admitted(src4, src16)) return; // before anything reads the datagram
        if (len >= UdpPort.SLOT) {
            counters.drop(DropReason.OVERSIZE); // may have been cut to the slot by the kernel
            return;
        }
        int srcAddr = 0;
        if (ipv6) {
            if (src16 == null) {
                counters.drop(DropReason.WRONG_SOURCE);
                return;
            }
            // a new array only when the sender changes: the old one may still be referenced
            if (!Arrays.equals(src16, 0, 16, lastSource16, 0, 16)) lastSource16 = Arrays.copyOf(src16, 16);
        } else {
            if (src16 != null) {
                counters.drop(DropReason.WRONG_SOURCE);
                return;
            }
            srcAddr = src4;
        }
        ShardRouter router = shard.router();
        if (router != null && len >= BthView.LENGTH) {
            // BTH bytes 5..7: the destination QP, whose shard runs it (a malformed one goes somewhere and is dropped there)
            if (router.handOffIfNotOurs(buf.getUnsignedMedium(off + 5), buf, off, len, srcAddr, lastSource16, srcPort)) return;
        }
        process(buf, off, len, srcAddr, srcPort);
    }

    /**
     * The sender against the device's allowed networks. An IPv6 sender is decided once per change of sender; an IPv4
     * sender is checked without a copy.
     */
    private boolean admitted(int src4, byte[] src16) {
        if (access.allowsAll()) return true;
        if (src16 == null) return access.admit4(src4, counters); // counts and logs a refusal
        if (lastChecked16 == null || !Arrays.equals(src16, 0, 16, lastChecked16, 0, 16)) {
            lastChecked16 = Arrays.copyOf(src16, 16);
            lastChecked16Allowed = access.allows16(lastChecked16);
        }
        return lastChecked16Allowed || access.admit16(src16, counters);
    }

    /** The last IPv6 sender {@link #admitted} checked, and its verdict. */
    private byte[] lastChecked16;
    private boolean lastChecked16Allowed;

    /** The receive path as the socket's direct reader's sink ({@link DirectReceive}). */
    DirectReceive.Sink directSink() {
        return new DirectReceive.Sink() {
            @Override
            public void datagram(ByteBuf buf, int off, int len, int src4, byte[] src16, int srcPort) {
                receive(buf, off, len, src4, src16, srcPort);
            }

            @Override
            public void burstEnd() {
                shard.flushNow();
            }

            @Override
            public void failed(Throwable cause) {
                inbound.exceptionCaught(null, cause);
            }
        };
    }

    /**
     * The IPv6 sender of a handed-over datagram, whose 16 bytes start at {@code off} of {@code b}: as on the direct
     * path, a new array only when the sender changes (the old one may still be referenced).
     */
    void source16(ByteBuf b, int off) {
        boolean same = true;
        for (int i = 0; i < 16 && same; i++) same = b.getByte(off + i) == lastSource16[i];
        if (!same) {
            lastSource16 = new byte[16];
            b.getBytes(off, lastSource16);
        }
    }

    /**
     * The rest of the receive path, on the shard that owns the destination QP: the ICRC, the pcap record,
     * decoding and dispatch. The IPv6 sender is in {@link #lastSource16}.
     */
    void process(ByteBuf buf, int off, int len, int srcAddr, int srcPort) {
        int ipId = 0;
        boolean icrcOk;
        int localPort = shard.localPort();
        if (ipv6) {
            // IPv6: nothing the socket hides is covered (IBA A17.4.1; rxe_icrc.c rxe_icrc_hdr), so the check is exact
            icrcOk = icrc.verifyIpv6(lastSource16, localAddr16, srcPort, localPort, buf, off, len);
            if (pcap.on()) pcap.record6(lastSource16, srcPort, localAddr16, localPort, buf, off, len);
        } else {
            // a UDP socket hides the IPv4 header: solve the ICRC for the sender's ID (wire Icrc javadoc). RoCEv2
            // senders set DF (rxe always does, and so do we); not retrying with DF clear keeps every single-bit
            // error detectable (a DF-clear retry lets a few single-bit flips through).
            ipId = len >= 16 ? icrc.verifyIpv4UnknownId(srcAddr, localAddr, srcPort, localPort, buf, off, len, false) : -1;
            icrcOk = ipId >= 0;
            if (pcap.on()) pcap.record4(srcAddr, srcPort, localAddr, localPort, Math.max(ipId, 0), buf, off, len);
        }
        Problem problem = rx.decode(buf, off, len);
        if (problem != Problem.NONE) {
            counters.drop(problem == Problem.UNKNOWN_OPCODE ? DropReason.UNSUPPORTED_OPCODE : DropReason.MALFORMED);
            return;
        }
        if (!icrcOk) {
            counters.drop(DropReason.ICRC);
            return;
        }
        Opcode op = rx.opcode();
        if (op == Opcode.CNP) {
            onCnp(srcAddr);
            return;
        }
        if (op.isUd()) {
            // UD: no connected peer to check the source against; UdReceiver checks P_Key, Q_Key and state
            shard.out().beforeMemoryWrite(); // a UD SEND is scattered into registered memory
            udReceiver.receive(rx, ipv6 ? lastSource16 : null, srcAddr, srcPort, ipId, len);
            return;
        }
        if (!op.isRc()) {
            counters.drop(DropReason.UNSUPPORTED_OPCODE);
            return;
        }
        QueuePair qp = qps.get(rx.destQp());
        if (qp == null) {
            counters.drop(DropReason.UNKNOWN_QP);
            return;
        }
        if (qp.type() != QpType.RC) {
            counters.drop(DropReason.UNSUPPORTED_OPCODE); // an RC opcode for a UD QP
            return;
        }
        if (!fromPeer(qp, srcAddr)) {
            counters.drop(DropReason.WRONG_SOURCE);
            return;
        }
        // IBA 9.6.1.1 / 10.9 (rdma_rxe rxe_recv.c check_keys): a P_Key of another partition is dropped silently
        if (!RoceV2.pkeyMatch(rx.pkey(), RoceV2.DEFAULT_PKEY)) {
            counters.drop(DropReason.PKEY);
            return;
        }
        qp.counters.packetsIn++;
        qp.counters.bytesIn += len;
        if (op.isRequest()) {
            qp.responder.onRequest(rx);
        } else {
            qp.completer.onResponse(rx);
        }
    }

    /** Whether the datagram came from {@code qp}'s connected peer (rxe_recv.c check_addr). */
    private boolean fromPeer(QueuePair qp, int srcAddr) {
        return ipv6 ? Arrays.equals(qp.destAddress16, lastSource16) : qp.destAddressInt == srcAddr;
    }

    /** A RoCEv2 CNP (annex A17.9.3): its DestQP is our QP whose traffic congested the peer's queue. */
    private void onCnp(int srcAddr) {
        QueuePair qp = qps.get(rx.destQp());
        if (qp == null) {
            counters.drop(DropReason.UNKNOWN_QP);
            return;
        }
        if (!fromPeer(qp, srcAddr)) {
            counters.drop(DropReason.WRONG_SOURCE);
            return;
        }
        qp.counters.packetsIn++;
        qp.completer.onCnp();
    }
}
