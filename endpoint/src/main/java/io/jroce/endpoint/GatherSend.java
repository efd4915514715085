package io.jroce.endpoint;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.socket.DatagramPacket;
import io.netty.channel.unix.IovArray;
import io.netty.channel.unix.Limits;
import io.netty.channel.unix.SegmentedDatagramPacket;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.net.InetSocketAddress;

/**
 * Sends a flush's datagrams with the payload gathered from registered memory: each datagram is a list of pieces
 * ({@code iovec}s) handed to {@code sendmmsg}, so a SEND's, WRITE's or READ response's payload goes from the memory
 * region to the kernel without first being copied into the packet buffer. A datagram is its packet buffer (headers,
 * pad and ICRC; the buffer is allocated at the packet's full size, the payload's place left unwritten) with region
 * pieces standing in for stretches of it ({@link TransmitPath} decides which and stamps the ICRC over the pieces).
 * Every datagram of the flush leaves through here, pieces or not, so they keep their order.
 *
 * <p><b>Nothing that names a region outlives the flush.</b> The channel may keep datagrams queued until the socket
 * drains (EPOLLOUT), and a region may be deregistered, and its memory freed, meanwhile. So only what the socket
 * takes now leaves gathered: when {@code sendmmsg} stops short (the send buffer is full) or the channel still has
 * datagrams queued from an earlier flush, the rest are completed by copying their pieces into their own buffers (the
 * gap left for them), and go to the channel as plain datagrams, which waits for the socket as usual. Until then the
 * datagram holds the region's buffer (its {@code ByteBuf}), so the memory cannot be collected under it.
 * Retransmission reads the region again, as before. The region is read when the datagram is sent, so the shard
 * sends what holds pieces before it writes registered memory itself ({@link PacketOut#beforeMemoryWrite}): a READ's
 * responses carry the bytes as they were when it was executed, not as a WRITE behind it left them.
 *
 * <p>The call is Netty's own {@code sendmmsg} (LinuxSocket) with Netty's native datagram objects, reached as in
 * {@link DirectReceive}; their fields are set here from the destination's address bytes, so no address object is
 * made per datagram (Netty's writer copies the recipient's address into a new array per datagram). The
 * {@code iovec}s are in an {@link IovArray} of this sender's own: up to {@link Limits#IOV_MAX} of them, and up to
 * {@link Limits#UIO_MAX_IOV} datagrams, per call. Used with epoll and without a datagram filter ({@link UdpPort});
 * {@link DeviceConfig#zeroCopy} turns it off. Loop only.
 *
 * <p><b>UDP GSO</b> ({@link DeviceConfig#gso}): a run of packets of one length to one peer (a shorter last one
 * allowed) leaves as one {@code UDP_SEGMENT} message whose iovecs are all of the run's pieces, so the kernel builds
 * one buffer for the run and cuts it into one datagram per packet (on loopback at the receiving socket) without the
 * payload ever being copied in user space. The runs are fixed as the packets are stamped: segment k leaves with
 * IPv4 ID k (Linux net/ipv4/af_inet.c inet_gso_segment), which the ICRC covers, so {@link TransmitPath} asks
 * {@link #position} before it stamps the ICRC. Runs follow {@link GsoBatcher}'s rules, and a run holds packets for
 * one destination QP: a receiver with several event loops steers each datagram by its QPN ({@link ShardSteering}),
 * and its program sees a super-datagram's first header only. A run the socket does not take goes to the channel as
 * a {@code SegmentedDatagramPacket}, its IDs kept. An error that says the route cannot segment (EIO, EINVAL,
 * EOPNOTSUPP) loses that run (retransmission recovers it) and turns GSO off for good.
 */
final class GatherSend {
    private static final Logger log = LoggerFactory.getLogger(GatherSend.class);
    /** Datagrams held between flushes; a full list is sent at once (the datagrams go out in order). */
    static final int MAX_DATAGRAMS = 1024;
    /** Region pieces held between flushes; likewise. */
    static final int MAX_PIECES = 4096;

