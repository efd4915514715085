package io.jroce.endpoint;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which packets of a flush batch become one GSO super-datagram, and the position (IPv4 ID) each gets. */
class GsoBatcherTest {
    private static final InetSocketAddress A = new InetSocketAddress("127.77.13.1", 4791);
    private static final InetSocketAddress A2 = new InetSocketAddress("127.77.13.1", 4791); // equal, another object
    private static final InetSocketAddress B = new InetSocketAddress("127.77.13.2", 4791);

    /** What the sink saw: "seg,count,dest" per super-datagram, "1x len,dest" per single. */
    private final List<String> out = new ArrayList<>();
    private final List<ByteBuf> emitted = new ArrayList<>();
    private final GsoBatcher batcher = new GsoBatcher(UnpooledByteBufAllocator.DEFAULT, GsoBatcher.MAX_SEGMENTS, new GsoBatcher.Sink() {
        @Override
        public void single(ByteBuf packet, InetSocketAddress to) {
            out.add("1x" + packet.readableBytes() + ">" + to.getAddress().getHostAddress());
            emitted.add(packet);
        }

        @Override
        public void segmented(CompositeByteBuf packets, int segmentSize, int count, InetSocketAddress to) {
            assertEquals(packets.readableBytes(), segmentSize * (count - 1) + lastLength(packets), "bytes of the run");
            out.add(count + "x" + segmentSize + ">" + to.getAddress().getHostAddress());
            emitted.add(packets);
        }
    });

    private static int lastLength(CompositeByteBuf c) {
        return c.internalComponent(c.numComponents() - 1).readableBytes();
    }

    /** Sends one packet of {@code len} bytes (its first byte = the position it was given) and returns its position. */
    private int send(InetSocketAddress to, int len) {
        return send(to, 7, len);
    }

    /** The same, to QP {@code qpn}. */
    private int send(InetSocketAddress to, int qpn, int len) {
        int k = batcher.position(to, qpn, len);
        ByteBuf b = UnpooledByteBufAllocator.DEFAULT.directBuffer(len);
        b.writeByte(k).writeZero(len - 1);
        batcher.add(b, to, qpn);
        return k;
    }

    @Test
    void aWriteMessageIsTheFirstPacketAloneThenOneRunOfMiddlesWithTheShorterLastAsTail() {
        // WRITE_FIRST carries a RETH (16 bytes more), middles are equal, the last is shorter
        assertEquals(0, send(A, 4128));
        for (int k = 0; k < 5; k++) assertEquals(k, send(A, 4112), "middle " + k);
        assertEquals(5, send(A, 1000), "the shorter last packet is the run's tail");
        assertFalse(batcher.open(), "a tail closes the run");
        assertEquals(List.of("1x4128>127.77.13.1", "6x4112>127.77.13.1"), out);
        // segment k carries its own position in its first byte: the order inside the run is kept
        CompositeByteBuf run = (CompositeByteBuf) emitted.get(1);
        for (int k = 0; k < 6; k++) assertEquals(k, run.getByte(k * 4112));
        release();
    }

    @Test
    void aRunEndsAtAnotherPeerALongerPacketTheSizeLimitAndAFlush() {
        send(A, 1000);
        send(A2, 1000);          // an equal address object joins
        send(B, 1000);           // another peer: A's run leaves
        send(B, 2000);           // longer: B's single leaves, a new run starts
        send(B, 2000);
        batcher.emit();          // the flush
        assertEquals(List.of("2x1000>127.77.13.1", "1x1000>127.77.13.2", "2x2000>127.77.13.2"), out);
        release();
    }

    @Test
    void aRunHoldsAtMost65507BytesAnd64Segments() {
        for (int i = 0; i < 16; i++) assertEquals(i % 15, send(A, 4136), "position of packet " + i);
        batcher.emit();
        assertEquals(List.of("15x4136>127.77.13.1", "1x4136>127.77.13.1"), out, "15 x 4136 = 62,040 bytes; 16 would pass 65,507");
        out.clear();
        release();
        for (int i = 0; i < 70; i++) send(A, 100);
        batcher.emit();
        assertEquals(List.of("64x100>127.77.13.1", "6x100>127.77.13.1"), out);
        release();
    }

    @Test
    void aShortPacketAfterASingleStartsANewRunAndAnOversizedPacketLeavesAlone() {
        send(A, 4116);  // READ response FIRST (AETH)
        send(A, 4112);  // MIDDLE: the single leaves, the middle starts a run
        send(A, 4112);
        send(A, 4116);  // LAST (AETH, longer): the run leaves
        batcher.emit();
        assertEquals(List.of("1x4116>127.77.13.1", "2x4112>127.77.13.1", "1x4116>127.77.13.1"), out);
        out.clear();
        release();
        send(A, 40_000); // more than half of 65,507: nothing can join it
        assertFalse(batcher.open());
        assertEquals(List.of("1x40000>127.77.13.1"), out);
        release();
    }

    @Test
    void aRunHoldsOneQpsPackets() {
        assertEquals(0, send(A, 7, 4112));
        assertEquals(1, send(A, 7, 4112));
        assertEquals(0, send(A, 8, 4112), "another QP of the same peer starts a run of its own");
        assertEquals(1, send(A, 8, 4112));
        batcher.emit();
        assertEquals(List.of("2x4112>127.77.13.1", "2x4112>127.77.13.1"), out);
        release();
    }

    @Test
    void discardReleasesTheOpenRun() {
        ByteBuf b1 = UnpooledByteBufAllocator.DEFAULT.directBuffer(10).writeZero(10);
        ByteBuf b2 = UnpooledByteBufAllocator.DEFAULT.directBuffer(10).writeZero(10);
        batcher.position(A, 7, 10);
        batcher.add(b1, A, 7);
        batcher.position(A, 7, 10);
        batcher.add(b2, A, 7);
        assertTrue(batcher.open());
        batcher.discard();
        assertFalse(batcher.open());
        assertEquals(0, b1.refCnt());
        assertEquals(0, b2.refCnt());
        assertTrue(out.isEmpty());
    }

    private void release() {
        for (ByteBuf b : emitted) b.release();
        emitted.clear();
    }
}
