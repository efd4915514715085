package io.jroce.endpoint;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.IoEvent;
import io.netty.channel.IoHandle;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.IoRegistration;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.epoll.EpollIoEvent;
import io.netty.channel.epoll.EpollIoHandle;
import io.netty.channel.epoll.EpollIoOps;
import io.netty.channel.unix.FileDescriptor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.VarHandle;

/**
 * The epoll socket's receive without an object per datagram. Netty 4.2's {@code recvmmsg} read
 * (EpollDatagramChannel scatteringRead, NativeDatagramPacket.newDatagramPacket) makes for every datagram an
 * {@code InetSocketAddress} with its {@code InetAddress} for the sender and a {@code DatagramPacket}: about 120 bytes
 * of garbage per packet. This reader makes the same {@code recvmmsg} call through Netty's own native method into
 * {@link UdpPort#BATCH} slots of one pooled buffer, and hands each datagram to the receive path as the slot's
 * offset, length, the sender's address as an int (IPv4) or its 16 bytes (IPv6) and its port, read from the fields
 * the native call fills.
 *
 * <p>How it gets the socket's readiness: the shard's loop runs an {@link IoHandler} that wraps Netty's epoll
 * handler ({@link Hook#wrap}); the handler registers the socket's channel under a handle that takes the EPOLLIN
 * events ({@link #readReady}) and passes every other event (EPOLLOUT when the send buffer was full, EPOLLERR) to the
 * channel as before. Netty's epoll is level-triggered, so a read that stops at its budget with datagrams left is
 * woken again on the next cycle. Sending, binding, options and closing stay the channel's.
 *
 * <p>Netty keeps the pieces this needs package-private (the native array, the socket's {@code recvmmsg}), so they
 * are reached by method and field handles, resolved once. If this Netty has them under other names, or runs where
 * they cannot be opened, {@link #AVAILABLE} is false and the channel reads as Netty does (the receive path takes
 * both). Not used with UDP GRO (one {@code recvmsg} per coalesced datagram) nor while a datagram filter is installed
 * (the filter sees datagrams in the pipeline).
 */
final class DirectReceive {
    private static final Logger log = LoggerFactory.getLogger(DirectReceive.class);

    /** Whether this Netty's internals were found (see the class comment). */
    static final boolean AVAILABLE;
    /** Why not, when not. */
    static final String PROBLEM;

    static final MethodHandle NEW_ARRAY;    // NativeDatagramPacketArray()
    private static final MethodHandle ADD_WRITABLE; // boolean addWritable(ByteBuf, int, int)
    static final MethodHandle CLEAR;        // void clear()
    static final MethodHandle RELEASE;      // void release()
    static final MethodHandle PACKETS;      // NativeDatagramPacket[] packets()
    static final MethodHandle SOCKET;       // AbstractEpollChannel.socket
    private static final MethodHandle RECVMMSG;     // int LinuxSocket.recvmmsg(NativeDatagramPacket[], int, int)
    /** boolean add0(ByteBuf, int index, int len, int segmentLen, InetSocketAddress recipient), for {@link DirectSend}. */
    static final MethodHandle ADD0;
    /** int LinuxSocket.sendmmsg(NativeDatagramPacket[], int, int), for {@link DirectSend}. */
    static final MethodHandle SENDMMSG;
    private static final VarHandle COUNT;           // NativeDatagramPacket.count: the datagram's length after the call
    private static final VarHandle SENDER_ADDR;     // byte[16]
    private static final VarHandle SENDER_ADDR_LEN; // 4 or 16
    private static final VarHandle SENDER_PORT;

