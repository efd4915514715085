package io.jroce.endpoint;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelConfig;
import io.netty.channel.FixedRecvByteBufAllocator;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.util.UncheckedBooleanSupplier;

/**
 * The receive buffers of a socket with UDP GRO on: one buffer of {@link #BUFFER} bytes per {@code recvmsg}, room
 * for the largest coalesced datagram, up to {@link UdpPort#BATCH} datagrams per wake-up; and the counting of
 * coalesced reads. Netty 4.2.18's epoll datagram channel (EpollDatagramChannel recvmsg / addDatagramPacketToOut)
 * cuts a read that carries a UDP_GRO segment size into one DatagramPacket per segment (slices of the one
 * buffer) and reports them with one {@code incMessagesRead(n)}: a call with n above 1 is one coalesced read.
 * Used on the event loop only, like the counters it writes.
 */
final class GroRecvAllocator implements RecvByteBufAllocator {
    /**
     * One read's buffer: a coalesced datagram is at most 64 KiB (GRO stops below the device's gro_max_size,
     * 65536 by default, net/core/gro.c skb_gro_receive; a UDP_SEGMENT send is one IP datagram, at most 65535).
     */
    static final int BUFFER = 65536;

    private final FixedRecvByteBufAllocator fixed = new FixedRecvByteBufAllocator(BUFFER);
    private final DeviceCounters counters;

    GroRecvAllocator(DeviceCounters counters) {
        this.counters = counters;
        // recvmmsg fills up to BATCH datagrams per wake-up; recvmsg takes one per call, so let the loop call it
        // up to BATCH times before it flushes and waits again
        fixed.maxMessagesPerRead(UdpPort.BATCH);
    }

    @Override
    public Handle newHandle() {
        return new Counting((ExtendedHandle) fixed.newHandle());
    }

    /** Delegates everything (the epoll channel needs an ExtendedHandle) and counts coalesced reads. */
    private final class Counting implements ExtendedHandle {
        private final ExtendedHandle d;

        Counting(ExtendedHandle d) {
            this.d = d;
        }

        @Override
        public void incMessagesRead(int numMessages) {
            if (numMessages > 1) {
                counters.groDatagrams++;
                counters.groSegments += numMessages;
            }
            d.incMessagesRead(numMessages);
        }

        @Override
        public ByteBuf allocate(ByteBufAllocator alloc) { return d.allocate(alloc); }
        @Override
        public int guess() { return d.guess(); }
        @Override
        public void reset(ChannelConfig config) { d.reset(config); }
        @Override
        public void lastBytesRead(int bytes) { d.lastBytesRead(bytes); }
        @Override
        public int lastBytesRead() { return d.lastBytesRead(); }
        @Override
        public void attemptedBytesRead(int bytes) { d.attemptedBytesRead(bytes); }
        @Override
        public int attemptedBytesRead() { return d.attemptedBytesRead(); }
        @Override
        public boolean continueReading() { return d.continueReading(); }
        @Override
        public boolean continueReading(UncheckedBooleanSupplier maybeMoreDataSupplier) { return d.continueReading(maybeMoreDataSupplier); }
        @Override
        public void readComplete() { d.readComplete(); }
    }
}
