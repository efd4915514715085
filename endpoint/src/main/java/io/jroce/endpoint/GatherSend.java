package io.jroce.endpoint;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.socket.DatagramPacket;
import io.netty.channel.unix.IovArray;
import io.netty.channel.unix.Limits;

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
 * {@link Limits#UIO_MAX_IOV} datagrams, per call. Used with epoll, without a datagram filter and without UDP GSO
 * ({@link UdpPort}); {@link DeviceConfig#zeroCopy} turns it off. Loop only.
 */
final class GatherSend {
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

    // the datagrams of this flush, in order
    private final ByteBuf[] buf = new ByteBuf[MAX_DATAGRAMS];
    private final InetSocketAddress[] to = new InetSocketAddress[MAX_DATAGRAMS];
    private final int[] dst4 = new int[MAX_DATAGRAMS];
    private final byte[][] dst16 = new byte[MAX_DATAGRAMS][];
    private final int[] firstPiece = new int[MAX_DATAGRAMS];
    private final int[] pieceCount = new int[MAX_DATAGRAMS];
    private int count;
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

    GatherSend(EpollDatagramChannel channel, DeviceCounters counters, SendEnvelope.Pool envelopes) throws Throwable {
        if (!AVAILABLE) throw new IllegalStateException("Netty's native datagram objects were not found");
        this.channel = channel;
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
    }

    /**
     * Holds {@code b} (released once sent) for the flush, to {@code to} (IPv4: {@code dst4}; IPv6: {@code dst16},
     * kept by reference), with {@code k} region pieces: {@code len[i]} bytes at {@code index[i]} of {@code mr[i]}'s
     * memory for the buffer's bytes from {@code pos[i]} on (in order, not overlapping).
     */
    void add(ByteBuf b, InetSocketAddress to, int dst4, byte[] dst16, MemoryRegion[] mr, int[] index, int[] len, int[] pos, int k) {
        if (count == MAX_DATAGRAMS || pieces + k > MAX_PIECES) flush();
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
        if (count == 0) return;
        int done = 0;
        if (!closed && !viaChannel && channel.isOpen()) {
            ChannelOutboundBuffer queued = channel.unsafe().outboundBuffer();
            if (queued != null && queued.isEmpty()) done = sendDirect();
        }
        for (int d = done; d < count; d++) toChannel(d);
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
    }

    /** The datagrams from the first on, in {@code sendmmsg} calls, until one stops short: how many are done with. */
    private int sendDirect() {
        int d = 0;
        while (d < count) {
            iov.clear();
            int k = 0;
            while (d + k < count && k < maxPerCall && iov.count() + 2 * pieceCount[d + k] + 1 <= Limits.IOV_MAX) {
                describe(k, d + k);
                k++;
            }
            int n;
            try {
                n = (int) DirectReceive.SENDMMSG.invokeExact(socket, packets, 0, k);
            } catch (IOException e) {
                // the first datagram failed (ENOBUFS, EPERM, EMSGSIZE): lost as a failed write through the channel
                // is, and retransmission recovers it; the others are tried again
                counters.sendErrors++;
                done(d);
                d++;
                continue;
            } catch (Throwable t) {
                return d; // the channel sends the rest
            }
            if (n <= 0) return d; // EAGAIN: the channel queues the rest and waits for EPOLLOUT
            for (int i = 0; i < n; i++) done(d + i);
            d += n;
            if (n < k) return d; // the send buffer filled part-way
        }
        return d;
    }

    private void done(int d) {
        if (pieceCount[d] > 0) gathered++;
        sent++;
        buf[d].release();
    }

    /** Native datagram {@code k} of the next call as datagram {@code d}: its iovecs and its recipient. */
    private void describe(int k, int d) {
        ByteBuf b = buf[d];
        int start = iov.count();
        int at = b.readerIndex();
        for (int p = firstPiece[d], end = p + pieceCount[d]; p < end; p++) {
            if (piecePos[p] > at) iov.add(b, at, piecePos[p] - at);
            iov.add(pieceMem[p], pieceIndex[p], pieceLen[p]);
            at = piecePos[p] + pieceLen[p];
        }
        if (b.writerIndex() > at) iov.add(b, at, b.writerIndex() - at);
        Object packet = packets[k];
        MEMORY_ADDRESS.set(packet, iov.memoryAddress(start));
        COUNT.set(packet, iov.count() - start);
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

    /** Datagram {@code d} with its pieces copied into its buffer, written to the channel (which may queue it). */
    private void toChannel(int d) {
        ByteBuf b = buf[d];
        for (int p = firstPiece[d], end = p + pieceCount[d]; p < end; p++) {
            b.setBytes(piecePos[p], pieceMem[p], pieceIndex[p], pieceLen[p]);
        }
        if (pieceCount[d] > 0) copied++;
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