    /** Whether Netty's native datagram objects were found (see {@link DirectReceive}). */
    static final boolean AVAILABLE;
    private static final VarHandle MEMORY_ADDRESS; // long: the datagram's first iovec
    private static final VarHandle COUNT;          // int: its iovec count
    private static final VarHandle SEGMENT_SIZE;   // int: 0, no UDP_SEGMENT
    private static final VarHandle RECIPIENT_ADDR; // byte[16]: IPv6, or IPv4-mapped IPv6
    private static final VarHandle RECIPIENT_ADDR_LEN;
    private static final VarHandle RECIPIENT_SCOPE_ID;
    private static final VarHandle RECIPIENT_PORT;

    static {
        VarHandle mem = null, count = null, seg = null, addr = null, addrLen = null, scope = null, port = null;
        boolean ok = DirectReceive.AVAILABLE;
        if (ok) {
            try {
                Class<?> packetClass = Class.forName("io.netty.channel.epoll.NativeDatagramPacketArray$NativeDatagramPacket");
                MethodHandles.Lookup p = MethodHandles.privateLookupIn(packetClass, MethodHandles.lookup());
                mem = p.findVarHandle(packetClass, "memoryAddress", long.class);
                count = p.findVarHandle(packetClass, "count", int.class);
                seg = p.findVarHandle(packetClass, "segmentSize", int.class);
                addr = p.findVarHandle(packetClass, "recipientAddr", byte[].class);
                addrLen = p.findVarHandle(packetClass, "recipientAddrLen", int.class);
                scope = p.findVarHandle(packetClass, "recipientScopeId", int.class);
                port = p.findVarHandle(packetClass, "recipientPort", int.class);
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                ok = false;
            }
        }
        AVAILABLE = ok;
        MEMORY_ADDRESS = mem;
        COUNT = count;
        SEGMENT_SIZE = seg;
        RECIPIENT_ADDR = addr;
        RECIPIENT_ADDR_LEN = addrLen;
        RECIPIENT_SCOPE_ID = scope;
        RECIPIENT_PORT = port;
    }

    private final EpollDatagramChannel channel;
    private final DeviceCounters counters;
    private final SendEnvelope.Pool envelopes;
    private final Object socket;
    private final Object array;
    private final Object[] packets;
    /** Each native datagram's recipient address array (Netty's, filled per datagram). */
    private final byte[][] recipientAddr;
    private final IovArray iov = new IovArray();
    /**
     * What each native datagram's recipient fields hold (IPv6: the address array, by identity; IPv4: the address),
     * so that a flush to one peer sets them once per slot, not per datagram.
     */
    private final byte[][] slotDst16;
    private final int[] slotDst4;
    private final int[] slotPort;
    private final boolean[] slotSet;
    private final int maxPerCall;
    /** Whether runs leave as GSO super-datagrams; false once the kernel has refused one. */
    private boolean gso;
    /** For each native datagram of the call being made: its first datagram and how many it carries. */
    private final int[] nativeFirst;
    private final int[] nativeRun;

    // the datagrams of this flush, in order
    private final ByteBuf[] buf = new ByteBuf[MAX_DATAGRAMS];
    private final InetSocketAddress[] to = new InetSocketAddress[MAX_DATAGRAMS];
    private final int[] dst4 = new int[MAX_DATAGRAMS];
    private final byte[][] dst16 = new byte[MAX_DATAGRAMS][];
    private final int[] firstPiece = new int[MAX_DATAGRAMS];
    private final int[] pieceCount = new int[MAX_DATAGRAMS];
    private int count;
    /** At a run's first datagram: how many datagrams it holds (1 alone); 0 at the others of a run. */
    private final int[] run = new int[MAX_DATAGRAMS];
    // the open run: runFirst < 0 when there is none
    private int runFirst = -1;
    private int runSize;
    private int runCount;
    private int runLimit;
    private int runIovecs;
    private int runQpn;
    // their region pieces: pieceLen bytes at pieceIndex of pieceMem stand for the packet buffer's [piecePos, +pieceLen)
    private final ByteBuf[] pieceMem = new ByteBuf[MAX_PIECES];
    private final int[] pieceIndex = new int[MAX_PIECES];
    private final int[] pieceLen = new int[MAX_PIECES];
    private final int[] piecePos = new int[MAX_PIECES];
    private int pieces;
    private boolean closed;
    /** Tests: every datagram goes to the channel, its pieces copied in, as when the socket would block. */
    boolean viaChannel;

