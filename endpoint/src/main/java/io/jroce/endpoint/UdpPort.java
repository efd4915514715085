package io.jroce.endpoint;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.FixedRecvByteBufAllocator;
import io.netty.channel.epoll.EpollChannelOption;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.socket.DatagramPacket;
import io.netty.channel.socket.SocketProtocolFamily;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.unix.Errors;
import io.netty.channel.unix.IntegerUnixChannelOption;
import io.netty.channel.unix.SegmentedDatagramPacket;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

/**
 * A shard's UDP socket (rdma_rxe's rxe_net.c, the socket half): its options, batched receive ({@code recvmmsg}) or
 * GRO, batched send ({@code sendmmsg}) with optional UDP GSO, and the flush that puts a cycle's datagrams on the
 * wire.
 *
 * <p>The socket has the address family of the device's address. IPv4: it is unconnected with
 * {@code IP_MTU_DISCOVER = IP_PMTUDISC_DO}, so the kernel writes IPv4 ID 0 and DF on every datagram and the
 * ICRC computed for ID 0 is what is on the wire: the ICRC covers the IPv4 Identification (IBA RoCEv2 annex
 * A17.4.1; rxe_icrc.c rxe_icrc_hdr masks only TOS, TTL and the header checksum); on receive the ID is solved for.
 *
 * <p>IPv6: the pseudo-header masks traffic class, flow label and hop limit and covers nothing else the socket
 * hides, so the ICRC is computed and checked exactly. {@code IPV6_MTU_DISCOVER = IPV6_PMTUDISC_DO}, the IPv6 twin
 * of the IPv4 setting: a datagram larger than the path MTU fails to send (EMSGSIZE, retransmission) rather than
 * leaving as fragments no RoCE NIC reassembles. {@code UDP_NO_CHECK6_RX} accepts a zero UDP checksum, which
 * rdma_rxe sends (rxe_net.c prepare_udp_hdr writes 0 over IPv6 too); the kernel still writes a correct checksum on
 * what we send and still drops a wrong non-zero one.
 *
 * <p>UDP GSO (off by default; {@link DeviceConfig#gso}, with epoll): the packets of a flush batch that go to one
 * peer QP with one length leave as one {@code UDP_SEGMENT} super-datagram; segment k leaves with IPv4 ID k, so its
 * ICRC is computed for ID k. With gathered send the runs are {@link GatherSend}'s, their payload in the registered
 * memory; without it {@link GsoBatcher} hands each run to Netty as a composite of the packets' buffers. Off while a
 * datagram filter is installed, so that fault injection keeps deciding per RoCE packet, and off for the rest of the
 * device's life after a super-datagram fails with an error that says the route cannot segment (the packets it held
 * are retransmitted as plain datagrams).
 *
 * <p>Gathered send (on by default; {@link DeviceConfig#zeroCopy}, with epoll, without a datagram filter): every
 * datagram of a flush leaves through {@link GatherSend}, a packet's payload as pieces of the registered memory it
 * comes from rather than copied into the packet buffer.
 *
 * <p>UDP GRO (off by default; {@link DeviceConfig#gro}, with epoll): the socket reads with {@code recvmsg} into
 * 64 KiB buffers ({@link GroRecvAllocator}) instead of {@code recvmmsg} into {@link #SLOT}-byte slots; Netty hands
 * each segment of a coalesced datagram to the pipeline as its own datagram, and the receive path's ICRC solve finds
 * each one's IPv4 ID (k for segment k of a GSO send, 0 for a plain datagram).
 */
final class UdpPort {
    private static final Logger log = LoggerFactory.getLogger(UdpPort.class);
    /** Receive slot per datagram: the largest RoCE packet (4096 payload + 32 header + 4 ICRC) fits with room. */
    static final int SLOT = 4200;
    static final int BATCH = 64;
    private static final IntegerUnixChannelOption IP_MTU_DISCOVER = new IntegerUnixChannelOption("IP_MTU_DISCOVER", 0, 10);
    private static final int IP_PMTUDISC_DO = 2;
    /** The ECN field's ECT(0) codepoint (RFC 3168 section 5), in the TOS / traffic class byte. */
    static final int ECT0 = 0x02;
    /** IPPROTO_IPV6 (41), IPV6_MTU_DISCOVER (23) = IPV6_PMTUDISC_DO (2): linux/in6.h. */
    private static final IntegerUnixChannelOption IPV6_MTU_DISCOVER = new IntegerUnixChannelOption("IPV6_MTU_DISCOVER", 41, 23);
    private static final int IPV6_PMTUDISC_DO = 2;
    /** SOL_SOCKET (1), SO_RCVBUFFORCE (33): asm-generic/socket.h; past net.core.rmem_max, with CAP_NET_ADMIN. */
    private static final IntegerUnixChannelOption SO_RCVBUFFORCE = new IntegerUnixChannelOption("SO_RCVBUFFORCE", 1, 33);
    /** SOL_UDP (17), UDP_NO_CHECK6_RX (102): linux/udp.h. */
    private static final IntegerUnixChannelOption UDP_NO_CHECK6_RX = new IntegerUnixChannelOption("UDP_NO_CHECK6_RX", 17, 102);