    static {
        MethodHandle newArray = null, addWritable = null, clear = null, release = null, packets = null, socket = null, recvmmsg = null;
        MethodHandle add0 = null, sendmmsg = null;
        VarHandle count = null, addr = null, addrLen = null, port = null;
        String problem = null;
        try {
            MethodHandles.Lookup me = MethodHandles.lookup();
            Class<?> arrayClass = Class.forName("io.netty.channel.epoll.NativeDatagramPacketArray");
            Class<?> packetClass = Class.forName("io.netty.channel.epoll.NativeDatagramPacketArray$NativeDatagramPacket");
            Class<?> packetArrayClass = packetClass.arrayType();
            Class<?> channelClass = Class.forName("io.netty.channel.epoll.AbstractEpollChannel");
            Class<?> socketClass = Class.forName("io.netty.channel.epoll.LinuxSocket");
            MethodHandles.Lookup a = MethodHandles.privateLookupIn(arrayClass, me);
            MethodHandles.Lookup p = MethodHandles.privateLookupIn(packetClass, me);
            MethodHandles.Lookup c = MethodHandles.privateLookupIn(channelClass, me);
            MethodHandles.Lookup s = MethodHandles.privateLookupIn(socketClass, me);
            newArray = a.findConstructor(arrayClass, MethodType.methodType(void.class)).asType(MethodType.methodType(Object.class));
            addWritable = a.findVirtual(arrayClass, "addWritable", MethodType.methodType(boolean.class, ByteBuf.class, int.class, int.class))
                    .asType(MethodType.methodType(boolean.class, Object.class, ByteBuf.class, int.class, int.class));
            clear = a.findVirtual(arrayClass, "clear", MethodType.methodType(void.class))
                    .asType(MethodType.methodType(void.class, Object.class));
            release = a.findVirtual(arrayClass, "release", MethodType.methodType(void.class))
                    .asType(MethodType.methodType(void.class, Object.class));
            packets = a.findVirtual(arrayClass, "packets", MethodType.methodType(packetArrayClass))
                    .asType(MethodType.methodType(Object[].class, Object.class));
            socket = c.findGetter(channelClass, "socket", socketClass)
                    .asType(MethodType.methodType(Object.class, EpollDatagramChannel.class));
            recvmmsg = s.findVirtual(socketClass, "recvmmsg", MethodType.methodType(int.class, packetArrayClass, int.class, int.class))
                    .asType(MethodType.methodType(int.class, Object.class, Object[].class, int.class, int.class));
            add0 = a.findVirtual(arrayClass, "add0", MethodType.methodType(boolean.class, ByteBuf.class, int.class, int.class, int.class,
                            java.net.InetSocketAddress.class))
                    .asType(MethodType.methodType(boolean.class, Object.class, ByteBuf.class, int.class, int.class, int.class,
                            java.net.InetSocketAddress.class));
            sendmmsg = s.findVirtual(socketClass, "sendmmsg", MethodType.methodType(int.class, packetArrayClass, int.class, int.class))
                    .asType(MethodType.methodType(int.class, Object.class, Object[].class, int.class, int.class));
            count = p.findVarHandle(packetClass, "count", int.class);
            addr = p.findVarHandle(packetClass, "senderAddr", byte[].class);
            addrLen = p.findVarHandle(packetClass, "senderAddrLen", int.class);
            port = p.findVarHandle(packetClass, "senderPort", int.class);
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            problem = e.toString();
        }
        AVAILABLE = problem == null;
        PROBLEM = problem;
        NEW_ARRAY = newArray;
        ADD_WRITABLE = addWritable;
        CLEAR = clear;
        RELEASE = release;
        PACKETS = packets;
        SOCKET = socket;
        RECVMMSG = recvmmsg;
        ADD0 = add0;
        SENDMMSG = sendmmsg;
        COUNT = count;
        SENDER_ADDR = addr;
        SENDER_ADDR_LEN = addrLen;
        SENDER_PORT = port;
    }

    /** Where each datagram goes, and the end of a burst. */
    interface Sink {
        /**
         * One datagram: {@code len} bytes at {@code off} of {@code buf} (valid during the call only), from
         * {@code src4} (IPv4, {@code src16} null) or the 16 bytes of {@code src16} (IPv6; the array is reused: copy it
         * to keep it), UDP port {@code srcPort}.
         */
        void datagram(ByteBuf buf, int off, int len, int src4, byte[] src16, int srcPort);

        /** The end of a burst of reads (what the pipeline's channelReadComplete was). */
        void burstEnd();

        /** A read failed. */
        void failed(Throwable cause);
    }

    /** The most {@code recvmmsg} calls per EPOLLIN event: 16 × {@link UdpPort#BATCH}, as Netty's default. */
    static final int MAX_READS = 16;

    private final ByteBufAllocator alloc;
    private final Sink sink;
    private Object socket;
    private Object array;
    private Object[] packets;
    private ByteBuf buf;
    private boolean closed;
    /** recvmmsg calls and datagrams read (tests). */
    long reads;
    long datagrams;

    DirectReceive(ByteBufAllocator alloc, Sink sink) {
        this.alloc = alloc;
        this.sink = sink;
    }

    /** Reads what the socket has, up to {@link #MAX_READS} {@code recvmmsg} calls. Loop only. */
    void readReady() {
        if (closed) return;
        int n = 0;
        try {
            for (int r = 0; r < MAX_READS; r++) {
                n = readBatch();
                if (n < UdpPort.BATCH) break;
            }
        } catch (Throwable t) {
            sink.failed(t);
        }
        sink.burstEnd();
    }

