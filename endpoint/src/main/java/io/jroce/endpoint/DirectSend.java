package io.jroce.endpoint;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.epoll.EpollDatagramChannel;

import java.io.IOException;
import java.net.InetSocketAddress;

/**
 * Sends a flush's only datagram without garbage. Netty's epoll channel takes its {@code sendmmsg} path only when it
 * has two or more datagrams to write (EpollDatagramChannel doWrite); one datagram alone leaves through
 * {@code sendto} (Socket.sendToAddress), which copies the recipient's address into two new arrays per datagram. A
 * latency test, an ACK, a READ request: most flushes of a request-response exchange carry one datagram. This makes
 * the same {@code sendmmsg} call Netty would, for that one datagram, through Netty's own native array (see
 * {@link DirectReceive} for how its package-private parts are reached). Used only while the channel has nothing
 * queued (so datagrams never pass each other) and is open; a send the socket would block on (its buffer full) goes
 * back to the channel, which waits for the socket to drain as usual. Not made while {@link GatherSend} sends every
 * datagram of a flush. Loop only.
 */
final class DirectSend {
    private final EpollDatagramChannel channel;
    private final DeviceCounters counters;
    private final Object socket;
    private final Object array;
    private final Object[] packets;
    private boolean closed;
    /** Datagrams sent here (tests). */
    long sent;

    DirectSend(EpollDatagramChannel channel, DeviceCounters counters) throws Throwable {
        this.channel = channel;
        this.counters = counters;
        this.socket = (Object) DirectReceive.SOCKET.invokeExact(channel);
        this.array = (Object) DirectReceive.NEW_ARRAY.invokeExact();
        this.packets = (Object[]) DirectReceive.PACKETS.invokeExact(array);
    }

    /**
     * Sends {@code b} to {@code to} now if the channel has nothing queued: true when it is done with {@code b} (sent,
     * or failed and counted; released either way), false when the caller is to write it to the channel instead.
     */
    boolean trySend(ByteBuf b, InetSocketAddress to) {
        if (closed || !channel.isOpen()) return false;
        ChannelOutboundBuffer queued = channel.unsafe().outboundBuffer();
        if (queued == null || !queued.isEmpty()) return false;
        try {
            DirectReceive.CLEAR.invokeExact(array);
            boolean added = (boolean) DirectReceive.ADD0.invokeExact(array, b, b.readerIndex(), b.readableBytes(), 0, to);
            if (!added) return false;
            int n = (int) DirectReceive.SENDMMSG.invokeExact(socket, packets, 0, 1);
            if (n == 0) return false; // EAGAIN: the channel queues it and waits for EPOLLOUT
            sent++;
        } catch (IOException e) {
            counters.sendErrors++; // as a failed write through the channel (ENOBUFS, EPERM): retransmission recovers it
        } catch (Throwable t) {
            return false;
        }
        b.release();
        return true;
    }

    void close() {
        if (closed) return;
        closed = true;
        try {
            DirectReceive.RELEASE.invokeExact(array);
        } catch (Throwable ignored) {
            // the array's native memory only
        }
    }
}
