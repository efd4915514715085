package io.jroce.endpoint;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.internal.PlatformDependent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Queue;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Hands datagrams between the shards of a device with several event loops ({@link Shards}): a shard that reads a
 * datagram for a QP it does not own copies it into a pooled buffer (its sender in front) and queues it to the
 * owner's bounded queue; the owner checks the ICRC, decodes and dispatches it. One queue per owner keeps the order
 * of what one shard reads. A full queue drops the datagram, as a full socket buffer would. Absent (null) with one
 * shard.
 *
 * <p>With steering ({@link ShardSteering}, the default where the kernel takes the program) the kernel already
 * delivers each datagram to its owner's socket and this router hands nothing over; it is the fallback, and catches
 * what steering cannot place: datagrams read before the program was attached, and the later segments of a UDP GRO
 * read, which the kernel placed by its first. Without steering the kernel spreads datagrams over the sockets by a
 * hash of the 4-tuple, and between two jroce devices (one source port each) one shard reads all of a peer's
 * datagrams and hands the others their share (counter {@code shard_handoffs}).
 */
final class ShardRouter {
    private static final Logger log = LoggerFactory.getLogger(ShardRouter.class);
    private final Transport shard;
    private final Shards shards;
    private final ByteBufAllocator alloc;
    private final DeviceCounters counters;
    private final boolean ipv6;
    /** Datagrams other shards read for our QPs (sender header + datagram). */
    private final Queue<ByteBuf> handoffs;
    private final AtomicBoolean scheduled = new AtomicBoolean();
    private final Runnable drainTask = this::drain;

    /** Datagrams a shard's handoff queue holds at most: per KiB of socket buffer one (4096 for the default 4 MiB). */
    static int capacity(DeviceConfig config) {
        return Math.max(1024, config.socketBufferBytes / 1024);
    }

    ShardRouter(Transport shard, Shards shards, DeviceConfig config, ByteBufAllocator alloc, DeviceCounters counters, boolean ipv6) {
        this.shard = shard;
        this.shards = shards;
        this.alloc = alloc;
        this.counters = counters;
        this.ipv6 = ipv6;
        this.handoffs = PlatformDependent.newFixedMpscQueue(capacity(config));
    }

    /** The sender in front of a handed-off datagram: IPv4 address (4) or IPv6 address (16), then the UDP port (4). */
    private int header() {
        return ipv6 ? 20 : 8;
    }

    /**
     * Hands the datagram to the shard that owns {@code destQpn} and returns true, or returns false when this shard
     * owns it. The datagram is copied (the receive batch buffer is reused) behind its sender.
     */
    boolean handOffIfNotOurs(int destQpn, ByteBuf buf, int off, int len, int srcAddr, byte[] src16, int srcPort) {
        Transport owner = shards.owner(destQpn);
        if (owner == shard) return false;
        ByteBuf b = alloc.directBuffer(header() + len);
        if (ipv6) b.writeBytes(src16);
        else b.writeInt(srcAddr);
        b.writeInt(srcPort);
        b.writeBytes(buf, off, len);
        ShardRouter to = owner.router();
        if (!to.handoffs.offer(b)) {
            b.release();
            counters.drop(DropReason.HANDOFF_OVERFLOW);
            return true;
        }
        counters.shardHandoffs++;
        if (to.scheduled.compareAndSet(false, true)) owner.execute(to.drainTask);
        return true;
    }

    /** Runs the datagrams other shards handed us, in the order each queued them, then flushes what they produced. */
    private void drain() {
        scheduled.set(false); // before draining: a datagram queued after our last poll schedules us again
        int header = header();
        ReceivePath receive = shard.receivePath();
        ByteBuf b;
        while ((b = handoffs.poll()) != null) {
            try {
                int srcAddr = 0;
                if (ipv6) {
                    receive.source16(b, 0);
                    b.skipBytes(16);
                } else {
                    srcAddr = b.readInt();
                }
                int srcPort = b.readInt();
                receive.process(b, header, b.writerIndex() - header, srcAddr, srcPort);
            } catch (RuntimeException e) {
                log.warn("handed-off datagram: {}", e.toString());
            } finally {
                b.release();
            }
        }
        shard.flushNow();
    }

    /** Releases what is still queued (the loop is gone). */
    void discard() {
        for (ByteBuf b; (b = handoffs.poll()) != null; ) b.release();
    }
}