    /** Datagrams sent here, those of them with region pieces, and those completed by a copy for the channel (tests). */
    long sent;
    long gathered;
    long copied;
    /** GSO runs that went to the channel as one segmented datagram each (tests). */
    long runsViaChannel;

    GatherSend(EpollDatagramChannel channel, DeviceCounters counters, SendEnvelope.Pool envelopes, boolean gso) throws Throwable {
        if (!AVAILABLE) throw new IllegalStateException("Netty's native datagram objects were not found");
        this.channel = channel;
        this.gso = gso && EpollDatagramChannel.isSegmentedDatagramPacketSupported();
        this.counters = counters;
        this.envelopes = envelopes;
        this.socket = (Object) DirectReceive.SOCKET.invokeExact(channel);
        this.array = (Object) DirectReceive.NEW_ARRAY.invokeExact();
        this.packets = (Object[]) DirectReceive.PACKETS.invokeExact(array);
        this.maxPerCall = Math.min(packets.length, Limits.UIO_MAX_IOV);
        this.recipientAddr = new byte[packets.length][];
        for (int i = 0; i < packets.length; i++) {
            recipientAddr[i] = (byte[]) RECIPIENT_ADDR.get(packets[i]);
            SEGMENT_SIZE.set(packets[i], 0); // never UDP_SEGMENT
        }
        this.slotDst16 = new byte[packets.length][];
        this.slotDst4 = new int[packets.length];
        this.slotPort = new int[packets.length];
        this.slotSet = new boolean[packets.length];
        this.nativeFirst = new int[packets.length];
        this.nativeRun = new int[packets.length];
    }

    /**
     * The place the next packet ({@code len} bytes to {@code to}'s QP {@code destQpn}, {@code k} region pieces) will
     * have in its GSO run, which is the IPv4 ID it will leave with: 0 when it starts a run or leaves alone. Closes the
     * open run when the packet cannot join it; {@link #add} with {@code segmentable} follows for the same packet.
     */
    int position(InetSocketAddress to, int destQpn, int len, int k) {
        if (count == MAX_DATAGRAMS || pieces + k > MAX_PIECES) flush(); // as add would: before the run is counted
        if (runFirst < 0) return 0;
        InetSocketAddress at = this.to[runFirst];
        if (runCount < runLimit && destQpn == runQpn && runIovecs + 2 * k + 1 <= Limits.IOV_MAX && (to == at || to.equals(at))
                && GsoBatcher.fits(runCount, runSize, len)) {
            return runCount;
        }
        runFirst = -1;
        return 0;
    }

    /** Whether runs leave as GSO super-datagrams (tests). */
    boolean segmenting() {
        return gso;
    }

    /**
     * Holds {@code b} (released once sent) for the flush, to {@code to} (IPv4: {@code dst4}; IPv6: {@code dst16},
     * kept by reference), with {@code k} region pieces: {@code len[i]} bytes at {@code index[i]} of {@code mr[i]}'s
     * memory for the buffer's bytes from {@code pos[i]} on (in order, not overlapping).
     */
    void add(ByteBuf b, InetSocketAddress to, int dst4, byte[] dst16, int destQpn, MemoryRegion[] mr, int[] index, int[] len,
             int[] pos, int k, boolean segmentable) {
        if (count == MAX_DATAGRAMS || pieces + k > MAX_PIECES) flush(); // position did this first for a segmentable one
        int d = count++;
        buf[d] = b;
        this.to[d] = to;
        this.dst4[d] = dst4;
        this.dst16[d] = dst16;
        firstPiece[d] = pieces;
        pieceCount[d] = k;
        for (int i = 0; i < k; i++) {
            int p = pieces++;
            pieceMem[p] = mr[i].mem();
            pieceIndex[p] = index[i];
            pieceLen[p] = len[i];
            piecePos[p] = pos[i];
        }
        if (!segmentable || !gso) {
            runFirst = -1;
            run[d] = 1;
        } else if (runFirst >= 0) { // position found it joins the open run
            run[runFirst] = ++runCount;
            run[d] = 0;
            runIovecs += 2 * k + 1;
            // a shorter tail ends it; a full run cannot grow
            if (b.readableBytes() < runSize || runCount == runLimit) runFirst = -1;
        } else {
            int bytes = b.readableBytes();
            run[d] = 1;
            runLimit = GsoBatcher.limit(GsoBatcher.MAX_SEGMENTS, bytes);
            if (runLimit > 1) {
                runFirst = d;
                runSize = bytes;
                runCount = 1;
                runIovecs = 2 * k + 1;
                runQpn = destQpn;
            }
        }
    }

