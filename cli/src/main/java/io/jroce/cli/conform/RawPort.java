package io.jroce.cli.conform;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.DatagramPacket;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.unix.IntegerUnixChannelOption;
import io.jroce.wire.Icrc;
import io.jroce.wire.pcap.PcapWriter;

import java.io.Closeable;
import java.io.IOException;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The tester's own RoCE UDP socket: it sends datagrams it built byte by byte and hands every datagram that
 * arrives to the case that waits for it. Bound to the local address and the RoCE port, since a peer sends its
 * responses to our GID on UDP port 4791 (RoCEv2, IBTA Annex A17). With the epoll transport the socket asks
 * for {@code IP_PMTUDISC_DO}, so the kernel writes IPv4 ID 0 and DF, which our ICRCs assume; what arrives is
 * bounded ({@value #QUEUE} datagrams kept, the rest counted as overflow).
 */
final class RawPort implements Closeable {
    static final int QUEUE = 4096;
    private static final IntegerUnixChannelOption IP_MTU_DISCOVER = new IntegerUnixChannelOption("IP_MTU_DISCOVER", 0, 10);
    private static final IntegerUnixChannelOption IPV6_MTU_DISCOVER = new IntegerUnixChannelOption("IPV6_MTU_DISCOVER", 41, 23);
    private static final int PMTUDISC_DO = 2;

    /** One datagram as it arrived: its bytes and its source. */
    record Datagram(byte[] bytes, InetSocketAddress from) {
    }

    private final EventLoopGroup group;
    private final Channel channel;
    private final BlockingQueue<Datagram> inbox = new ArrayBlockingQueue<>(QUEUE);
    private final AtomicLong overflow = new AtomicLong();
    private final AtomicLong received = new AtomicLong();
    private final InetSocketAddress local;
    private long sent;
    private volatile PcapWriter pcap;
    private volatile String captureFailed;

    RawPort(InetAddress bind, int port) throws IOException {
        boolean epoll = Epoll.isAvailable();
        group = new MultiThreadIoEventLoopGroup(1, epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory());
        Bootstrap b = new Bootstrap().group(group)
                .channel(epoll ? EpollDatagramChannel.class : NioDatagramChannel.class)
                .handler(new SimpleChannelInboundHandler<DatagramPacket>() {
                    @Override
                    protected void channelRead0(ChannelHandlerContext ctx, DatagramPacket p) {
                        ByteBuf c = p.content();
                        byte[] bytes = new byte[c.readableBytes()];
                        c.getBytes(c.readerIndex(), bytes);
                        received.incrementAndGet();
                        record(bytes, p.sender(), local, true);
                        if (!inbox.offer(new Datagram(bytes, p.sender()))) overflow.incrementAndGet();
                    }
                });
        if (epoll) {
            if (bind instanceof Inet6Address) b.option(IPV6_MTU_DISCOVER, PMTUDISC_DO);
            else b.option(IP_MTU_DISCOVER, PMTUDISC_DO);
        }
        try {
            channel = b.bind(new InetSocketAddress(bind, port)).sync().channel();
        } catch (Exception e) {
            group.shutdownGracefully(0, 100, TimeUnit.MILLISECONDS);
            throw new IOException("cannot bind UDP " + bind.getHostAddress() + ":" + port + " for our RoCE packets: " + e.getMessage()
                    + " (is a RoCE device or another jroce using that address and port?)", e);
        }
        local = (InetSocketAddress) channel.localAddress();
    }

    InetSocketAddress local() {
        return local;
    }

    void send(byte[] datagram, InetSocketAddress to) throws IOException {
        try {
            channel.writeAndFlush(new DatagramPacket(Unpooled.wrappedBuffer(datagram), to)).sync();
        } catch (Exception e) {
            throw new IOException("cannot send to " + to + ": " + e.getMessage(), e);
        }
        sent++;
        record(datagram, local, to, false);
    }

    /** {@code --pcap}: keep every datagram sent and received from now on. */
    void capture(PcapWriter w) {
        pcap = w;
    }

    /**
     * One datagram as an Ethernet frame. Ours left with IPv4 ID 0 and DF; for the peer's the ID is the one its ICRC
     * was computed over (solved as the endpoint's receiver does), so Wireshark's ICRC check agrees.
     */
    private void record(byte[] d, InetSocketAddress from, InetSocketAddress to, boolean inbound) {
        PcapWriter w = pcap;
        if (w == null) return;
        try {
            ByteBuf b = Unpooled.wrappedBuffer(d);
            long now = TimeUnit.MILLISECONDS.toNanos(System.currentTimeMillis());
            if (from.getAddress() instanceof Inet4Address f4 && to.getAddress() instanceof Inet4Address t4) {
                int id = inbound ? Math.max(0, new Icrc().verifyIpv4UnknownId(Packet.ipv4(f4), Packet.ipv4(t4), from.getPort(), to.getPort(),
                        b, 0, d.length)) : 0;
                w.writeUdpIpv4(now, Packet.ipv4(f4), from.getPort(), Packet.ipv4(t4), to.getPort(), id, Icrc.IPV4_DF, b, 0, d.length);
            } else {
                w.writeUdpIpv6(now, from.getAddress().getAddress(), from.getPort(), to.getAddress().getAddress(), to.getPort(), b, 0, d.length);
            }
        } catch (IOException | RuntimeException e) {
            captureFailed = e.getMessage();
            pcap = null;
        }
    }

    /** Why the capture stopped early, or null. */
    String captureFailed() {
        return captureFailed;
    }

    /**
     * The next datagram that arrives before {@code deadline} ({@link System#nanoTime}), or null once it has passed;
     * an interrupt ends the wait as an IOException.
     */
    Datagram pollUntil(long deadline) throws IOException {
        long left = deadline - System.nanoTime();
        if (left <= 0) return null;
        try {
            return poll(left);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted");
        }
    }

    /** The next datagram within {@code nanos}, or null. */
    Datagram poll(long nanos) throws InterruptedException {
        return nanos <= 0 ? inbox.poll() : inbox.poll(nanos, TimeUnit.NANOSECONDS);
    }

    /** Forgets what arrived so far (late answers to an earlier case). Returns how many. */
    int drain() {
        int n = 0;
        while (inbox.poll() != null) n++;
        return n;
    }

    long sent() {
        return sent;
    }

    long received() {
        return received.get();
    }

    long overflow() {
        return overflow.get();
    }

    @Override
    public void close() {
        channel.close().awaitUninterruptibly(1, TimeUnit.SECONDS);
        group.shutdownGracefully(0, 100, TimeUnit.MILLISECONDS).awaitUninterruptibly(2, TimeUnit.SECONDS);
    }
}
