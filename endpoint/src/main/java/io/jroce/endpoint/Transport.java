package io.jroce.endpoint;

import io.jroce.wire.pcap.PcapWriter;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.nio.NioIoHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.Inet6Address;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * One shard of a device (by default the device's only one): the unit of work a {@link DeviceAgent} runs. It puts
 * together the parts rdma_rxe keeps in separate files, each in its own class here:
 * <ul>
 *   <li>{@link UdpPort}: the socket, its options, GSO/GRO and the flush (rxe_net.c, the socket half);</li>
 *   <li>{@link ReceivePath}: checks and dispatch of every datagram read (rxe_recv.c);</li>
 *   <li>{@link TransmitPath}: packets started, ICRC-stamped and queued (rxe_net.c's send half, rxe_icrc.c), the
 *       narrow {@link PacketOut} the engines send through;</li>
 *   <li>{@link QpTable}: the QPs this shard owns; {@link ShardRouter}: datagrams handed between shards;</li>
 *   <li>{@link Timers}, {@link FlowBudget}, {@link PcapTap}, {@link UdReceiver}.</li>
 * </ul>
 * What stays here is the cycle's end: the coalesced ACKs its receive bursts owe, then one flush
 * ({@link #flushNow}); and the {@link EngineContext} the queue pairs' engines see.
 *
 * <p>Shards ({@link Shards}, {@link DeviceConfig#eventLoops}): a device with N event loops has N of these, each with
 * its own loop, socket (all on one address and port, {@code SO_REUSEPORT}), QP table, timers, counters and scratch.
 */
final class Transport implements EngineContext {
    private static final Logger log = LoggerFactory.getLogger(Transport.class);

    static {
        LeakDetection.offUnlessChosen(); // no leak-tracking stack traces on the data path
        RecyclerTuning.batchUnlessChosen(); // no recycler queue chunks per flush
    }

    private final DeviceConfig config;
    private final int shard;
    private final QpTable qps = new QpTable();
    /** Null with one shard: no handoff. */
    private final ShardRouter router;
    /** Who runs this shard's loop: a thread of its own, or the application's threads ({@link AgentMode}). */
    private final DeviceAgent agent;
    private final UdpPort port;
    private final TransmitPath transmit;
    private final ReceivePath receive;
    private final boolean ipv6;
    /** IPv4 device: its address as a big-endian int. */
    private final int localAddr;
    /** IPv6 device: its 16 address bytes. */
    private final byte[] localAddr16;
    private final ByteBufAllocator alloc = PooledByteBufAllocator.DEFAULT;
    private final DeviceCounters counters = new DeviceCounters();
    /** Flow control: what this transport's QPs may keep in flight against the receive buffer. */
    final FlowBudget flow;
    /** The event loop's select strategy in busy-poll mode, else null. */
    private volatile BusyPollStrategy busyPoll;
    private final Timers timers;
    private final PcapTap pcap;
    private final KeyTable keys;
    private boolean flushScheduled;
    private final Runnable flushTask = this::flushNow;
    /**
     * Responders owing a coalesced ACK ({@link Responder#emitPendingAck}), each listed once until the next flush,
     * so it never holds more entries than the device has QPs; it only grows (doubling) when more QPs owe an ACK
     * at once than ever before, never per packet.
     */
    private Responder[] ackOwed = new Responder[16];
    private int ackOwedCount;

    /**
     * Shard {@code shard} of {@code shards}: binds {@code port} (with {@code SO_REUSEPORT} when there is more than
     * one shard) and records to {@code pcapFile} (shared by the shards, which synchronise on it; closed by them).
     */
    Transport(Device device, DeviceConfig config, Shards shards, int shard, int port, PcapWriter pcapFile) throws IOException {
        this.config = config;
        this.shard = shard;
        this.keys = device.keys();
        this.router = shards.count > 1 ? new ShardRouter(this, shards, config, alloc, counters, config.address instanceof Inet6Address) : null;
        byte[] a = config.address.getAddress();
        this.ipv6 = config.address instanceof Inet6Address;
        this.localAddr = ipv6 ? 0 : (a[0] & 0xFF) << 24 | (a[1] & 0xFF) << 16 | (a[2] & 0xFF) << 8 | (a[3] & 0xFF);
        this.localAddr16 = ipv6 ? a : null;
        boolean epoll = config.preferEpoll && Epoll.isAvailable();
        if (!epoll && !ipv6) {
            log.warn("epoll native transport unavailable ({}); using NIO: the kernel picks the IPv4 ID, so peers that check "
                    + "the ICRC exactly (rdma_rxe, NICs) will drop our packets", Epoll.isAvailable() ? "disabled" : Epoll.unavailabilityCause());
        }
        AgentMode mode = shards.count > 1 ? AgentMode.DEDICATED : config.agentMode;
        // with epoll, the socket's datagrams are read without an object each (DirectReceive) where this Netty allows
        DirectReceive.Hook direct = epoll && !config.gro && config.filter == null && config.directReceive && DirectReceive.AVAILABLE
                ? new DirectReceive.Hook() : null;
        if (epoll && config.directReceive && !DirectReceive.AVAILABLE) {
            log.debug("Netty reads the socket (an object per datagram): {}", DirectReceive.PROBLEM);
        }
        IoHandlerFactory epollFactory = config.busyPollNanos > 0 && mode == AgentMode.DEDICATED
                ? EpollIoHandler.newFactory(0, () -> busyPoll = new BusyPollStrategy(config.busyPollNanos))
                : EpollIoHandler.newFactory();
        IoHandlerFactory io = !epoll ? NioIoHandler.newFactory() : direct != null ? direct.wrap(epollFactory) : epollFactory;
        this.timers = new Timers(this);
        // the loop's wait ends at the timer wheel's next deadline: no scheduled task for timers
        this.agent = DeviceAgent.open(mode, new TimerWait(timers, this).wrap(io), config.address.getHostAddress() + "-" + shard,
                config.standbyAfterNanos);
        this.pcap = new PcapTap(pcapFile);
        UdReceiver ud = new UdReceiver(device, this, counters);
        this.receive = new ReceivePath(this, qps, ud, counters, pcap, config.access, ipv6, localAddr, localAddr16);
        this.port = new UdpPort(config, agent, epoll, ipv6, shards.count > 1, port, alloc, counters, receive.handler(),
                direct, direct == null ? null : new DirectReceive(alloc, receive.directSink()));
        this.transmit = new TransmitPath(this.port, alloc, counters, pcap, ipv6, localAddr, localAddr16);
        this.flow = new FlowBudget(this.port.receiveBufferBytes(), config.maxUnackedPsns);
        int window4096 = flow.windowFor(4096);
        if (window4096 < config.maxUnackedPsns) {
            // Linux grants twice what is asked (half for its bookkeeping) and reports that: an ask of `enough` fills the window,
            // unless net.core.rmem_max caps the grant
            long enough = (FlowBudget.receiveBufferFor(config.maxUnackedPsns, 4096) + 1) / 2;
            log.warn("the socket's receive buffer holds {} bytes, about {} packets of path MTU 4096: QPs at that MTU keep at most {} "
                    + "PSNs in flight instead of {} so that a peer like us does not overrun it ({})", this.port.receiveBufferBytes(),
                    window4096, window4096, config.maxUnackedPsns, config.socketBufferBytes < enough
                            ? "a socket buffer of " + enough + " bytes or more allows the full window"
                            : "raise net.core.rmem_max to " + config.socketBufferBytes + " or run with CAP_NET_ADMIN for the full window");
        }
    }

    /**
     * Ends the warm-up: attaches the datagram filter (fault injection) at the head of the pipeline, starts
     * the pcap recording and zeroes the counters, so users see only their own traffic.
     */
    void goLive() {
        call(() -> {
            if (config.filter != null) port.addFilter(config.filter);
            pcap.goLive();
            counters.reset();
            return null;
        });
    }

    boolean isEpoll() { return port.isEpoll(); }
    /** Busy-poll mode: the event loop's idle non-blocking polls so far, or -1 when it is off. Any thread. */
    long busyIdlePolls() {
        BusyPollStrategy s = busyPoll;
        return s == null ? -1 : s.idlePolls;
    }

    /** This shard's index in {@link Shards#all}. */
    int shard() { return shard; }
    /** Whether packets currently leave as GSO super-datagrams where they can. */
    boolean isGso() { return port.isGso(); }
    /** Whether the socket has UDP GRO on (the kernel accepted the option). */
    boolean isGro() { return port.isGro(); }
    int localPort() { return port.localPort(); }
    /** IPv4 device: its address as a big-endian int. */
    int localAddr() { return localAddr; }
    /** IPv6 device: its 16 address bytes. */
    byte[] localAddr16() { return localAddr16; }
    ShardRouter router() { return router; }
    ReceivePath receivePath() { return receive; }

    // ------------------------------------------------------------------------------------------------
    // what the engines see

    @Override public PacketOut out() { return transmit; }
    @Override public Clock clock() { return config.clock; }
    @Override public Timers timers() { return timers; }
    @Override public DeviceCounters counters() { return counters; }
    @Override public KeyTable keys() { return keys; }
    @Override public FlowBudget flow() { return flow; }
    @Override public int maxUnackedPsns() { return config.maxUnackedPsns; }
    private final PathRtt.Table pathRtts = new PathRtt.Table();
    @Override public PathRtt pathRtt(java.net.InetAddress peer) { return pathRtts.of(peer); }
    @Override public long tailProbeNanos() { return config.tailProbeNanos; }

    /**
     * The most the selective-repeat stores of this transport's QPs retain together ({@link ReorderBuffer}): a
     * peer cannot make them grow past it, however many QPs it opens; a packet that would is dropped and counted.
     */
    static final long REORDER_RETAINED_MAX = 64L << 20;
    /** Bytes the stores retain now (event loop only). */
    private long reorderRetained;

    /** Bytes the reorder stores of this shard keep now (loop only; tests). */
    long reorderRetained() {
        return call(() -> reorderRetained);
    }

    @Override
    public boolean reserveReorderBytes(long bytes) {
        if (reorderRetained + bytes > REORDER_RETAINED_MAX) return false;
        reorderRetained += bytes;
        return true;
    }

    @Override
    public void releaseReorderBytes(long bytes) {
        reorderRetained -= bytes;
    }

    /** The receive buffer the kernel granted, in bytes (what SO_RCVBUF reads back). */
    int receiveBufferBytes() { return port.receiveBufferBytes(); }

    // ------------------------------------------------------------------------------------------------
    // the QPs this shard owns (event loop only)

    QueuePair lookupQp(int qpn) { return qps.get(qpn); }
    /** Adds {@code qp}; false if its number is taken. */
    boolean addQp(QueuePair qp) { return qps.add(qp); }
    boolean hasQp(int qpn) { return qps.contains(qpn); }
    void removeQp(QueuePair qp) { qps.remove(qp); }
    int qpCount() { return qps.size(); }
    List<QueuePair> queuePairs() { return qps.list(); }

    /** Forgets every QP, with {@code fail} first moving the live ones to ERR (device closed). */
    Void clearQps(boolean fail) {
        qps.clear(fail);
        timers.clear();
        return null;
    }

    // ------------------------------------------------------------------------------------------------
    // threading

    boolean inLoop() { return agent.inLoop(); }

    @Override
    public void execute(Runnable r) { agent.execute(r); }

    java.util.concurrent.ScheduledFuture<?> schedule(Runnable r, long nanos) { return agent.schedule(r, nanos); }


    /** Runs {@code c} on the event loop and returns its result; inline when already there (or free to run it). */
    <T> T call(Callable<T> c) { return agent.call(c); }

    DeviceAgent agent() { return agent; }
    /** The socket (tests). */
    UdpPort port() { return port; }

    // ------------------------------------------------------------------------------------------------
    // the end of a cycle

    /** Flushes once, after whatever else the loop has queued (batches the packets of several doorbells). */
    @Override
    public void flushLater() {
        if (!flushScheduled) {
            flushScheduled = true;
            agent.execute(flushTask);
        }
    }

    void flushNow() {
        flushScheduled = false;
        timers.runDue(); // the timer wheel, once per cycle: its resends leave with this flush
        flow.runWaiters(); // acknowledgements since the last flush may have freed room
        emitPendingAcks(); // the end of a receive burst, or any other flush: no ACK waits past it
        port.flush();
    }

    /** Lists {@code r} as owing a coalesced ACK, once until the next flush. Event loop only. */
    @Override
    public void ackPending(Responder r) {
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
    // closing

    void discardHandoffs() {
        if (router != null) router.discard();
    }

    void close() {
        try {
            closeChannel();
        } finally {
            awaitStopped(shutdownLoop());
            discardHandoffs(); // the loop is gone: nothing drains them any more
        }
    }

    /**
     * Closes the socket; the loop keeps running (it may still drain handoffs). The shards of a device close
     * every socket before they stop any loop, so no shard hands a datagram to a loop that is gone.
     */
    void closeChannel() {
        port.close();
    }

    /** Starts shutting the loop down (after {@link #closeChannel}); {@link #discardHandoffs} once it is done. */
    io.netty.util.concurrent.Future<?> shutdownLoop() {
        return agent.shutdown();
    }

    /** Waits for the loop to stop after {@link #shutdownLoop} (an invoked loop is driven to its end). */
    void awaitStopped(io.netty.util.concurrent.Future<?> stopping) {
        agent.awaitStopped(stopping);
    }
}