    /** Region pieces held: datagrams that read registered memory when they are sent. */
    int pieces() {
        return pieces;
    }

    /** Whether datagrams are held (tests). */
    int held() {
        return count;
    }

    /**
     * Sends what is held: directly while the socket takes it and the channel has nothing queued; the rest, pieces
     * copied in, to the channel (the caller flushes the channel).
     */
    void flush() {
        runFirst = -1; // the open run leaves now
        if (count == 0) return;
        int done = 0;
        if (!closed && !viaChannel && channel.isOpen()) {
            ChannelOutboundBuffer queued = channel.unsafe().outboundBuffer();
            if (queued != null && queued.isEmpty()) done = sendDirect();
        }
        for (int d = done; d < count; d += run[d]) toChannel(d);
        forget(false);
    }

    /** Drops what is held ({@code release}: the datagrams' buffers too), so nothing names a region any more. */
    private void forget(boolean release) {
        for (int d = 0; d < count; d++) {
            if (release) buf[d].release();
            buf[d] = null;
            to[d] = null;
            dst16[d] = null;
        }
        for (int p = 0; p < pieces; p++) pieceMem[p] = null;
        count = 0;
        pieces = 0;
        runFirst = -1;
    }

    /** The datagrams from the first on, in {@code sendmmsg} calls, until one stops short: how many are done with. */
    private int sendDirect() {
        int d = 0;
        while (d < count) {
            iov.clear();
            int k = 0;
            int next = d;
            while (next < count && k < maxPerCall && iov.count() + iovecs(next) <= Limits.IOV_MAX) {
                describe(k, next);
                nativeFirst[k] = next;
                nativeRun[k] = run[next];
                next += run[next];
                k++;
            }
            int n;
            try {
                n = (int) DirectReceive.SENDMMSG.invokeExact(socket, packets, 0, k);
            } catch (IOException e) {
                // the first datagram failed (ENOBUFS, EPERM, EMSGSIZE): lost as a failed write through the channel
                // is, and retransmission recovers it; the others are tried again
                counters.sendErrors++;
                if (nativeRun[0] > 1 && UdpPort.gsoUnsupported(e)) {
                    gso = false;
                    log.warn("UDP GSO send failed ({}); sending datagrams one by one from now on", e.toString());
                }
                for (int i = 0; i < nativeRun[0]; i++) done(d + i);
                d += nativeRun[0];
                continue;
            } catch (Throwable t) {
                return d; // the channel sends the rest
            }
            if (n <= 0) return d; // EAGAIN: the channel queues the rest and waits for EPOLLOUT
            for (int i = 0; i < n; i++) {
                int r = nativeRun[i];
                if (r > 1) {
                    counters.gsoDatagrams++;
                    counters.gsoSegments += r;
                }
                for (int j = 0; j < r; j++) done(nativeFirst[i] + j);
            }
            d = n < k ? nativeFirst[n] : next;
            if (n < k) return d; // the send buffer filled part-way
        }
        return d;
    }

    private void done(int d) {
        if (pieceCount[d] > 0) gathered++;
        sent++;
        buf[d].release();
    }

    /** The iovecs the run that starts at datagram {@code d} needs (at most). */
    private int iovecs(int d) {
        int v = 0;
        for (int i = d, end = d + run[d]; i < end; i++) v += 2 * pieceCount[i] + 1;
        return v;
    }