    private final DeviceAgent agent;
    private final Channel channel;
    private final boolean epoll;
    private final int localPort;
    /** The receive buffer the kernel granted (SO_RCVBUF as read back: the doubled value, which counts skb overhead). */
    private final int receiveBufferBytes;
    private final DeviceCounters counters;
    /** Sends a flush's only datagram without Netty's per-datagram garbage ({@link DirectSend}), or null. */
    private final DirectSend directSend;
    /**
     * Sends every datagram with the payload gathered from registered memory ({@link GatherSend}), or null: then
     * packets go to the channel (or {@link #directSend}) whole.
     */
    private final GatherSend gather;
    /** The first datagram since the last flush, held back while it may be the only one (with {@link #directSend}). */
    private ByteBuf held;
    private InetSocketAddress heldTo;
    /** Datagrams written to the channel since the last flush. */
    private int written;
    /** The socket's reader when it is not Netty's channel ({@link DirectReceive}), or null. */
    private final DirectReceive direct;
    /** The reused envelopes of plain datagrams, or null (a datagram filter is installed: it gets plain ones). */
    private final SendEnvelope.Pool envelopes;
    /** Non-null while UDP GSO is in use: groups equal-length packets to one peer into super-datagrams. */
    private GsoBatcher gso;
    private final ChannelFutureListener gsoWritten = f -> {
        if (!f.isSuccess()) gsoFailed(f.cause());
    };