    /** One {@code recvmmsg} into {@link UdpPort#BATCH} slots; the datagrams to the sink. Returns how many. */
    private int readBatch() throws Throwable {
        ByteBuf b = buf;
        if (b == null) b = buf = alloc.directBuffer(UdpPort.SLOT * UdpPort.BATCH, UdpPort.SLOT * UdpPort.BATCH);
        Object arr = array;
        CLEAR.invokeExact(arr);
        for (int i = 0, off = 0; i < UdpPort.BATCH; i++, off += UdpPort.SLOT) {
            boolean added = (boolean) ADD_WRITABLE.invokeExact(arr, b, off, UdpPort.SLOT);
            if (!added) break;
        }
        int n = (int) RECVMMSG.invokeExact(socket, packets, 0, UdpPort.BATCH);
        reads++;
        for (int i = 0; i < n; i++) {
            Object p = packets[i];
            int len = (int) COUNT.get(p);
            int addrLen = (int) SENDER_ADDR_LEN.get(p);
            byte[] addr = (byte[]) SENDER_ADDR.get(p);
            int port = (int) SENDER_PORT.get(p);
            datagrams++;
            if (addrLen == 4) {
                int src4 = (addr[0] & 0xFF) << 24 | (addr[1] & 0xFF) << 16 | (addr[2] & 0xFF) << 8 | (addr[3] & 0xFF);
                sink.datagram(b, i * UdpPort.SLOT, len, src4, null, port);
            } else {
                sink.datagram(b, i * UdpPort.SLOT, len, 0, addr, port);
            }
        }
        if (b.refCnt() != 1) { // something kept the buffer (nothing on the receive path does): take a fresh one
            b.release();
            buf = null;
        }
        return n;
    }

    /** Starts reading {@code channel}'s socket (it is registered: its fd is open). Loop only. */
    private void open(EpollDatagramChannel channel) throws Throwable {
        socket = (Object) SOCKET.invokeExact(channel);
        array = (Object) NEW_ARRAY.invokeExact();
        packets = (Object[]) PACKETS.invokeExact(array);
    }

    /** Whether it took over a socket's reads (and has not been closed). */
    boolean isOpen() {
        return socket != null && !closed;
    }

    /** Gives back the buffer and the native array. Loop only. */
    private void close() {
        if (closed) return;
        closed = true;
        if (buf != null) {
            buf.release();
            buf = null;
        }
        if (array != null) {
            try {
                RELEASE.invokeExact(array);
            } catch (Throwable t) {
                log.debug("releasing the native datagram array: {}", t.toString());
            }
            array = null;
        }
    }

    // ------------------------------------------------------------------------------------------------
    // the loop's side: which registration to take over

    /**
     * One per shard's loop: wraps its epoll handler factory, and is told which channel's registration to take over
     * ({@link #expect}) before the channel registers.
     */
    static final class Hook {
        private EpollDatagramChannel expected;
        private DirectReceive reader;

        /** The factory of a loop whose handler can hand a channel's EPOLLIN to a {@link DirectReceive}. */
        IoHandlerFactory wrap(IoHandlerFactory epoll) {
            return ForwardingIoHandler.wrapping(epoll, Handler::new);
        }

        /** The next registration of {@code channel} reads with {@code r}. Before the channel registers. */
        synchronized void expect(EpollDatagramChannel channel, DirectReceive r) {
            expected = channel;
            reader = r;
        }

        private synchronized DirectReceive take(IoHandle handle) {
            if (expected == null || !(handle instanceof EpollIoHandle h) || h.fd() != expected.fd()) return null;
            DirectReceive r = reader;
            try {
                r.open(expected);
            } catch (Throwable t) {
                log.warn("cannot read the socket directly ({}); Netty reads it", t.toString());
                r = null;
            }
            expected = null;
            reader = null;
            return r;
        }

        private final class Handler extends ForwardingIoHandler {
            Handler(IoHandler inner) {
                super(inner);
            }

            @Override
            public IoRegistration register(IoHandle handle) throws Exception {
                DirectReceive r = take(handle);
                return inner.register(r == null ? handle : new Intercept((EpollIoHandle) handle, r));
            }
        }
    }

    /** The channel's handle with its EPOLLIN taken by the reader; everything else goes to the channel. */
    private static final class Intercept implements EpollIoHandle {
        private static final int IN = EpollIoOps.EPOLLIN.value();
        private final EpollIoHandle channel;
        private final DirectReceive reader;

        Intercept(EpollIoHandle channel, DirectReceive reader) {
            this.channel = channel;
            this.reader = reader;
        }

        @Override
        public FileDescriptor fd() {
            return channel.fd();
        }

        @Override
        public void handle(IoRegistration registration, IoEvent event) {
            EpollIoOps ops = ((EpollIoEvent) event).ops();
            int v = ops.value();
            if ((v & IN) == 0) {
                channel.handle(registration, event);
                return;
            }
            int rest = v & ~IN;
            if (rest != 0) channel.handle(registration, new Event(EpollIoOps.valueOf(rest))); // EPOLLOUT, EPOLLERR: rare
            reader.readReady();
        }

        @Override
        public void registered() {
            channel.registered();
        }

        @Override
        public void unregistered() {
            reader.close();
            channel.unregistered();
        }

        @Override
        public void close() throws Exception {
            reader.close();
            channel.close();
        }
    }

    private record Event(EpollIoOps ops) implements EpollIoEvent {
    }
}
