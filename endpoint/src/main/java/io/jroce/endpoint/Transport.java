package io.jroce.endpoint;

import io.jroce.wire.AethView;
import io.jroce.wire.AtomicAckEthView;
import io.jroce.wire.AtomicEthView;
import io.jroce.wire.BthView;
import io.jroce.wire.DethView;
import io.jroce.wire.Icrc;
import io.jroce.wire.IethView;
import io.jroce.wire.ImmDtView;
import io.jroce.wire.Opcode;
import io.jroce.wire.Problem;
import io.jroce.wire.RethView;
import io.jroce.wire.RoceV2;
import io.jroce.wire.RocePacket;
import io.jroce.wire.pcap.PcapWriter;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.FixedRecvByteBufAllocator;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollChannelOption;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.DatagramPacket;
import io.netty.channel.socket.SocketProtocolFamily;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.unix.Errors;
import io.netty.channel.unix.IntegerUnixChannelOption;
import io.netty.channel.unix.SegmentedDatagramPacket;
import io.netty.util.collection.IntObjectHashMap;
import io.netty.util.internal.PlatformDependent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The device's UDP transport and event loop (with {@link DeviceConfig#eventLoops} N &gt; 1, one of N shards:
 * see the last paragraph). One event loop owns the socket and every QP of the device:
 * it reads datagrams in batches ({@code recvmmsg}), checks the ICRC, decodes, and dispatches by
 * destination QP; the packets produced in one pass are written without flushing and flushed together
 * ({@code sendmmsg}), and the plain ACKs a pass owes are coalesced to one per QP, written just before that
 * flush ({@link Responder}).
 *
 * <p>The socket has the address family of the device's address. IPv4: it is unconnected with
 * {@code IP_MTU_DISCOVER = IP_PMTUDISC_DO}, so the kernel writes IPv4 ID 0 and DF on every datagram and the
 * ICRC computed here for ID 0 is what is on the wire: the ICRC covers the IPv4 Identification (IBA RoCEv2
 * annex A17.4.1; rxe_icrc.c rxe_icrc_hdr masks only TOS, TTL and the header checksum); on receive the ID is
 * solved for.
 *
 * <p>IPv6: the pseudo-header masks traffic class, flow label and hop limit and covers nothing else the socket
 * hides, so the ICRC is computed and checked exactly. {@code IPV6_MTU_DISCOVER = IPV6_PMTUDISC_DO}, the IPv6
 * twin of the IPv4 setting: a datagram larger than the path MTU fails to send (EMSGSIZE, retransmission) rather
 * than leaving as fragments no RoCE NIC reassembles ({@code IPV6_DONTFRAG} would refuse them too; this is the same
 * Linux option and value as the IPv4 one, so both families behave alike). {@code UDP_NO_CHECK6_RX}
 * accepts a zero UDP checksum, which rdma_rxe sends (rxe_net.c prepare_udp_hdr writes 0 over IPv6 too); the
 * kernel still writes a correct checksum on what we send and still drops a wrong non-zero one.
 *
 * <p>UDP GSO (off by default; {@link DeviceConfig#gso}, with epoll): the packets of a flush batch that go to
 * one peer with one length leave as one {@code UDP_SEGMENT} super-datagram ({@link GsoBatcher}); segment k
 * leaves with IPv4 ID k, so its ICRC is computed for ID k. Off while a datagram filter is installed, so that
 * fault injection keeps deciding per RoCE packet, and off for the rest of the device's life after a
 * super-datagram fails to send (the packets it held are retransmitted as plain datagrams).
 *
 * <p>Shards ({@link Shards}, {@link DeviceConfig#eventLoops}): a device with N event loops has N transports,
 * each with its own loop, socket (all on one address and port, {@code SO_REUSEPORT}), QP table, timers, counters
 * and scratch. A datagram read by a shard that does not own its destination QP is copied into a pooled buffer
 * (with its sender in front) and queued to the owner's bounded handoff queue; the owner checks the ICRC,
 * decodes and dispatches it. One queue per owner keeps the order of what one shard reads.
 *
 * <p>UDP GRO (off by default; {@link DeviceConfig#gro}, with epoll): the socket reads with {@code recvmsg} into
 * 64 KiB buffers ({@link GroRecvAllocator}) instead of {@code recvmmsg} into {@link #SLOT}-byte slots; Netty hands
 * each segment of a coalesced datagram to the pipeline as its own datagram, and the ICRC solve below finds
 * each one's IPv4 ID (k for segment k of a GSO send, 0 for a plain datagram).
 */
final class Transport {
    private static final Logger log = LoggerFactory.getLogger(Transport.class);
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

    static {
        LeakDetection.offUnlessChosen(); // no leak-tracking stack traces on the data path
    }

    private final Device device;
    private final DeviceConfig config;
    /** The device's shards; this transport is {@code shards.all[shard]}. One shard: no handoff. */
    private final Shards shards;
    private final int shard;
    /** The QPs this shard owns ({@link Shards#ownerIndex}); event loop only. */
    private final IntObjectHashMap<QueuePair> qps = new IntObjectHashMap<>();
    /** Datagrams other shards read for our QPs (sender header + datagram); null with one shard. */
    private final Queue<ByteBuf> handoffs;
    private final AtomicBoolean handoffScheduled = new AtomicBoolean();
    private final Runnable handoffTask = this::drainHandoffs;
    private final MultiThreadIoEventLoopGroup group;
    private final Channel channel;
    private final EventLoop loop;
    private final boolean epoll;
    /** The device's address is IPv6: the socket, the ICRC and the pcap records are IPv6. */
    private final boolean ipv6;
    /** IPv4 device: its address as a big-endian int. */
    private final int localAddr;
    /** IPv6 device: its 16 address bytes. */
    private final byte[] localAddr16;
    private final int localPort;
    private final ByteBufAllocator alloc = PooledByteBufAllocator.DEFAULT;
    private final DeviceCounters counters = new DeviceCounters();
    /** The receive buffer the kernel granted (SO_RCVBUF as read back: the doubled value, which counts skb overhead). */
    private final int receiveBufferBytes;
    /** Flow control: what this transport's QPs may keep in flight against the receive buffer. */
    final FlowBudget flow;
    /** The event loop's select strategy in busy-poll mode, else null. */
    private volatile BusyPollStrategy busyPoll;
    private final Timers timers;
    private final PcapWriter pcapFile;
    /** {@link #pcapFile} once the device is live (not during the warm-up); event loop only. */
    private PcapWriter pcap;

    // event-loop-only scratch: one of each flyweight, no object per packet
    private final BthView bth = new BthView();
    final RethView reth = new RethView();
    final AethView aeth = new AethView();
    final AtomicEthView atomicEth = new AtomicEthView();
    final AtomicAckEthView atomicAckEth = new AtomicAckEthView();
    final ImmDtView immDt = new ImmDtView();
    final IethView ieth = new IethView();
    final DethView deth = new DethView();
    private final UdReceiver udReceiver;
    private final Icrc txIcrc = new Icrc();
    private final Icrc rxIcrc = new Icrc();
    private final RocePacket rx = new RocePacket();
    /** The last IPv6 sender and its bytes: one copy per change of sender, not per packet. */
    private Inet6Address lastSource6;
    private byte[] lastSource16 = new byte[16];
    private boolean flushScheduled;
    private final Runnable flushTask = this::flushNow;
    /**
     * Responders owing a coalesced ACK ({@link Responder#emitPendingAck}), each listed once until the next flush,
     * so it never holds more entries than the device has QPs; it only grows (doubling) when more QPs owe an ACK
     * at once than ever before, never per packet.
     */
    private Responder[] ackOwed = new Responder[16];
    private int ackOwedCount;
    /** Non-null while UDP GSO is in use: groups equal-length packets to one peer into super-datagrams. */
    private GsoBatcher gso;
    private final ChannelFutureListener gsoWritten = f -> {
        if (!f.isSuccess()) gsoFailed(f.cause());
    };

    /** Datagrams a shard's handoff queue holds at most: per KiB of socket buffer one (4096 for the default 4 MiB). */
    static int handoffCapacity(DeviceConfig config) {
        return Math.max(1024, config.socketBufferBytes / 1024);
    }

    /**
     * Shard {@code shard} of {@code shards}: binds {@code port} (with {@code SO_REUSEPORT} when there is more than
     * one shard) and records to {@code pcapFile} (shared by the shards, which synchronise on it; closed by them).
     */
    Transport(Device device, DeviceConfig config, Shards shards, int shard, int port, PcapWriter pcapFile) throws IOException {
        this.device = device;
        this.config = config;
        this.shards = shards;
        this.shard = shard;
        this.handoffs = shards.count > 1 ? PlatformDependent.newFixedMpscQueue(handoffCapacity(config)) : null;
        byte[] a = config.address.getAddress();
        this.ipv6 = config.address instanceof Inet6Address;
        this.localAddr = ipv6 ? 0 : (a[0] & 0xFF) << 24 | (a[1] & 0xFF) << 16 | (a[2] & 0xFF) << 8 | (a[3] & 0xFF);
        this.localAddr16 = ipv6 ? a : null;
        this.epoll = config.preferEpoll && Epoll.isAvailable();
        if (!epoll && !ipv6) {
            log.warn("epoll native transport unavailable ({}); using NIO: the kernel picks the IPv4 ID, so peers that check "
                    + "the ICRC exactly (rdma_rxe, NICs) will drop our packets", Epoll.isAvailable() ? "disabled" : Epoll.unavailabilityCause());
        }
        this.group = new MultiThreadIoEventLoopGroup(1, !epoll ? NioIoHandler.newFactory()
                : config.busyPollNanos > 0 ? EpollIoHandler.newFactory(0, () -> busyPoll = new BusyPollStrategy(config.busyPollNanos))
                : EpollIoHandler.newFactory());
        this.timers = new Timers(this);
        this.udReceiver = new UdReceiver(device, this, counters);
        this.pcapFile = pcapFile;
        // the socket's family is the address's: an IPv4 device gets an AF_INET socket, not a dual-stack one
        SocketProtocolFamily family = ipv6 ? SocketProtocolFamily.INET6 : SocketProtocolFamily.INET;
        Bootstrap b = new Bootstrap()
                .group(group)
                .channelFactory(() -> epoll ? new EpollDatagramChannel(family) : new NioDatagramChannel(family))
                .option(ChannelOption.ALLOCATOR, alloc)
                .option(ChannelOption.SO_RCVBUF, config.socketBufferBytes)
                .option(ChannelOption.SO_SNDBUF, config.socketBufferBytes)
                .option(ChannelOption.IP_TOS, config.ecn ? ECT0 : 0)
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline().addLast("roce", new InboundHandler()); // the filter comes in goLive()
                    }
                });
        // all shards share the address and port; the kernel spreads datagrams over them by 4-tuple hash
        if (epoll && shards.count > 1) b.option(EpollChannelOption.SO_REUSEPORT, true);
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
        try {
            this.channel = b.bind(new InetSocketAddress(config.address, port)).sync().channel();
        } catch (Exception e) {
            group.shutdownGracefully(0, 100, TimeUnit.MILLISECONDS);
            throw new IOException("cannot bind UDP " + config.address.getHostAddress() + ":" + port + ": "
                    + e.getMessage() + " (is another node using it, or is the address not local?)", e);
        }
        this.loop = channel.eventLoop();
        this.receiveBufferBytes = receiveBuffer(config.socketBufferBytes);
        this.flow = new FlowBudget(receiveBufferBytes, config.maxUnackedPsns);
        int window4096 = flow.windowFor(4096);
        if (window4096 < config.maxUnackedPsns) {
            log.warn("the socket's receive buffer holds {} bytes, about {} packets of path MTU 4096: QPs at that MTU keep at most {} "
                    + "PSNs in flight instead of {} so that a peer like us does not overrun it (raise net.core.rmem_max to {} or run "
                    + "with CAP_NET_ADMIN for the full window)", receiveBufferBytes, window4096, window4096, config.maxUnackedPsns,
                    config.socketBufferBytes);
        }
        // the bound port, which port 0 leaves to the kernel: the ICRC covers the UDP source port
        this.localPort = ((InetSocketAddress) channel.localAddress()).getPort();
        if (config.gso && epoll && config.filter == null && EpollDatagramChannel.isSegmentedDatagramPacketSupported()) {
            this.gso = new GsoBatcher(alloc, GsoBatcher.MAX_SEGMENTS, new GsoBatcher.Sink() {
                @Override
                public void single(ByteBuf packet, InetSocketAddress to) {
                    channel.write(new DatagramPacket(packet, to), channel.voidPromise());
                }

                @Override
                public void segmented(CompositeByteBuf packets, int segmentSize, int count, InetSocketAddress to) {
                    counters.gsoDatagrams++;
                    counters.gsoSegments += count;
                    channel.write(new SegmentedDatagramPacket(packets, segmentSize, to), channel.newPromise().addListener(gsoWritten));
                }
            });
        }
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

    /**
     * Ends the warm-up: attaches the datagram filter (fault injection) at the head of the pipeline, starts
     * the pcap recording and zeroes the counters, so users see only their own traffic.
     */
    void goLive() {
        call(() -> {
            if (config.filter != null) channel.pipeline().addFirst("filter", config.filter);
            pcap = pcapFile;
            counters.reset();
            return null;
        });
    }

    boolean isEpoll() { return epoll; }
    /** Busy-poll mode: the event loop's idle non-blocking polls so far, or -1 when it is off. Any thread. */
    long busyIdlePolls() {
        BusyPollStrategy s = busyPoll;
        return s == null ? -1 : s.idlePolls;
    }

    /** This shard's index in {@link Shards#all}. */
    int shard() { return shard; }
    /** Whether packets currently leave as GSO super-datagrams where they can. */
    boolean isGso() { return gso != null; }
    /** Whether the socket has UDP GRO on (the kernel accepted the option). */
    boolean isGro() { return epoll && channel.config().getOption(EpollChannelOption.UDP_GRO); }
    boolean isIpv6() { return ipv6; }
    int localPort() { return ((InetSocketAddress) channel.localAddress()).getPort(); }
    /** IPv4 device: its address as a big-endian int. */
    int localAddr() { return localAddr; }
    /** IPv6 device: its 16 address bytes. */
    byte[] localAddr16() { return localAddr16; }
    Clock clock() { return config.clock; }
    Timers timers() { return timers; }
    DeviceCounters counters() { return counters; }

    // ------------------------------------------------------------------------------------------------
    // the QPs this shard owns (event loop only)

    QueuePair lookupQp(int qpn) {
        return qps.get(qpn);
    }

    /** Adds {@code qp}; false if its number is taken. */
    boolean addQp(QueuePair qp) {
        if (qps.containsKey(qp.qpNum())) return false;
        qps.put(qp.qpNum(), qp);
        return true;
    }

    boolean hasQp(int qpn) {
        return qps.containsKey(qpn);
    }

    void removeQp(QueuePair qp) {
        qps.remove(qp.qpNum());
    }

    int qpCount() {
        return qps.size();
    }

    List<QueuePair> queuePairs() {
        return List.copyOf(qps.values());
    }

    /** Forgets every QP, with {@code fail} first moving the live ones to ERR (device closed). */
    Void clearQps(boolean fail) {
        if (fail) {
            for (QueuePair qp : qps.values()) {
                if (qp.state != QpState.RESET && qp.state != QpState.ERR) qp.toError("device closed");
            }
        }
        qps.clear();
        return null;
    }
    KeyTable keys() { return device.keys(); }
    int maxUnackedPsns() { return config.maxUnackedPsns; }

    /**
     * The most the selective-repeat stores of this transport's QPs retain together ({@link ReorderBuffer}): a
     * peer cannot make them grow past it, however many QPs it opens; a packet that would is dropped and counted.
     */
    static final long REORDER_RETAINED_MAX = 64L << 20;
    /** Bytes the stores retain now (event loop only). */
    long reorderRetained;

    /** The receive buffer the kernel granted, in bytes (what SO_RCVBUF reads back). */
    int receiveBufferBytes() { return receiveBufferBytes; }

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
    long tailProbeNanos() { return config.tailProbeNanos; }

    // ------------------------------------------------------------------------------------------------
    // threading

    boolean inLoop() {
        return loop.inEventLoop();
    }

    void execute(Runnable r) {
        loop.execute(r);
    }


    void schedule(Runnable r, long nanos) {
        loop.schedule(r, nanos, TimeUnit.NANOSECONDS);
    }

    /** Runs {@code c} on the event loop and returns its result; inline when already there. */
    <T> T call(Callable<T> c) {
        try {
            if (loop.inEventLoop()) return c.call();
            Future<T> f = loop.submit(c);
            return f.get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException re) throw re;
            if (cause instanceof Error err) throw err;
            throw new IllegalStateException(cause);
        } catch (RuntimeException e) {
            throw e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for the device's event loop", e);
        } catch (TimeoutException e) {
            throw new IllegalStateException("the device's event loop did not answer within 30 s", e);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Flushes once, after whatever else the loop has queued (batches the packets of several doorbells). */
    void flushLater() {
        if (!flushScheduled) {
            flushScheduled = true;
            loop.execute(flushTask);
        }
    }

    void flushNow() {
        flushScheduled = false;
        flow.runWaiters(); // acknowledgements since the last flush may have freed room
        emitPendingAcks(); // the end of a receive burst, or any other flush: no ACK waits past it
        if (gso != null) gso.emit();
        channel.flush();
    }

    /** Lists {@code r} as owing a coalesced ACK, once until the next flush. Event loop only. */
    void ackPending(Responder r) {
        if (r.ackListed) return;
        r.ackListed = true;
        if (ackOwedCount == ackOwed.length) ackOwed = java.util.Arrays.copyOf(ackOwed, ackOwedCount * 2);
        ackOwed[ackOwedCount++] = r;
    }

    /** Writes the one coalesced ACK each listed responder still owes (one that sent it early owes nothing). */
    private void emitPendingAcks() {
        for (int i = 0; i < ackOwedCount; i++) {
            Responder r = ackOwed[i];
            ackOwed[i] = null;
            r.ackListed = false;
            r.emitPendingAck();
        }
        ackOwedCount = 0;
    }

    // ------------------------------------------------------------------------------------------------
    // transmit

    /**
     * Starts a packet to {@code qp}'s peer: allocates it at its final size (headers, {@code payload} bytes,
     * pad and ICRC; pooled, never grown) and writes the BTH. The caller writes the extension headers
     * through the views at {@code op}'s offsets and appends the payload, then calls {@link #finishPacket}.
     */
    ByteBuf startPacket(QueuePair qp, Opcode op, int payload, boolean se, boolean ackReq, int psn) {
        return startPacket(op, payload, se, ackReq, qp.destQpn, psn);
    }

    /** Ends a packet from {@link #startPacket}: zero pad, the ICRC, and the datagram queued for the batch. */
    void finishPacket(QueuePair qp, ByteBuf b) {
        b.writeZero(b.writableBytes()); // pad and the ICRC field: the buffer was sized to end exactly there
        send(qp, b);
    }

    /**
     * Stamps the ICRC (IPv4: for our address, DF and the ID the packet will leave with: 0, or k as segment k
     * of a GSO super-datagram; IPv6: over the masked IPv6 pseudo-header) and queues the datagram; flushed
     * with the batch.
     */
    private void send(QueuePair qp, ByteBuf b) {
        send(qp, b, qp.destAddressInt, qp.destAddress16, qp.destPort, qp.destSocket, gso);
    }

    /** Stamps the ICRC for the destination, counts, records and queues the datagram ({@code batcher} null: alone). */
    private void send(QueuePair qp, ByteBuf b, int dst, byte[] dst16, int dport, InetSocketAddress to, GsoBatcher batcher) {
        int len = b.writerIndex();
        int ipId = batcher == null ? 0 : batcher.position(to, len);
        if (ipv6) {
            txIcrc.writeIpv6(localAddr16, dst16, localPort, dport, b, 0, len);
        } else {
            txIcrc.writeIpv4(localAddr, dst, ipId, Icrc.IPV4_DF, localPort, dport, b, 0, len);
        }
        counters.packetsOut++;
        counters.bytesOut += len;
        qp.counters.packetsOut++;
        qp.counters.bytesOut += len;
        if (pcap != null) {
            if (ipv6) record6(localAddr16, localPort, dst16, dport, b, len);
            else record(localAddr, localPort, dst, dport, ipId, b, len);
        }
        if (batcher != null) {
            batcher.add(b, to);
        } else {
            channel.write(new DatagramPacket(b, to), channel.voidPromise());
        }
    }

    /**
     * Starts a UD packet to {@code destQpn} (BTH with AckReq clear: UD is never acknowledged); the caller writes
     * the DETH (and ImmDt) and the payload, then calls {@link #finishUdPacket}.
     */
    ByteBuf startUdPacket(Opcode op, int payload, boolean se, int destQpn, int psn) {
        return startPacket(op, payload, se, false, destQpn, psn);
    }

    /** A packet allocated at its final size (headers, payload, pad, ICRC; pooled, never grown), its BTH written. */
    private ByteBuf startPacket(Opcode op, int payload, boolean se, boolean ackReq, int destQpn, int psn) {
        int pad = RoceV2.padFor(payload);
        int length = op.headerLength() + payload + pad + RoceV2.ICRC_LENGTH;
        ByteBuf b = alloc.directBuffer(length, length);
        bth.wrap(b, 0).write(op.code(), se, false, pad, RoceV2.DEFAULT_PKEY, destQpn, ackReq, psn);
        b.writerIndex(op.headerLength());
        return b;
    }

    /**
     * Ends a UD packet: zero pad, the ICRC for the destination in the work request's address handle (not the
     * QP's, a UD QP has none), and the datagram queued for the batch.
     */
    void finishUdPacket(QueuePair qp, ByteBuf b, AddressHandle ah) {
        b.writeZero(b.writableBytes());
        send(qp, b, ah.addressInt, ah.address16, ah.udpPort(), ah.socket, null); // one datagram each, never batched
    }

    private void record(int src, int sport, int dst, int dport, int ipId, ByteBuf b, int len) {
        try {
            synchronized (pcap) { // one writer shared by the shards; the pcap path is off by default
                long now = System.currentTimeMillis() * 1_000_000L;
                pcap.writeUdpIpv4(now, src, sport, dst, dport, ipId, Icrc.IPV4_DF, b, b.readerIndex(), len);
            }
        } catch (IOException | RuntimeException e) {
            log.warn("pcap recording failed: {}", e.toString());
        }
    }

    private void record6(byte[] src, int sport, byte[] dst, int dport, ByteBuf b, int len) {
        try {
            synchronized (pcap) {
                long now = System.currentTimeMillis() * 1_000_000L;
                pcap.writeUdpIpv6(now, src, sport, dst, dport, b, b.readerIndex(), len);
            }
        } catch (IOException | RuntimeException e) {
            log.warn("pcap recording failed: {}", e.toString());
        }
    }

    // ------------------------------------------------------------------------------------------------
    // receive

    private final class InboundHandler extends SimpleChannelInboundHandler<DatagramPacket> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, DatagramPacket packet) {
            receive(packet);
        }

        /** The end of a receive burst: the coalesced ACKs of its requests leave first (in {@link #flushNow}). */
        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            flushNow();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            // a failed sendmmsg (ENOBUFS, EPERM from a firewall) loses datagrams; retransmission recovers them
            counters.sendErrors++;
            if (log.isDebugEnabled()) log.debug("socket error: {}", cause.toString());
        }
    }

    private void receive(DatagramPacket packet) {
        ByteBuf buf = packet.content();
        int off = buf.readerIndex();
        int len = buf.readableBytes();
        counters.packetsIn++;
        counters.bytesIn += len;
        if (!config.access.admit(packet.sender().getAddress(), counters)) return; // before anything reads the datagram
        if (len >= SLOT) {
            counters.drop(DropReason.OVERSIZE); // may have been cut to the slot by the kernel
            return;
        }
        InetSocketAddress sender = packet.sender();
        InetAddress from = sender.getAddress();
        int srcAddr = 0;
        if (ipv6) {
            if (!(from instanceof Inet6Address source6)) {
                counters.drop(DropReason.WRONG_SOURCE);
                return;
            }
            // Inet6Address.equals compares the 16 bytes without copying them
            if (!source6.equals(lastSource6)) {
                lastSource6 = source6;
                lastSource16 = source6.getAddress();
            }
        } else {
            if (!(from instanceof Inet4Address source)) {
                counters.drop(DropReason.WRONG_SOURCE);
                return;
            }
            // Inet4Address.hashCode() is the address as a big-endian int: no byte[] copy per packet
            srcAddr = source.hashCode();
        }
        if (handoffs != null && len >= BthView.LENGTH) {
            // BTH bytes 5..7: the destination QP, whose shard runs it (a malformed one goes somewhere and is dropped there)
            Transport owner = shards.owner(buf.getUnsignedMedium(off + 5));
            if (owner != this) {
                handOff(owner, buf, off, len, srcAddr, sender.getPort());
                return;
            }
        }
        process(buf, off, len, srcAddr, sender.getPort());
    }

    /**
     * The rest of the receive path, on the shard that owns the destination QP: the ICRC, the pcap record,
     * decoding and dispatch. The IPv6 sender is in {@link #lastSource16}.
     */
    private void process(ByteBuf buf, int off, int len, int srcAddr, int srcPort) {
        int ipId = 0;
        boolean icrcOk;
        if (ipv6) {
            // IPv6: nothing the socket hides is covered (IBA A17.4.1; rxe_icrc.c rxe_icrc_hdr), so the check is exact
            icrcOk = rxIcrc.verifyIpv6(lastSource16, localAddr16, srcPort, localPort, buf, off, len);
            if (pcap != null) record6(lastSource16, srcPort, localAddr16, localPort, buf, len);
        } else {
            // a UDP socket hides the IPv4 header: solve the ICRC for the sender's ID (wire Icrc javadoc). RoCEv2
            // senders set DF (rxe always does, and so do we); not retrying with DF clear keeps every single-bit
            // error detectable (a DF-clear retry lets a few single-bit flips through).
            ipId = len >= 16 ? rxIcrc.verifyIpv4UnknownId(srcAddr, localAddr, srcPort, localPort, buf, off, len, false) : -1;
            icrcOk = ipId >= 0;
            if (pcap != null) record(srcAddr, srcPort, localAddr, localPort, Math.max(ipId, 0), buf, len);
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
        if (ipv6 ? !java.util.Arrays.equals(qp.destAddress16, lastSource16) : qp.destAddressInt != srcAddr) {
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

    /** A RoCEv2 CNP (annex A17.9.3): its DestQP is our QP whose traffic congested the peer's queue. */
    private void onCnp(int srcAddr) {
        QueuePair qp = qps.get(rx.destQp());
        if (qp == null) {
            counters.drop(DropReason.UNKNOWN_QP);
            return;
        }
        if (ipv6 ? !java.util.Arrays.equals(qp.destAddress16, lastSource16) : qp.destAddressInt != srcAddr) {
            counters.drop(DropReason.WRONG_SOURCE);
            return;
        }
        qp.counters.packetsIn++;
        qp.completer.onCnp();
    }

    // ------------------------------------------------------------------------------------------------
    // handoff between shards

    /** The sender in front of a handed-off datagram: IPv4 address (4) or IPv6 address (16), then the UDP port (4). */
    private int handoffHeader() {
        return ipv6 ? 20 : 8;
    }

    /**
     * A datagram for a QP of {@code owner}: copied (the receive batch buffer is reused) behind its sender into a
     * pooled buffer and queued to the owner, which runs it ({@link #drainHandoffs}). A full queue drops it, as
     * a full socket buffer would.
     */
    private void handOff(Transport owner, ByteBuf buf, int off, int len, int srcAddr, int srcPort) {
        ByteBuf b = alloc.directBuffer(handoffHeader() + len);
        if (ipv6) b.writeBytes(lastSource16);
        else b.writeInt(srcAddr);
        b.writeInt(srcPort);
        b.writeBytes(buf, off, len);
        if (!owner.handoffs.offer(b)) {
            b.release();
            counters.drop(DropReason.HANDOFF_OVERFLOW);
            return;
        }
        counters.shardHandoffs++;
        if (owner.handoffScheduled.compareAndSet(false, true)) owner.loop.execute(owner.handoffTask);
    }

    /** Runs the datagrams other shards handed us, in the order each queued them, then flushes what they produced. */
    private void drainHandoffs() {
        handoffScheduled.set(false); // before draining: a datagram queued after our last poll schedules us again
        int header = handoffHeader();
        ByteBuf b;
        while ((b = handoffs.poll()) != null) {
            try {
                int srcAddr = 0;
                if (ipv6) {
                    // as on the direct path, a new array only when the sender changes (the old one may still be referenced)
                    boolean same = true;
                    for (int i = 0; i < 16 && same; i++) same = b.getByte(i) == lastSource16[i];
                    if (!same) {
                        lastSource6 = null;
                        lastSource16 = new byte[16];
                        b.getBytes(0, lastSource16);
                    }
                    b.skipBytes(16);
                } else {
                    srcAddr = b.readInt();
                }
                int srcPort = b.readInt();
                process(b, header, b.writerIndex() - header, srcAddr, srcPort);
            } catch (RuntimeException e) {
                log.warn("handed-off datagram: {}", e.toString());
            } finally {
                b.release();
            }
        }
        flushNow();
    }

    void discardHandoffs() {
        if (handoffs == null) return;
        for (ByteBuf b; (b = handoffs.poll()) != null; ) b.release();
    }

    void close() {
        try {
            closeChannel();
        } finally {
            shutdownLoop().syncUninterruptibly();
            discardHandoffs(); // the loop is gone: nothing drains them any more
        }
    }

    /**
     * Closes the socket; the loop keeps running (it may still drain handoffs). The shards of a device close
     * every socket before they stop any loop, so no shard hands a datagram to a loop that is gone.
     */
    void closeChannel() {
        if (gso != null && !group.isShuttingDown()) {
            try {
                call(() -> {
                    if (gso != null) gso.discard();
                    return null;
                });
            } catch (RuntimeException e) {
                log.debug("releasing the open GSO run: {}", e.toString());
            }
        }
        channel.close().syncUninterruptibly();
    }

    /** Starts shutting the loop down (after {@link #closeChannel}); {@link #discardHandoffs} once it is done. */
    io.netty.util.concurrent.Future<?> shutdownLoop() {
        return group.shutdownGracefully(0, 200, TimeUnit.MILLISECONDS);
    }
}