    /**
     * Binds {@code port} on the device's address (with {@code SO_REUSEPORT} when {@code shared}, as the shards of
     * one device are) on {@code agent}'s loop, with {@code inbound} as the pipeline's handler; with {@code hook}
     * (epoll), {@code direct} reads the socket instead of Netty's channel.
     */
    UdpPort(DeviceConfig config, DeviceAgent agent, boolean epoll, boolean ipv6, boolean shared, int port, ByteBufAllocator alloc,
            DeviceCounters counters, ChannelHandler inbound, DirectReceive.Hook hook, DirectReceive direct) throws IOException {
        this.agent = agent;
        this.epoll = epoll;
        this.direct = direct;
        this.envelopes = config.filter == null ? new SendEnvelope.Pool(agent.loop()) : null;
        this.counters = counters;
        // the socket's family is the address's: an IPv4 device gets an AF_INET socket, not a dual-stack one
        SocketProtocolFamily family = ipv6 ? SocketProtocolFamily.INET6 : SocketProtocolFamily.INET;
        Bootstrap b = new Bootstrap()
                .group(agent.loop())
                .channelFactory(() -> {
                    if (!epoll) return new NioDatagramChannel(family);
                    EpollDatagramChannel ch = new EpollDatagramChannel(family);
                    if (hook != null) hook.expect(ch, direct); // its registration on the loop hands EPOLLIN to direct
                    return ch;
                })
                .option(ChannelOption.ALLOCATOR, alloc)
                .option(ChannelOption.SO_RCVBUF, config.socketBufferBytes)
                .option(ChannelOption.SO_SNDBUF, config.socketBufferBytes)
                .option(ChannelOption.IP_TOS, config.ecn ? ECT0 : 0)
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline().addLast("roce", inbound); // the filter comes in goLive()
                    }
                });
        // all shards share the address and port; the kernel picks the socket by the group's program or by 4-tuple hash
        if (epoll && shared) b.option(EpollChannelOption.SO_REUSEPORT, true);
        if (epoll && config.gro) {
            // one recvmsg per datagram, coalesced or not; Netty cuts a coalesced one into a DatagramPacket per
            // segment. No MAX_DATAGRAM_PAYLOAD_SIZE: that would read with recvmmsg, which in Netty 4.2.18 loses the
            // segment size of a coalesced datagram (netty/netty#17492) and would hand it over glued
            b.option(EpollChannelOption.UDP_GRO, true)
                    .option(ChannelOption.RCVBUF_ALLOCATOR, new GroRecvAllocator(counters));
        } else if (epoll) {
            b.option(EpollChannelOption.MAX_DATAGRAM_PAYLOAD_SIZE, SLOT)
                    .option(ChannelOption.RCVBUF_ALLOCATOR, new FixedRecvByteBufAllocator(SLOT * BATCH));
        }
        if (epoll) {
            if (ipv6) {
                b.option(IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO).option(UDP_NO_CHECK6_RX, 1);
            } else {
                b.option(IP_MTU_DISCOVER, IP_PMTUDISC_DO);
            }
        } else {
            b.option(ChannelOption.RCVBUF_ALLOCATOR, new FixedRecvByteBufAllocator(SLOT));
        }
        ChannelFuture bound = b.bind(new InetSocketAddress(config.address, port));
        agent.await(bound, TimeUnit.SECONDS.toNanos(30));
        if (!bound.isSuccess()) {
            Throwable e = bound.cause() != null ? bound.cause() : new IOException("timed out");
            agent.awaitStopped(agent.shutdown());
            throw new IOException("cannot bind UDP " + config.address.getHostAddress() + ":" + port + ": "
                    + e.getMessage() + " (is another node using it, or is the address not local?)", e);
        }
        this.channel = bound.channel();
        this.receiveBufferBytes = receiveBuffer(config.socketBufferBytes);
        // the bound port, which port 0 leaves to the kernel: the ICRC covers the UDP source port
        this.localPort = ((InetSocketAddress) channel.localAddress()).getPort();
        GatherSend gs = null;
        if (epoll && config.zeroCopy && config.filter == null && GatherSend.AVAILABLE) {
            try {
                gs = new GatherSend((EpollDatagramChannel) channel, counters, envelopes, config.gso);
            } catch (Throwable t) {
                log.debug("packets leave whole, their payload copied: {}", t.toString());
            }
        }
        this.gather = gs;
        DirectSend ds = null;
        if (gs == null && epoll && config.filter == null && config.directReceive && DirectReceive.AVAILABLE) {
            try {
                ds = new DirectSend((EpollDatagramChannel) channel, counters);
            } catch (Throwable t) {
                log.debug("a flush's only datagram leaves through Netty's sendto: {}", t.toString());
            }
        }
        this.directSend = ds;
        if (gs == null && config.gso && epoll && config.filter == null
                && EpollDatagramChannel.isSegmentedDatagramPacketSupported()) {
            this.gso = new GsoBatcher(alloc, GsoBatcher.MAX_SEGMENTS, new GsoBatcher.Sink() {
                @Override
                public void single(ByteBuf packet, InetSocketAddress to) {
                    enqueue(packet, to);
                }

                @Override
                public void segmented(CompositeByteBuf packets, int segmentSize, int count, InetSocketAddress to) {
                    counters.gsoDatagrams++;
                    counters.gsoSegments += count;
                    writeHeld();
                    channel.write(new SegmentedDatagramPacket(packets, segmentSize, to), channel.newPromise().addListener(gsoWritten));
                }
            });
        }
    }

    /**
     * Asks for {@code bytes} of receive buffer past net.core.rmem_max (SO_RCVBUFFORCE, which needs CAP_NET_ADMIN;
     * without it the SO_RCVBUF set at bind, capped by rmem_max, stays) and returns what the socket has.
     */
    private int receiveBuffer(int bytes) {
        if (epoll) {
            try {
                channel.config().setOption(SO_RCVBUFFORCE, bytes);
            } catch (RuntimeException e) {
                log.debug("SO_RCVBUFFORCE refused ({}); the receive buffer stays within net.core.rmem_max", e.toString());
            }
        }
        Integer got = channel.config().getOption(ChannelOption.SO_RCVBUF);
        return got == null ? bytes : got;
    }

    /**
     * A super-datagram failed to send: its packets are lost like any failed send (retransmission recovers
     * them). An error that says the route cannot do GSO turns it off for good: EIO (no checksum offload on the
     * route, net/ipv4/udp.c udp_send_skb), EINVAL (a segment above the path MTU, or too many segments),
     * EOPNOTSUPP. Others (EPERM from a firewall, ENOBUFS) hit plain datagrams alike and change nothing.
     */
    private void gsoFailed(Throwable cause) {
        counters.sendErrors++;
        if (gso != null && gsoUnsupported(cause)) {
            gso.emit();
            gso = null;
            log.warn("UDP GSO send failed ({}); sending datagrams one by one from now on", cause.toString());
        }
    }

    static boolean gsoUnsupported(Throwable cause) {
        if (!(cause instanceof Errors.NativeIoException e)) return false;
        int errno = -e.expectedErr();
        return errno == 5 || errno == 22 || errno == 95; // EIO, EINVAL, EOPNOTSUPP (asm-generic/errno*.h)
    }

    /** The GSO batcher while GSO is on, else null: a packet of {@code len} bytes to {@code to} gets its IPv4 ID from it. */
    GsoBatcher gso() {
        return gso;
    }

    /** The gathering sender, or null (packets are written whole through {@link #write}). */
    GatherSend gather() {
        return gather;
    }

    /** Queues one datagram for the next flush, or into the open GSO run when {@code batched}. */
    void write(ByteBuf b, InetSocketAddress to, int destQpn, boolean batched) {
        if (batched && gso != null) {
            gso.add(b, to, destQpn);
        } else {
            enqueue(b, to);
        }
    }

    /**
     * Queues one datagram for the next flush. With {@link #directSend}, the first one of a flush is held back: if no
     * other follows, the flush sends it directly.
     */
    private void enqueue(ByteBuf b, InetSocketAddress to) {
        if (directSend != null && held == null && written == 0) {
            held = b;
            heldTo = to;
            return;
        }
        writeHeld();
        channel.write(envelope(b, to), channel.voidPromise());
        written++;
    }

    /** Writes the held datagram to the channel (another follows it, or a super-datagram does). */
    private void writeHeld() {
        if (held == null) return;
        ByteBuf b = held;
        held = null;
        channel.write(envelope(b, heldTo), channel.voidPromise());
        heldTo = null;
        written++;
    }

    /** {@code b} to {@code to} in a reused envelope, or a new one while a datagram filter is installed. */
    private DatagramPacket envelope(ByteBuf b, InetSocketAddress to) {
        return envelopes != null ? envelopes.wrap(b, to) : new DatagramPacket(b, to);
    }

    /**
     * Attaches the program that steers each datagram to its QP's shard to this socket's reuseport group
     * ({@link ShardSteering}); returns null, or why it could not.
     */
    String steer(int shards) {
        return ShardSteering.attach(channel, shards);
    }

    /** Whether {@link DirectReceive} reads the socket. */
    boolean isDirectReceive() {
        return direct != null && direct.isOpen();
    }

    /** The envelope pool (tests), or null. */
    SendEnvelope.Pool envelopes() {
        return envelopes;
    }

    /** Puts what the cycle queued on the wire: the open GSO run, then one {@code sendmmsg}. */
    void flush() {
        if (gather != null) gather.flush(); // before the channel's flush: what the socket did not take is queued there
        if (gso != null) gso.emit();
        if (held != null) {
            ByteBuf b = held;
            InetSocketAddress to = heldTo;
            held = null;
            heldTo = null;
            if (!directSend.trySend(b, to)) {
                channel.write(envelope(b, to), channel.voidPromise());
                written++;
            }
        }
        channel.flush();
        written = 0;
    }

    /** Attaches the datagram filter (fault injection) at the head of the pipeline. Loop only. */
    void addFilter(ChannelHandler filter) {
        channel.pipeline().addFirst("filter", filter);
    }

    boolean isEpoll() { return epoll; }
    /** Whether packets currently leave as GSO super-datagrams where they can. */
    boolean isGso() { return gso != null || gather != null && gather.segmenting(); }
    /** Whether the socket has UDP GRO on (the kernel accepted the option). */
    boolean isGro() { return epoll && channel.config().getOption(EpollChannelOption.UDP_GRO); }
    int localPort() { return localPort; }
    int receiveBufferBytes() { return receiveBufferBytes; }

    /** Closes the socket (what is queued sent first); the loop keeps running. */
    void close() {
        if (!agent.isShuttingDown()) {
            // what was built before the close leaves (a connection manager's last DREQ, say): the open GSO run and
            // the datagrams queued since the last flush, instead of being failed by the channel's close
            try {
                agent.call(() -> {
                    flush();
                    return null;
                });
            } catch (RuntimeException e) {
                log.debug("flushing before close: {}", e.toString());
            }
        }
        agent.await(channel.close(), TimeUnit.SECONDS.toNanos(10));
        if (gather != null) {
            try {
                agent.execute(gather::close);
            } catch (RuntimeException e) {
                log.debug("releasing the gathering sender: {}", e.toString());
            }
        }
        if (directSend != null) {
            try {
                agent.execute(() -> {
                    if (held != null) { // left by a close during shutdown, which skips the last flush
                        held.release();
                        held = null;
                    }
                    directSend.close();
                });
            } catch (RuntimeException e) {
                log.debug("releasing the direct sender: {}", e.toString());
            }
        }
    }

    /** The direct sender (tests), or null. */
    DirectSend directSend() {
        return directSend;
    }
}
