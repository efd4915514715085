package io.jroce.endpoint;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.EventLoop;
import io.netty.channel.socket.DatagramPacket;

import java.net.InetSocketAddress;
import java.util.ArrayDeque;

/**
 * The envelope a packet leaves in, reused: Netty's epoll {@code sendmmsg} path takes a datagram and its recipient
 * only as a {@link DatagramPacket} (its MessageProcessor in NativeDatagramPacketArray), whose fields are final, so a
 * plain program makes one per packet. This one reads its content and recipient from fields of its own, and goes
 * back to its {@link Pool} when Netty releases it: the channel's outbound buffer releases every message it
 * removes (written, failed or discarded at close), on the event loop, and a release that frees the content is the
 * last use of the envelope. Releases off the loop (none happen on the data path) let the envelope go to the garbage
 * collector instead.
 *
 * <p>With {@link GatherSend}, only the datagrams the socket did not take at once go to the channel, in these.
 *
 * <p>Used only without a datagram filter: a filter sees and may keep, copy or re-send the packets, and gets plain
 * {@link DatagramPacket}s.
 */
final class SendEnvelope extends DatagramPacket {
    /** A placeholder for the superclass's final fields, which this class never reads. */
    private static final InetSocketAddress NOWHERE = InetSocketAddress.createUnresolved("unused", 0);

    private final Pool pool;
    private ByteBuf content;
    private InetSocketAddress recipient;

    private SendEnvelope(Pool pool) {
        super(Unpooled.EMPTY_BUFFER, NOWHERE);
        this.pool = pool;
    }

    @Override
    public ByteBuf content() {
        return content;
    }

    @Override
    public InetSocketAddress recipient() {
        return recipient;
    }

    @Override
    public InetSocketAddress sender() {
        return null;
    }

    @Override
    public int refCnt() {
        return content.refCnt();
    }

    @Override
    public SendEnvelope retain() {
        content.retain();
        return this;
    }

    @Override
    public SendEnvelope retain(int increment) {
        content.retain(increment);
        return this;
    }

    @Override
    public SendEnvelope touch() {
        content.touch();
        return this;
    }

    @Override
    public SendEnvelope touch(Object hint) {
        content.touch(hint);
        return this;
    }

    @Override
    public boolean release() {
        return release(1);
    }

    @Override
    public boolean release(int decrement) {
        boolean freed = content.release(decrement);
        if (freed) pool.recycle(this);
        return freed;
    }

    /** A plain packet with {@code content} to the same recipient (what copy, duplicate and retainedDuplicate give). */
    @Override
    public DatagramPacket replace(ByteBuf content) {
        return new DatagramPacket(content, recipient);
    }

    @Override
    public String toString() {
        return "SendEnvelope(" + content + " => " + recipient + ")";
    }

    /**
     * The envelopes of one event loop: a stack, taken from and given back to on the loop only (in the invoked mode,
     * by whichever thread drives the loop at the time: one at a time, handed over with a compare-and-set).
     */
    static final class Pool {
        /** More than a flush ever holds (the channel's outbound buffer, a GSO run, one {@code sendmmsg} of 1024). */
        static final int MAX = 4096;
        private final EventLoop loop;
        private final ArrayDeque<SendEnvelope> free = new ArrayDeque<>(256);
        /** Envelopes made (the pool was empty) and envelopes dropped (it was full, or not on the loop). */
        long made;
        long dropped;

        Pool(EventLoop loop) {
            this.loop = loop;
        }

        /** An envelope holding {@code content} for {@code to}; the channel's release of it brings it back. */
        SendEnvelope wrap(ByteBuf content, InetSocketAddress to) {
            SendEnvelope e = loop.inEventLoop() ? free.pollLast() : null;
            if (e == null) {
                e = new SendEnvelope(this);
                made++;
            }
            e.content = content;
            e.recipient = to;
            return e;
        }

        private void recycle(SendEnvelope e) {
            e.content = null; // freed: a stale use of this envelope fails loudly instead of reading a reused buffer
            e.recipient = null;
            if (free.size() < MAX && loop.inEventLoop()) {
                free.addLast(e);
            } else {
                dropped++;
            }
        }

        int free() {
            return free.size();
        }
    }
}
