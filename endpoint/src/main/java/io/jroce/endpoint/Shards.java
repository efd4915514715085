package io.jroce.endpoint;

import io.jroce.wire.pcap.PcapWriter;
import io.netty.channel.ChannelHandler;
import io.netty.channel.epoll.Epoll;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The device's shards ({@link DeviceConfig#eventLoops}): one {@link Transport} each, with its own event loop and
 * its own UDP socket, all bound to the device's address and port with {@code SO_REUSEPORT}. A queue pair belongs
 * to one shard, {@link #ownerIndex} of its number, and all its transport state, timers, sends and completions run
 * on that shard's loop.
 *
 * <p>Receive: once every shard's socket is bound (shard i joins the reuseport group i-th), a classic BPF program
 * is attached to the group ({@link ShardSteering}) that picks, for each datagram, the socket of the shard that
 * owns its destination QP ({@link #ownerIndex} computed in the kernel), so no shard reads another's datagrams
 * ({@link #steered}). Without it (refused by the kernel, a 32-bit JVM, or turned off with {@code jroce.steer=false})
 * the kernel spreads datagrams over the sockets by a hash of the 4-tuple, which knows nothing of QPs, and a shard
 * that reads a datagram for a QP it does not own hands it to the owner ({@link ShardRouter}); the router stays
 * on in both cases for what the program cannot place.
 *
 * <p>One shard (the default) is the plain single-loop device: no {@code SO_REUSEPORT}, no handoff, the one loop
 * owns everything. With NIO there is no {@code SO_REUSEPORT} to share the port, so a device asked for more loops
 * runs one (and logs it).
 *
 * <p>Threads: application threads may block on any shard's loop ({@code call}). Shard 0, where
 * {@link Device#runOnLoop} runs its tasks, may block on the others (to read their counters and queue pairs); no
 * other loop blocks on another, so no two loops wait for each other. Code a loop runs for the user (CQ and async
 * event listeners) should not make blocking verbs calls on another shard's QP, or two loops could wait for each
 * other until the 30 s call timeout.
 */
final class Shards {
    private static final Logger log = LoggerFactory.getLogger(Shards.class);
    /** Most event loops a device may run. */
    static final int MAX = 64;

    final Transport[] all;
    final int count;
    /** Whether the kernel steers each datagram to its owner's socket ({@link ShardSteering}). */
    final boolean steered;
    private final PcapWriter pcap;

    Shards(Device device, DeviceConfig config) throws IOException {
        int n = config.eventLoops;
        if (n > 1 && config.agentMode == AgentMode.INVOKED) {
            // one driver per device: the application's thread runs the one loop; several loops need threads of their own
            log.warn("{} event loops run on threads of their own: the device runs dedicated, not invoked", n);
        }
        boolean epoll = config.preferEpoll && Epoll.isAvailable();
        if (n > 1 && !epoll) {
            log.warn("{} event loops need SO_REUSEPORT of the epoll transport; NIO runs one", n);
            n = 1;
        }
        if (n > 1 && config.filter != null && !config.filter.getClass().isAnnotationPresent(ChannelHandler.Sharable.class)) {
            throw new IllegalArgumentException("a device with " + n + " event loops puts its datagram filter on each loop's socket: "
                    + config.filter.getClass().getSimpleName() + " must be @Sharable (FaultInjector is)");
        }
        this.count = n;
        this.all = new Transport[n];
        this.pcap = config.pcap == null ? null : new PcapWriter(config.pcap);
        try {
            int port = config.port;
            for (int i = 0; i < n; i++) {
                all[i] = new Transport(device, config, this, i, port, pcap);
                port = all[0].localPort(); // a port-0 device: the others join the port the first one got
            }
            this.steered = n > 1 && steer(config);
        } catch (IOException | RuntimeException | Error e) {
            closeTransports();
            closePcap();
            throw e;
        }
    }

    /**
     * Attaches the steering program once every shard's socket is in the group (shard i joined i-th, so index i is
     * shard i's socket); logs which path datagrams take.
     */
    private boolean steer(DeviceConfig config) {
        String where = config.address.getHostAddress() + ":" + all[0].localPort();
        if (!config.steer) {
            log.debug("{}: {} event loops; steering off (jroce.steer=false): loops hand datagrams for others' QPs over", where, count);
            return false;
        }
        String refused = all[0].port().steer(count);
        if (refused != null) {
            log.info("{}: {} event loops; the kernel refused the steering program ({}): loops hand datagrams for others' QPs over",
                    where, count, refused);
            return false;
        }
        log.debug("{}: {} event loops; the kernel steers each datagram to its QP's loop", where, count);
        return true;
    }

    /** The shard that owns QP {@code qpn}: QP 1 (GSI, the CM) on shard 0, others by number, so creation spreads them. */
    static int ownerIndex(int qpn, int count) {
        return count == 1 || qpn == Device.GSI_QPN ? 0 : qpn % count;
    }

    Transport owner(int qpn) {
        return all[ownerIndex(qpn, count)];
    }

    Transport first() {
        return all[0];
    }

    /** The sum of the shards' counters, each copied on its own loop. */
    DeviceCounters counters() {
        DeviceCounters sum = all[0].call(() -> all[0].counters().copy());
        for (int i = 1; i < count; i++) {
            Transport t = all[i];
            sum.add(t.call(() -> t.counters().copy()));
        }
        return sum;
    }

    long packetsIn() {
        long n = 0;
        for (Transport t : all) n += t.call(() -> t.counters().packetsIn);
        return n;
    }

    int qpCount() {
        int n = 0;
        for (Transport t : all) n += t.call(t::qpCount);
        return n;
    }

    List<QueuePair> queuePairs() {
        List<QueuePair> qps = new ArrayList<>();
        for (Transport t : all) qps.addAll(t.call(t::queuePairs));
        return qps;
    }

    void goLive() {
        for (Transport t : all) t.goLive();
    }

    /** Forgets every QP (after the warm-up, at close); on each shard's loop. */
    void clearQps(boolean fail) {
        for (Transport t : all) t.call(() -> t.clearQps(fail));
    }

    void close() {
        try {
            closeTransports();
        } finally {
            closePcap();
        }
    }

    /**
     * Every socket first (no shard reads, so none hands a datagram over any more), then every loop: their
     * shutdowns run together, and what is still queued for handoff is released.
     */
    private void closeTransports() {
        RuntimeException first = null;
        for (Transport t : all) {
            if (t == null) continue;
            try {
                t.closeChannel();
            } catch (RuntimeException e) {
                if (first == null) first = e;
            }
        }
        List<io.netty.util.concurrent.Future<?>> stopping = new ArrayList<>();
        for (Transport t : all) {
            if (t != null) stopping.add(t.shutdownLoop());
        }
        for (int i = 0, k = 0; i < all.length; i++) {
            if (all[i] != null) all[i].awaitStopped(stopping.get(k++));
        }
        for (Transport t : all) {
            if (t != null) t.discardHandoffs();
        }
        if (first != null) throw first;
    }

    private void closePcap() {
        if (pcap != null) {
            try {
                pcap.close();
            } catch (IOException e) {
                log.warn("closing pcap: {}", e.toString());
            }
        }
    }
}