    /** Native datagram {@code k} of the next call as the run that starts at datagram {@code d}: iovecs, recipient. */
    private void describe(int k, int d) {
        int start = iov.count();
        int n = run[d];
        for (int i = d; i < d + n; i++) {
            ByteBuf b = buf[i];
            int at = b.readerIndex();
            for (int p = firstPiece[i], end = p + pieceCount[i]; p < end; p++) {
                if (piecePos[p] > at) iov.add(b, at, piecePos[p] - at);
                iov.add(pieceMem[p], pieceIndex[p], pieceLen[p]);
                at = piecePos[p] + pieceLen[p];
            }
            if (b.writerIndex() > at) iov.add(b, at, b.writerIndex() - at);
        }
        Object packet = packets[k];
        MEMORY_ADDRESS.set(packet, iov.memoryAddress(start));
        COUNT.set(packet, iov.count() - start);
        SEGMENT_SIZE.set(packet, n > 1 ? buf[d].readableBytes() : 0);
        int port = to[d].getPort();
        byte[] v6 = dst16[d];
        if (v6 != null ? v6 != slotDst16[k] || port != slotPort[k] : slotDst16[k] != null || dst4[d] != slotDst4[k] || port != slotPort[k]
                || !slotSet[k]) {
            recipient(packet, k, d, port); // this native datagram last went elsewhere (or never went)
        }
    }

    /** Sets native datagram {@code k}'s recipient to datagram {@code d}'s, and remembers it for the next call. */
    private void recipient(Object packet, int k, int d, int port) {
        byte[] a = recipientAddr[k];
        byte[] v6 = dst16[d];
        int scope = 0;
        if (v6 != null) {
            System.arraycopy(v6, 0, a, 0, 16);
            java.net.InetAddress ia = to[d].getAddress();
            if (ia instanceof java.net.Inet6Address i6) scope = i6.getScopeId();
        } else {
            // IPv4-mapped IPv6, as Netty passes an IPv4 recipient; the native side takes the last four bytes
            for (int i = 0; i < 10; i++) a[i] = 0;
            a[10] = (byte) 0xFF;
            a[11] = (byte) 0xFF;
            int v = dst4[d];
            a[12] = (byte) (v >>> 24);
            a[13] = (byte) (v >>> 16);
            a[14] = (byte) (v >>> 8);
            a[15] = (byte) v;
        }
        RECIPIENT_SCOPE_ID.set(packet, scope);
        RECIPIENT_ADDR_LEN.set(packet, 16);
        RECIPIENT_PORT.set(packet, port);
        slotDst16[k] = v6;
        slotDst4[k] = dst4[d];
        slotPort[k] = port;
        slotSet[k] = true;
    }

    /**
     * The run that starts at datagram {@code d}, its pieces copied into its buffers, written to the channel (which may
     * queue it): alone as a plain datagram, a run of more as one {@code SegmentedDatagramPacket}, so that each packet
     * still leaves with the IPv4 ID its ICRC was stamped for.
     */
    private void toChannel(int d) {
        int n = run[d];
        for (int i = d; i < d + n; i++) {
            ByteBuf b = buf[i];
            for (int p = firstPiece[i], end = p + pieceCount[i]; p < end; p++) {
                b.setBytes(piecePos[p], pieceMem[p], pieceIndex[p], pieceLen[p]);
            }
            if (pieceCount[i] > 0) copied++;
        }
        if (n > 1) {
            CompositeByteBuf all = channel.alloc().compositeDirectBuffer(n);
            for (int i = d; i < d + n; i++) all.addComponent(true, buf[i]);
            counters.gsoDatagrams++;
            counters.gsoSegments += n;
            runsViaChannel++;
            channel.write(new SegmentedDatagramPacket(all, buf[d].readableBytes(), to[d]), channel.voidPromise());
            return;
        }
        ByteBuf b = buf[d];
        DatagramPacket packet = envelopes != null ? envelopes.wrap(b, to[d]) : new DatagramPacket(b, to[d]);
        channel.write(packet, channel.voidPromise());
    }

    /** Releases what is held (the socket is closed) and the native memory. */
    void close() {
        if (closed) return;
        closed = true;
        forget(true);
        iov.release();
        try {
            DirectReceive.RELEASE.invokeExact(array);
        } catch (Throwable ignored) {
            // the array's native memory only
        }
    }
}
