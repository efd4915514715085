package io.jroce.endpoint;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;

import java.net.InetSocketAddress;

/**
 * Groups the packets of one flush batch into UDP GSO super-datagrams ({@code UDP_SEGMENT}): a run of
 * packets of one length to one peer socket leaves as one buffer that the kernel (or the first device
 * without the offload) cuts into datagrams of that length. Every segment is a whole RoCE packet with its
 * own BTH and ICRC.
 *
 * <p><b>The IPv4 ID of a segment.</b> The socket sends ID 0 with DF (see {@link Transport}); when a GSO
 * buffer is cut, segment k gets ID first + k (Linux net/ipv4/af_inet.c inet_gso_segment: {@code
 * iph->id = htons(id++)} for UDP_L4 segments), i.e. ID k. The ICRC covers the ID, so the caller asks
 * {@link #position} for k before it stamps the ICRC, then hands the packet to {@link #add}.
 *
 * <p><b>Which runs.</b> A packet joins the open run when it goes to the same socket and QP and has the run's
 * length, up to {@link #maxSegments} segments and {@link #MAX_BYTES} bytes. A shorter packet ends a run of
 * two or more as its tail (GSO allows a shorter last segment: the last packet of a message); after a single
 * packet it starts a new run instead, so a message's longer first packet (RETH, AETH) does not turn the
 * run of equal middle packets behind it into runs of two. A run of one leaves as a plain datagram.
 *
 * <p>Event loop only. Nothing is allocated per packet; a run of two or more costs one composite buffer.
 */
final class GsoBatcher {
    /** Largest UDP payload of one IPv4 datagram (65535 - 20 - 8); the same bound is used for IPv6. */
    static final int MAX_BYTES = 65_507;
    /**
     * Segments per super-datagram. Linux refuses more than UDP_MAX_SEGMENTS (include/linux/udp.h: 64 up
     * to 6.8, 128 since); 64 works everywhere and already covers 62 packets of RoCE MTU 1024.
     */
    static final int MAX_SEGMENTS = 64;

    /** Where finished runs go. */
    interface Sink {
        /** One packet alone (a run of one). */
        void single(ByteBuf packet, InetSocketAddress to);

        /** {@code count} packets back to back, all {@code segmentSize} bytes but a possibly shorter last one. */
        void segmented(CompositeByteBuf packets, int segmentSize, int count, InetSocketAddress to);
    }

    private final ByteBufAllocator alloc;
    private final int maxSegments;
    private final Sink sink;

    // the open run: first == null when there is none
    private ByteBuf first;
    private CompositeByteBuf more;
    private InetSocketAddress to;
    private int qpn;
    private int segmentSize;
    private int count;
    private int limit;

    GsoBatcher(ByteBufAllocator alloc, int maxSegments, Sink sink) {
        if (maxSegments < 1 || maxSegments > MAX_SEGMENTS) throw new IllegalArgumentException("1.." + MAX_SEGMENTS + " segments");
        this.alloc = alloc;
        this.maxSegments = maxSegments;
        this.sink = sink;
    }

    /**
     * The index the next packet ({@code len} bytes to {@code dest}'s QP {@code destQpn}) will have in its
     * super-datagram, which is the IPv4 ID it will leave with. Emits the open run first when the packet cannot join
     * it. A run holds one QP's packets: a receiver with several event loops steers a datagram by its first BTH.
     */
    int position(InetSocketAddress dest, int destQpn, int len) {
        if (first == null) return 0;
        boolean sameDest = destQpn == qpn && (dest == to || dest.equals(to));
        if (!sameDest || !fits(count, segmentSize, len)) {
            emit();
            return 0;
        }
        return count;
    }

    /**
     * Whether a packet of {@code len} bytes may follow a run of {@code count} packets of {@code segmentSize}: one of
     * the same length, or a shorter one as the tail of a run of two or more.
     */
    static boolean fits(int count, int segmentSize, int len) {
        return len == segmentSize || len < segmentSize && count > 1;
    }

    /** How many packets of {@code len} bytes one super-datagram may hold, at most {@code maxSegments}. */
    static int limit(int maxSegments, int len) {
        return Math.max(1, Math.min(maxSegments, MAX_BYTES / len));
    }

    /** Adds the packet whose {@link #position} was just asked (same destination and length). */
    void add(ByteBuf packet, InetSocketAddress dest, int destQpn) {
        int len = packet.readableBytes();
        if (first == null) {
            first = packet;
            to = dest;
            qpn = destQpn;
            segmentSize = len;
            count = 1;
            limit = limit(maxSegments, len);
            if (limit == 1) emit();
            return;
        }
        if (more == null) {
            more = alloc.compositeDirectBuffer(maxSegments);
            more.addComponent(true, first);
        }
        more.addComponent(true, packet);
        count++;
        // a shorter packet is the tail; a full run cannot grow
        if (len < segmentSize || count == limit) emit();
    }

    /** Sends the open run, if any (before a flush). */
    void emit() {
        if (first == null) return;
        ByteBuf one = first;
        CompositeByteBuf all = more;
        first = null;
        more = null;
        if (all == null) {
            sink.single(one, to);
        } else {
            sink.segmented(all, segmentSize, count, to);
        }
        to = null;
    }

    /** Releases the open run without sending it (the device is closing). */
    void discard() {
        if (first == null) return;
        if (more != null) more.release();
        else first.release();
        first = null;
        more = null;
        to = null;
    }

    /** Whether a run is open (tests). */
    boolean open() {
        return first != null;
    }
}
