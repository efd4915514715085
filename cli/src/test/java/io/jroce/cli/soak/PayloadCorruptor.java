package io.jroce.cli.soak;

import io.jroce.endpoint.DatagramFilter;
import io.jroce.wire.BthView;
import io.jroce.wire.Icrc;
import io.jroce.wire.Opcode;
import io.jroce.wire.Operation;
import io.jroce.wire.RoceV2;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.socket.DatagramPacket;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A receive filter that changes one payload byte of one packet of one operation and writes a correct ICRC over
 * the change: what a transport that placed a wrong byte, or a path that corrupted it behind a matching CRC,
 * would hand the responder. Its first packet of that operation with a payload picks the target (destination QP
 * and PSN); every copy of that packet (a retransmission carries the same bytes at the same PSN) is changed the
 * same way, so whichever copy the receiver accepts places the wrong byte, exactly once.
 */
@ChannelHandler.Sharable
final class PayloadCorruptor extends ChannelDuplexHandler implements DatagramFilter {
    private final Operation operation;
    private final InetAddress local;
    private final Icrc icrc = new Icrc();
    private final BthView bth = new BthView();
    private int targetQp = -1;
    private int targetPsn = -1;
    final AtomicInteger corrupted = new AtomicInteger();

    /** Corrupts packets of {@code operation} arriving at the device on {@code local} (IPv4, UDP 4791). */
    PayloadCorruptor(Operation operation, InetAddress local) {
        this.operation = operation;
        this.local = local;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
        if (msg instanceof DatagramPacket p && p.sender() != null && p.sender().getAddress() instanceof Inet4Address) {
            ByteBuf b = p.content();
            int len = b.readableBytes();
            if (len >= BthView.LENGTH + RoceV2.ICRC_LENGTH) {
                bth.wrap(b, b.readerIndex());
                Opcode op = Opcode.of(bth.opcode());
                if (op != null && op.operation() == operation && op.hasPayload()) {
                    int payload = len - op.headerLength() - bth.padCount() - RoceV2.ICRC_LENGTH;
                    if (payload > 0 && matches(bth.destQp(), bth.psn())) {
                        ByteBuf copy = b.copy();
                        int at = op.headerLength() + payload / 2;
                        copy.setByte(at, copy.getByte(at) ^ 0x5A);
                        icrc.writeIpv4(ipv4(p.sender().getAddress()), ipv4(local), 0, Icrc.IPV4_DF, p.sender().getPort(), RoceV2.UDP_PORT,
                                copy, 0, len);
                        corrupted.incrementAndGet();
                        DatagramPacket bad = p.replace(copy);
                        p.release();
                        ctx.fireChannelRead(bad);
                        return;
                    }
                }
            }
        }
        ctx.fireChannelRead(msg);
    }

    private synchronized boolean matches(int qp, int psn) {
        if (targetQp < 0) {
            targetQp = qp;
            targetPsn = psn;
        }
        return qp == targetQp && psn == targetPsn;
    }

    private static int ipv4(InetAddress a) {
        return ByteBuffer.wrap(a.getAddress()).getInt();
    }
}
