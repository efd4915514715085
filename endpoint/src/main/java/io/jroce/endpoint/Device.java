package io.jroce.endpoint;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.InetAddress;
import java.util.List;

/**
 * A software RoCEv2 device: one IPv4 or IPv6 address and UDP port (4791 by default), one GID (for
 * IPv4 the address's IPv4-mapped form, for IPv6 the address itself, at index 0), and the protection domains, memory regions, completion queues and queue
 * pairs created on it. {@link #close()} releases the socket, buffers and timers.
 *
 * <p>By default one event loop runs the socket and every queue pair. With {@link DeviceConfig#eventLoops} N &gt; 1
 * the device runs N loops, each with its own socket on the same address and port ({@code SO_REUSEPORT}); each
 * queue pair belongs to one of them (QP 1 to the first), which runs all of its transport work. Listeners
 * (asynchronous events, CQ events) are then called from any of the loops.
 */
public final class Device implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Device.class);

    /** The event listener for asynchronous events (CQ overrun, QP fatal errors). */
    @FunctionalInterface
    public interface AsyncEventListener {
        void onEvent(AsyncEvent event, CompletionQueue cq, QueuePair qp, String detail);
    }

    private final DeviceConfig config;
    private final KeyTable keys = new KeyTable();
    private final Shards shards;
    /** The first shard: QP 1, the device-wide tasks ({@link #runOnLoop}); the only one by default. */
    private final Transport transport;
    private final DeviceRunner runner;
    private final Object qpnLock = new Object();
    private final QpnAllocator qpns = QpnAllocator.spread(); // guarded by qpnLock
    /** The Q_Key of QP 1, the GSI QP ({@code IB_QP1_QKEY}, include/rdma/ib_mad.h). */
    public static final int GSI_QKEY = 0x80010000;
    /** The GSI QP's number. */
    public static final int GSI_QPN = 1;
    private volatile boolean open = true;
    private volatile AsyncEventListener listener;

    private Device(DeviceConfig config) throws IOException {
        this.config = config;
        this.shards = new Shards(this, config);
        this.transport = shards.first();
        this.runner = new DeviceRunner(transport);
        try {
            if (config.warmUp) {
                long t0 = System.nanoTime();
                int completions = Warmup.run(this);
                // a warm-up cut short leaves its packets on their way; one that completed can too: a tail-loss probe or
                // a retransmission that fired while the machine was busy is answered after the last completion
                awaitQuietAfterWarmup(completions < Warmup.COMPLETIONS ? QUIET_NANOS : QUIET_AFTER_FULL_NANOS);
                if (log.isDebugEnabled()) {
                    log.debug("device {}: warm-up {} of {} completions in {} us", config.address.getHostAddress(), completions,
                            Warmup.COMPLETIONS, (System.nanoTime() - t0) / 1000);
                }
                shards.clearQps(false);
                synchronized (qpnLock) {
                    qpns.rewind(); // the warm-up's QPNs are handed out again
                }
            }
            shards.goLive();
        } catch (RuntimeException | Error e) {
            shards.close();
            throw e;
        }
    }

    /**
     * A warm-up that ran out of time (a busy machine) leaves packets of its QPs on their way: in the socket's
     * queue, or behind other work on the event loop. Were they read after the device went live, they would
     * count as drops (unknown QP) of the live device, or reach a new QP that was given the same number. So
     * wait until no datagram has arrived for {@code quietNanos}, at most {@link #QUIET_MAX_NANOS}.
     */
    private void awaitQuietAfterWarmup(long quietNanos) {
        long start = System.nanoTime();
        long seen = -1;
        long quietSince = start;
        while (true) {
            long now = System.nanoTime();
            long in = shards.packetsIn();
            if (in != seen) {
                seen = in;
                quietSince = now;
            } else if (now - quietSince >= quietNanos) {
                return;
            }
            if (now - start >= QUIET_MAX_NANOS) {
                log.debug("device {}: warm-up traffic still arriving after {} ms", config.address.getHostAddress(),
                        QUIET_MAX_NANOS / 1_000_000);
                return;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(quietNanos / 5);
        }
    }

    private static final long QUIET_NANOS = java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(50);
    /** After a complete warm-up only a duplicate answered late can still come: a short quiet is enough. */
    private static final long QUIET_AFTER_FULL_NANOS = java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(5);
    private static final long QUIET_MAX_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(2);

    /** Opens a device on {@code address}:4791. */
    public static Device open(InetAddress address) throws IOException {
        return new Device(new DeviceConfig(address));
    }

    public static Device open(DeviceConfig config) throws IOException {
        return new Device(config);
    }

    DeviceConfig config() { return config; }

    /** How long a waiting completion-queue poll spins before it parks: the mode's default, or the busy-poll time if longer. */
    long cqSpinNanos() {
        long spin = transport.agent().invoked() ? CompletionQueue.INVOKED_SPIN_NANOS : CompletionQueue.SPIN_NANOS;
        return Math.max(spin, config.busyPollNanos);
    }

    public InetAddress address() { return config.address; }
    public int port() { return transport.localPort(); }

    /**
     * The bytes the kernel lets the device's UDP socket queue unread (SO_RCVBUF as granted): what a jroce peer may
     * keep in flight towards this device, told to it out of band ({@link QueuePair#setPeerReceiveBuffer}).
     */
    public int receiveBufferBytes() { return transport.receiveBufferBytes(); }
    /** True when the epoll native transport (recvmmsg/sendmmsg, IPv4 ID 0) is in use. */
    public boolean isEpoll() { return transport.isEpoll(); }
    /** The event loops (shards) the device runs: {@link DeviceConfig#eventLoops}, or 1 where it fell back (NIO). */
    public int eventLoops() { return shards.count; }
    /**
     * With several event loops: whether the kernel delivers each datagram to the socket of the loop that owns its
     * QP (a classic BPF program on the {@code SO_REUSEPORT} group), so that no loop hands datagrams over; false
     * with one loop, or where the program was refused or turned off (then loops hand datagrams over).
     */
    public boolean isShardSteered() { return shards.steered; }

    /**
     * Runs the device once, without blocking, when the calling thread may ({@link AgentMode#INVOKED}: no other
     * thread is running it): the datagrams that arrived, due timers, queued work, one flush. For a program that
     * waits by watching memory rather than polling a completion queue (perftest's WRITE latency test spins on the
     * last byte of its buffer), so that what it waits for is received on its own thread. Returns whether it ran the
     * device; with a dedicated device it does nothing and returns false.
     */
    public boolean progress() {
        return shards.count == 1 && transport.agent().drive(0);
    }

    /** GID table: index 0 is the device's address as a GID (IPv4-mapped for IPv4; RoCEv2). */
    public Gid gid(int index) {
        if (index != 0) throw new IllegalArgumentException("the GID table has one entry, index 0; not " + index);
        return Gid.of(config.address);
    }

    public ProtectionDomain allocPd() {
        checkOpen();
        return new ProtectionDomain(this);
    }

    public CompletionQueue createCq(int depth) {
        checkOpen();
        return new CompletionQueue(this, depth);
    }

    QueuePair createQp(ProtectionDomain pd, QpInitAttr init) {
        checkOpen();
        QueuePair.validateInit(init);
        if (init.sendCq.device() != this || init.recvCq.device() != this) {
            throw new IllegalArgumentException("the QP's completion queues belong to another device");
        }
        // the number decides the owning shard, whose table alone says whether the number is taken
        for (int tries = 0; tries < 0xFFFFFF; tries++) {
            int qpn;
            synchronized (qpnLock) {
                qpn = qpns.next();
            }
            Transport owner = shards.owner(qpn);
            QueuePair qp = owner.call(() -> {
                if (owner.hasQp(qpn)) return null;
                QueuePair q = new QueuePair(this, pd, qpn, init, init.qpType, owner);
                owner.addQp(q);
                return q;
            });
            if (qp != null) return qp;
        }
        throw new VerbsException("every QP number is in use");
    }

    /**
     * Opens QP 1, the General Services Interface QP, on which connection management MADs travel: a UD QP
     * numbered 1 whose Q_Key is {@link #GSI_QKEY} (0x80010000). It is returned <b>already in RTS</b> (send PSN
     * 0), as the kernel keeps its own GSI QP up: post receives and sends at once, with no modify sequence.
     * It accepts only datagrams carrying Q_Key 0x80010000 and always sends that Q_Key, whatever the WR says
     * (rdma_rxe rxe_req.c / rxe_recv.c treat QP 1 so). {@code init}'s type is ignored (always UD). A device
     * has at most one: a second call while it exists is refused; after {@link QueuePair#destroy()} QP 1 may
     * be opened again.
     */
    public QueuePair openGsi(ProtectionDomain pd, QpInitAttr init) {
        checkOpen();
        if (pd == null || pd.device() != this) throw new IllegalArgumentException("the GSI QP needs a protection domain of this device");
        QueuePair.validateInit(init);
        if (init.sendCq.device() != this || init.recvCq.device() != this) {
            throw new IllegalArgumentException("the QP's completion queues belong to another device");
        }
        Transport owner = shards.owner(GSI_QPN);
        QueuePair qp = owner.call(() -> {
            if (owner.hasQp(GSI_QPN)) throw new VerbsException("QP 1 (GSI) is already open on this device");
            QueuePair q = new QueuePair(this, pd, GSI_QPN, init, QpType.UD, owner);
            owner.addQp(q);
            return q;
        });
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(GSI_QKEY));
        qp.modify(new QpAttr().state(QpState.RTR));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
        return qp;
    }

    /** The port's active MTU ({@link DeviceConfig#portMtu}): the largest UD message. */
    public Mtu portMtu() { return config.portMtu; }

    /** On the QP's loop. */
    void removeQp(QueuePair qp) {
        qp.tx.removeQp(qp);
    }

    /** The number the first QP created on this device gets (random per device: {@link QpnAllocator}). */
    int firstQpn() { return qpns.start(); }

    /** On the loop of the shard that owns {@code qpn}. */
    QueuePair lookupQp(int qpn) {
        return shards.owner(qpn).lookupQp(qpn);
    }

    public int qpCount() {
        return shards.count == 1 ? transport.call(transport::qpCount) : shards.qpCount();
    }

    /**
     * The queue pairs on the device now (destroyed ones have left), in no particular order: a copy taken on
     * the event loop, for monitoring (metrics, JMX) that reads their counters at its own pace. None once the
     * device is closed.
     */
    public List<QueuePair> queuePairs() {
        if (!open) return List.of();
        return shards.count == 1 ? transport.call(transport::queuePairs) : shards.queuePairs();
    }

    KeyTable keys() { return keys; }
    /** The first shard (the only one by default). */
    Transport transport() { return transport; }
    Shards shards() { return shards; }

    /**
     * A consistent copy of the device counters. With several event loops: the sum of each loop's consistent copy.
     */
    public DeviceCounters counters() {
        return shards.count == 1 ? transport.call(() -> transport.counters().copy()) : shards.counters();
    }

    /** How many timer checks the device's timer wheels have run (tests). */
    long timerChecks() {
        long n = 0;
        for (Transport t : shards.all) n += t.call(() -> t.timers().checks);
        return n;
    }

    /** Runs due timers now, on the event loop(s) (for tests that step an injected clock). */
    public void runTimers() {
        for (Transport t : shards.all) {
            t.call(() -> {
                t.timers().tick();
                return null;
            });
        }
    }

    /**
     * Runs a task on the device's event loop and waits for it (tests, tools). With several event loops: on the
     * first, which owns QP 1; it may read counters and queue pairs of the others (it waits for them).
     */
    public void runOnLoop(Runnable task) {
        transport.call(() -> {
            task.run();
            return null;
        });
    }

    /**
     * The runner of the device's own work besides packets, on the loop that owns QP 1: the connection manager runs
     * there ({@link DeviceRunner}).
     */
    public DeviceRunner runner() {
        return runner;
    }

    /**
     * Sets what the device calls, with the QP number, when a queue pair accepts its first request packet (in its
     * life since RESET): the communication-established event (IBA 11.6.3, {@code IBV_EVENT_COMM_EST}), which tells
     * a connection manager whose RTU was lost that the requester has the REP. Called on the device's loop; it must
     * not block. One listener per device (the CM's); null removes it.
     */
    public void setFirstPacketListener(java.util.function.IntConsumer listener) {
        firstPacketListener.set(listener);
    }

    /** Removes {@code listener} if it is the one set. */
    public void removeFirstPacketListener(java.util.function.IntConsumer listener) {
        firstPacketListener.compareAndSet(listener, null);
    }

    private final java.util.concurrent.atomic.AtomicReference<java.util.function.IntConsumer> firstPacketListener =
            new java.util.concurrent.atomic.AtomicReference<>();

    /** A QP accepted its first request packet (loop). A listener that fails is logged, never the packet's problem. */
    void firstPacket(int qpn) {
        java.util.function.IntConsumer l = firstPacketListener.get();
        if (l == null) return;
        try {
            l.accept(qpn);
        } catch (RuntimeException e) {
            log.debug("first-packet listener: {}", e.toString());
        }
    }

    public void setAsyncEventListener(AsyncEventListener listener) {
        this.listener = listener;
    }

    void asyncEvent(AsyncEvent event, CompletionQueue cq, QueuePair qp, String detail) {
        AsyncEventListener l = listener;
        if (l != null) {
            l.onEvent(event, cq, qp, detail);
        } else if (log.isDebugEnabled()) {
            log.debug("{} {}: {}", event, qp != null ? qp : cq, detail);
        }
    }

    void checkOpen() {
        if (!open) throw new IllegalStateException("device " + config.address.getHostAddress() + " is closed");
    }

    public boolean isOpen() {
        return open;
    }

    @Override
    public void close() {
        if (!open) return;
        open = false;
        try {
            shards.clearQps(true);
        } finally {
            shards.close();
        }
    }
}
