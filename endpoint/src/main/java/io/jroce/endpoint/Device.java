package io.jroce.endpoint;

import io.netty.util.collection.IntObjectHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.InetAddress;
import java.util.List;

/**
 * A software RoCEv2 device: one IPv4 or IPv6 address and UDP port (4791 by default), one GID (for
 * IPv4 the address's IPv4-mapped form, for IPv6 the address itself, at index 0), and the protection domains, memory regions, completion queues and queue
 * pairs created on it. {@link #close()} releases the socket, buffers and timers.
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
    private final Transport transport;
    private final IntObjectHashMap<QueuePair> qps = new IntObjectHashMap<>(); // event loop only
    private int nextQpn = 0x11; // QPN 0 and 1 are the special QPs
    /** The Q_Key of QP 1, the GSI QP ({@code IB_QP1_QKEY}, include/rdma/ib_mad.h). */
    public static final int GSI_QKEY = 0x80010000;
    /** The GSI QP's number. */
    public static final int GSI_QPN = 1;
    private volatile boolean open = true;
    private volatile AsyncEventListener listener;

    private Device(DeviceConfig config) throws IOException {
        this.config = config;
        this.transport = new Transport(this, config);
        try {
            if (config.warmUp) {
                long t0 = System.nanoTime();
                int completions = Warmup.run(this);
                if (completions < Warmup.COMPLETIONS) awaitQuietAfterWarmup();
                if (log.isDebugEnabled()) {
                    log.debug("device {}: warm-up {} of {} completions in {} us", config.address.getHostAddress(), completions,
                            Warmup.COMPLETIONS, (System.nanoTime() - t0) / 1000);
                }
                transport.call(() -> {
                    qps.clear();
                    nextQpn = 0x11; // the warm-up's QPNs are handed out again
                    return null;
                });
            }
            transport.goLive();
        } catch (RuntimeException | Error e) {
            transport.close();
            throw e;
        }
    }

    /**
     * A warm-up that ran out of time (a busy machine) leaves packets of its QPs on their way: in the socket's
     * queue, or behind other work on the event loop. Were they read after the device went live, they would
     * count as drops (unknown QP) of the live device, or reach a new QP that was given the same number. So
     * wait until no datagram has arrived for {@link #QUIET_NANOS}, at most {@link #QUIET_MAX_NANOS}.
     */
    private void awaitQuietAfterWarmup() {
        long start = System.nanoTime();
        long seen = -1;
        long quietSince = start;
        while (true) {
            long now = System.nanoTime();
            long in = transport.call(() -> transport.counters().packetsIn);
            if (in != seen) {
                seen = in;
                quietSince = now;
            } else if (now - quietSince >= QUIET_NANOS) {
                return;
            }
            if (now - start >= QUIET_MAX_NANOS) {
                log.debug("device {}: warm-up traffic still arriving after {} ms", config.address.getHostAddress(),
                        QUIET_MAX_NANOS / 1_000_000);
                return;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(QUIET_NANOS / 5);
        }
    }

    private static final long QUIET_NANOS = java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(50);
    private static final long QUIET_MAX_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(2);

    /** Opens a device on {@code address}:4791. */
    public static Device open(InetAddress address) throws IOException {
        return new Device(new DeviceConfig(address));
    }

    public static Device open(DeviceConfig config) throws IOException {
        return new Device(config);
    }

    DeviceConfig config() { return config; }

    /** How long a waiting completion-queue poll spins before it parks: the busy-poll time, else a short default. */
    long cqSpinNanos() { return config.busyPollNanos > 0 ? config.busyPollNanos : CompletionQueue.SPIN_NANOS; }
    boolean busyPoll() { return config.busyPollNanos > 0; }

    public InetAddress address() { return config.address; }
    public int port() { return transport.localPort(); }
    /** True when the epoll native transport (recvmmsg/sendmmsg, IPv4 ID 0) is in use. */
    public boolean isEpoll() { return transport.isEpoll(); }

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
        return transport.call(() -> {
            int qpn = nextQpn;
            while (qps.containsKey(qpn)) qpn = qpn >= 0xFFFFFF ? 0x11 : qpn + 1;
            nextQpn = qpn >= 0xFFFFFF ? 0x11 : qpn + 1;
            QueuePair qp = new QueuePair(this, pd, qpn, init, init.qpType, transport);
            qps.put(qpn, qp);
            return qp;
        });
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
        QueuePair qp = transport.call(() -> {
            if (qps.containsKey(GSI_QPN)) throw new VerbsException("QP 1 (GSI) is already open on this device");
            QueuePair q = new QueuePair(this, pd, GSI_QPN, init, QpType.UD, transport);
            qps.put(GSI_QPN, q);
            return q;
        });
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(GSI_QKEY));
        qp.modify(new QpAttr().state(QpState.RTR));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
        return qp;
    }

    /** The port's active MTU ({@link DeviceConfig#portMtu}): the largest UD message. */
    public Mtu portMtu() { return config.portMtu; }

    void removeQp(QueuePair qp) {
        qps.remove(qp.qpNum());
    }

    /** Event loop only. */
    QueuePair lookupQp(int qpn) {
        return qps.get(qpn);
    }

    public int qpCount() {
        return transport.call(qps::size);
    }

    /**
     * The queue pairs on the device now (destroyed ones have left), in no particular order: a copy taken on
     * the event loop, for monitoring (metrics, JMX) that reads their counters at its own pace. None once the
     * device is closed.
     */
    public List<QueuePair> queuePairs() {
        if (!open) return List.of();
        return transport.call(() -> List.copyOf(qps.values()));
    }

    KeyTable keys() { return keys; }
    Transport transport() { return transport; }

    /** A consistent copy of the device counters. */
    public DeviceCounters counters() {
        return transport.call(() -> transport.counters().copy());
    }

    /** Runs due timers now, on the event loop (for tests that step an injected clock). */
    public void runTimers() {
        transport.call(() -> {
            transport.timers().tick();
            return null;
        });
    }

    /** Runs a task on the device's event loop and waits for it (tests, tools). */
    public void runOnLoop(Runnable task) {
        transport.call(() -> {
            task.run();
            return null;
        });
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
            transport.call(() -> {
                for (QueuePair qp : qps.values()) {
                    if (qp.state != QpState.RESET && qp.state != QpState.ERR) qp.toError("device closed");
                }
                qps.clear();
                return null;
            });
        } finally {
            transport.close();
        }
    }
}
