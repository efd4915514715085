package io.jroce.endpoint.fault;

import static io.jroce.endpoint.fault.Datagrams.icrcOk;
import static io.jroce.endpoint.fault.Datagrams.inboundPsns;
import static io.jroce.endpoint.fault.Datagrams.junk;
import static io.jroce.endpoint.fault.Datagrams.outboundPsns;
import static io.jroce.endpoint.fault.Datagrams.receive;
import static io.jroce.endpoint.fault.Datagrams.roce;
import static io.jroce.endpoint.fault.Datagrams.send;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jroce.wire.Opcode;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.socket.DatagramPacket;

import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The random faults, buffer ownership and the timers, through an EmbeddedChannel with frozen time. */
class FaultInjectorTest {

    private static EmbeddedChannel channel(FaultInjector f) {
        EmbeddedChannel ch = new EmbeddedChannel(f);
        ch.freezeTime();
        return ch;
    }

    private static List<DatagramPacket> writes(int n) {
        List<DatagramPacket> l = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            l.add(roce(Opcode.RC_SEND_ONLY, i));
        }
        return l;
    }

    @Test
    void probabilityZeroForwardsEveryDatagramUntouchedInBothDirections() {
        FaultInjector f = FaultInjector.builder().seed(1).build();
        EmbeddedChannel ch = channel(f);
        for (int i = 0; i < 100; i++) {
            DatagramPacket in = roce(Opcode.RC_ACKNOWLEDGE, i);
            DatagramPacket out = roce(Opcode.RC_SEND_ONLY, i);
            receive(ch, in);
            send(ch, out);
            assertSame(in, ch.readInbound());
            assertSame(out, ch.readOutbound());
            assertEquals(1, in.refCnt());
            in.release();
            out.release();
        }
        assertEquals(100, f.passed(Direction.IN));
        assertEquals(100, f.passed(Direction.OUT));
        assertEquals(100, f.arrived(Direction.IN));
        assertFalse(ch.finish());
    }

    @Test
    void inboundDropWithProbabilityOneReleasesEveryDatagram() {
        FaultInjector f = FaultInjector.builder().seed(1).drop(Direction.IN, 1).build();
        EmbeddedChannel ch = channel(f);
        List<DatagramPacket> ps = writes(50);
        for (DatagramPacket p : ps) {
            receive(ch, p);
        }
        assertNull(ch.readInbound());
        ps.forEach(p -> assertEquals(0, p.refCnt()));
        assertEquals(50, f.dropped(Direction.IN));
        assertEquals(0, f.arrived(Direction.OUT));
        assertFalse(ch.finish());
    }

    @Test
    void outboundDropWithProbabilityOneReleasesEveryDatagramAndLeavesInboundAlone() {
        FaultInjector f = FaultInjector.builder().seed(1).drop(Direction.OUT, 1).build();
        EmbeddedChannel ch = channel(f);
        List<DatagramPacket> ps = writes(50);
        for (DatagramPacket p : ps) {
            send(ch, p);
        }
        assertNull(ch.readOutbound());
        ps.forEach(p -> assertEquals(0, p.refCnt()));
        receive(ch, roce(Opcode.RC_ACKNOWLEDGE, 7));
        assertEquals(List.of(7), inboundPsns(ch));
        assertEquals(50, f.dropped(Direction.OUT));
        assertEquals(1, f.passed(Direction.IN));
    }

    @Test
    void droppedWriteWithARealPromiseSucceeds() {
        EmbeddedChannel ch = channel(FaultInjector.builder().seed(1).drop(1).build());
        ChannelFuture w = ch.writeAndFlush(roce(Opcode.RC_SEND_ONLY, 1));
        assertTrue(w.isSuccess());
    }

    @Test
    void inboundDuplicateDeliversTwoDatagramsSharingTheBytesAndLeaksNothing() {
        FaultInjector f = FaultInjector.builder().seed(1).duplicate(1).build();
        EmbeddedChannel ch = channel(f);
        DatagramPacket p = roce(Opcode.RC_RDMA_WRITE_ONLY, 5);
        ByteBuf content = p.content();
        receive(ch, p);
        DatagramPacket a = ch.readInbound();
        DatagramPacket b = ch.readInbound();
        assertNull(ch.readInbound());
        assertSame(p, a);
        assertNotSame(a, b);
        assertEquals(a.content(), b.content());
        assertEquals(a.sender(), b.sender());
        assertEquals(2, content.refCnt());
        a.release();
        b.release();
        assertEquals(0, content.refCnt());
        assertEquals(1, f.duplicated(Direction.IN));
    }

    @Test
    void outboundDuplicateWritesTwiceAndLeaksNothing() {
        FaultInjector f = FaultInjector.builder().seed(1).duplicate(Direction.OUT, 1).build();
        EmbeddedChannel ch = channel(f);
        DatagramPacket p = roce(Opcode.RC_SEND_ONLY, 9);
        ByteBuf content = p.content();
        send(ch, p);
        assertEquals(List.of(9, 9), outboundPsns(ch));
        assertEquals(0, content.refCnt());
        assertEquals(1, f.duplicated(Direction.OUT));
    }

    @Test
    void corruptFlipsExactlyOneBitOfACopyAndTheIcrcCatchesIt() {
        FaultInjector f = FaultInjector.builder().seed(3).corrupt(1).build();
        EmbeddedChannel ch = channel(f);
        for (int i = 0; i < 200; i++) {
            DatagramPacket p = roce(Opcode.RC_SEND_ONLY, i);
            ByteBuf original = p.content().retain(); // ours, to compare with
            assertTrue(icrcOk(original));
            if (i % 2 == 0) {
                receive(ch, p);
            } else {
                send(ch, p);
            }
            DatagramPacket bad = i % 2 == 0 ? ch.readInbound() : ch.readOutbound();
            assertEquals(1, original.refCnt(), "the injector released the original");
            assertNotSame(original, bad.content());
            assertEquals(p.sender(), bad.sender());
            assertEquals(p.recipient(), bad.recipient());
            int flipped = 0;
            for (int j = 0; j < original.readableBytes(); j++) {
                flipped += Integer.bitCount((original.getByte(j) ^ bad.content().getByte(j)) & 0xFF);
            }
            assertEquals(1, flipped, "exactly one bit differs");
            assertFalse(icrcOk(bad.content()), "the receiver's ICRC check rejects it");
            original.release();
            bad.release();
            assertEquals(0, original.refCnt());
            assertEquals(0, bad.refCnt());
        }
        assertEquals(100, f.corrupted(Direction.IN));
        assertEquals(100, f.corrupted(Direction.OUT));
    }

    @Test
    void everyBitTheInjectorMayFlipFailsTheReceiveIcrcCheck() {
        // 1900 bytes reach both documented blind spots of the DF-clear retry (bytes 173 and 1834)
        DatagramPacket p = roce(Opcode.RC_SEND_ONLY, 77, 0x11, 1900 - 16);
        ByteBuf b = p.content();
        int len = b.readableBytes();
        assertTrue(icrcOk(b));
        java.util.Set<Long> seen = new java.util.HashSet<>();
        for (long param = 0; param < (long) len * 8 - 8; param++) {
            long bit = Corruption.corruptBit(len, param);
            assertTrue(bit >= 0 && bit < (long) len * 8);
            assertNotEquals(4, bit >>> 3, "BTH byte 4 is masked out of the ICRC");
            seen.add(bit);
            int i = (int) (bit >>> 3);
            b.setByte(i, b.getByte(i) ^ 1 << (bit & 7));
            assertFalse(icrcOk(b), "flip of byte " + i + " mask 0x" + Integer.toHexString(1 << (bit & 7)) + " passed");
            b.setByte(i, b.getByte(i) ^ 1 << (bit & 7));
        }
        assertEquals((long) len * 8 - 8 - 2, seen.size(), "all other bits are used; the two blind spots map onto neighbours");
        p.release();
    }

    @Test
    void corruptionOfAnEmptyDatagramPassesIt() {
        FaultInjector f = FaultInjector.builder().seed(1).corrupt(1).build();
        EmbeddedChannel ch = channel(f);
        receive(ch, new DatagramPacket(io.netty.buffer.Unpooled.EMPTY_BUFFER, Datagrams.RECIPIENT, Datagrams.SENDER));
        DatagramPacket p = ch.readInbound();
        assertEquals(0, p.content().readableBytes());
        assertEquals(1, f.passed(Direction.IN));
        assertEquals(0, f.corrupted(Direction.IN));
    }

    @Test
    void nonRoceDatagramsGetRandomFaultsToo() {
        FaultInjector f = FaultInjector.builder().seed(1).drop(1).build();
        EmbeddedChannel ch = channel(f);
        DatagramPacket j = junk(1);
        receive(ch, j);
        assertNull(ch.readInbound());
        assertEquals(0, j.refCnt());
        assertEquals(1, f.dropped(Direction.IN));
    }

    @Test
    void messagesThatAreNotDatagramsPassUncounted() {
        FaultInjector f = FaultInjector.builder().seed(1).drop(1).build();
        EmbeddedChannel ch = channel(f);
        receive(ch);
        ch.writeInbound("not a datagram");
        assertEquals("not a datagram", ch.readInbound());
        assertEquals(0, f.arrived(Direction.IN));
    }

    @Test
    void reorderedDatagramIsOvertakenByTheNextOnesInItsDirection() {
        // depth 1: released right after the next datagram
        FaultInjector f = FaultInjector.builder().seed(1).reorderDepth(1).build();
        f.addRule(FaultRule.reorder().psn(1).always());
        EmbeddedChannel ch = channel(f);
        for (int psn = 0; psn < 4; psn++) {
            receive(ch, roce(Opcode.RC_SEND_ONLY, psn));
            send(ch, roce(Opcode.RC_SEND_ONLY, psn));
        }
        assertEquals(List.of(0, 2, 1, 3), inboundPsns(ch));
        assertEquals(List.of(0, 2, 1, 3), outboundPsns(ch));
        assertEquals(1, f.reordered(Direction.IN));
        assertEquals(1, f.reordered(Direction.OUT));
        assertEquals(0, f.pending());
    }

    @Test
    void reorderDepthBoundsHowManyDatagramsOvertake() {
        FaultInjector f = FaultInjector.builder().seed(5).reorder(Direction.IN, 0.3).reorderDepth(4)
                .reorderTimeoutMicros(1_000_000).build();
        EmbeddedChannel ch = channel(f);
        int n = 2000;
        for (int psn = 0; psn < n; psn++) {
            receive(ch, roce(Opcode.RC_SEND_ONLY, psn));
        }
        ch.advanceTimeBy(1, TimeUnit.SECONDS);
        ch.runPendingTasks();
        List<Integer> got = inboundPsns(ch);
        assertEquals(n, got.size());
        assertEquals(n, new java.util.HashSet<>(got).size(), "each datagram exactly once");
        boolean anyLate = false;
        for (int i = 0; i < n; i++) {
            int psn = got.get(i);
            // held ones are overtaken by at most 4 later arrivals (more only if those were held themselves)
            assertTrue(i - psn <= 4 * 8, "psn " + psn + " at " + i);
            anyLate |= i > psn;
        }
        assertTrue(anyLate);
        assertTrue(f.reordered(Direction.IN) > 400 && f.reordered(Direction.IN) < 800, f.counters().toString());
    }

    @Test
    void heldDatagramIsReleasedByTheTimeoutWhenTrafficStopsInbound() {
        FaultInjector f = FaultInjector.builder().seed(1).reorder(Direction.IN, 1).reorderTimeoutMicros(700).build();
        int[] readCompletes = {0};
        EmbeddedChannel ch = new EmbeddedChannel(f, new ChannelInboundHandlerAdapter() {
            @Override
            public void channelReadComplete(ChannelHandlerContext ctx) {
                readCompletes[0]++;
                ctx.fireChannelReadComplete();
            }
        });
        ch.freezeTime();
        receive(ch, roce(Opcode.RC_ACKNOWLEDGE, 42));
        int completesAfterBatch = readCompletes[0];
        assertNull(ch.readInbound());
        assertEquals(1, f.pending());
        ch.advanceTimeBy(699, TimeUnit.MICROSECONDS);
        ch.runPendingTasks();
        assertNull(ch.readInbound());
        ch.advanceTimeBy(1, TimeUnit.MICROSECONDS);
        ch.runPendingTasks();
        assertEquals(List.of(42), inboundPsns(ch));
        assertEquals(completesAfterBatch + 1, readCompletes[0], "a timer release ends with channelReadComplete");
        assertEquals(0, f.pending());
    }

    @Test
    void heldDatagramIsReleasedAndFlushedByTheTimeoutOutbound() {
        FaultInjector f = FaultInjector.builder().seed(1).reorder(Direction.OUT, 1).reorderTimeoutMicros(700).build();
        EmbeddedChannel ch = channel(f);
        send(ch, roce(Opcode.RC_SEND_ONLY, 42));
        assertNull(ch.readOutbound());
        ch.advanceTimeBy(700, TimeUnit.MICROSECONDS);
        ch.runPendingTasks();
        // EmbeddedChannel only hands out what was flushed, so this also checks the flush
        assertEquals(List.of(42), outboundPsns(ch));
    }

    @Test
    void reorderedDatagramOvertakenBeforeTheTimeoutIsNotReleasedTwice() {
        FaultInjector f = FaultInjector.builder().seed(1).reorderDepth(1).build();
        f.addRule(FaultRule.reorder().psn(0));
        EmbeddedChannel ch = channel(f);
        receive(ch, roce(Opcode.RC_SEND_ONLY, 0), roce(Opcode.RC_SEND_ONLY, 1));
        ch.advanceTimeBy(1, TimeUnit.SECONDS);
        ch.runPendingTasks();
        assertEquals(List.of(1, 0), inboundPsns(ch));
    }

    @Test
    void delayedDatagramArrivesAfterTheConfiguredMicros() {
        FaultInjector f = FaultInjector.builder().seed(1).delay(1).delayMicros(500).build();
        EmbeddedChannel ch = channel(f);
        receive(ch, roce(Opcode.RC_ACKNOWLEDGE, 1));
        send(ch, roce(Opcode.RC_SEND_ONLY, 2));
        assertNull(ch.readInbound());
        assertNull(ch.readOutbound());
        assertEquals(2, f.pending());
        ch.advanceTimeBy(499, TimeUnit.MICROSECONDS);
        ch.runPendingTasks();
        assertNull(ch.readInbound());
        assertNull(ch.readOutbound());
        ch.advanceTimeBy(1, TimeUnit.MICROSECONDS);
        ch.runPendingTasks();
        assertEquals(List.of(1), inboundPsns(ch));
        assertEquals(List.of(2), outboundPsns(ch));
        assertEquals(1, f.delayed(Direction.IN));
        assertEquals(1, f.delayed(Direction.OUT));
        assertEquals(0, f.pending());
    }

    @Test
    void delayedDatagramsAreOvertakenByUndelayedOnes() {
        FaultInjector f = FaultInjector.builder().seed(1).delayMicros(100).build();
        f.addRule(FaultRule.delay().psn(0));
        f.addRule(FaultRule.delay(50).psn(1));
        EmbeddedChannel ch = channel(f);
        receive(ch, roce(Opcode.RC_SEND_ONLY, 0), roce(Opcode.RC_SEND_ONLY, 1), roce(Opcode.RC_SEND_ONLY, 2));
        ch.advanceTimeBy(1, TimeUnit.MILLISECONDS);
        ch.runPendingTasks();
        assertEquals(List.of(2, 1, 0), inboundPsns(ch), "the rule's own 50 us beats the plan's 100 us");
    }

    @Test
    void closingTheChannelReleasesHeldDatagramsAndFailsRealPromises() {
        FaultInjector f = FaultInjector.builder().seed(1).delay(1).build();
        EmbeddedChannel ch = channel(f);
        DatagramPacket in = roce(Opcode.RC_ACKNOWLEDGE, 1);
        DatagramPacket out = roce(Opcode.RC_SEND_ONLY, 2);
        DatagramPacket out2 = roce(Opcode.RC_SEND_ONLY, 3);
        receive(ch, in);
        send(ch, out);
        ChannelFuture w = ch.writeAndFlush(out2);
        assertEquals(3, f.pending());
        assertFalse(w.isDone());
        ch.close();
        assertEquals(0, in.refCnt());
        assertEquals(0, out.refCnt());
        assertEquals(0, out2.refCnt());
        assertTrue(w.cause() instanceof ClosedChannelException);
        assertEquals(0, f.pending());
        ch.advanceTimeBy(1, TimeUnit.SECONDS);
        ch.runPendingTasks();
        assertNull(ch.readInbound());
        assertNull(ch.readOutbound());
    }

    @Test
    void countersNameEveryDirectionActionAndRule() {
        FaultInjector f = FaultInjector.builder().seed(1).drop(Direction.OUT, 1).build();
        f.addRule(FaultRule.duplicate().inbound().opcode(Opcode.RC_ACKNOWLEDGE).name("dupAck"));
        FaultRule anon = f.addRule(FaultRule.drop().opcode(Opcode.RC_FETCH_ADD));
        EmbeddedChannel ch = channel(f);
        receive(ch, roce(Opcode.RC_ACKNOWLEDGE, 1), roce(Opcode.RC_ACKNOWLEDGE, 2));
        send(ch, roce(Opcode.RC_SEND_ONLY, 3));
        inboundPsns(ch);
        Map<String, Long> c = f.counters();
        assertEquals(List.of("in.passed", "in.dropped", "in.duplicated", "in.reordered", "in.delayed", "in.corrupted", "in.rewritten",
                "out.passed", "out.dropped", "out.duplicated", "out.reordered", "out.delayed", "out.corrupted", "out.rewritten",
                "rule.dupAck.fired", "rule." + anon.name() + ".fired"), List.copyOf(c.keySet()));
        assertEquals("r2", anon.name());
        assertEquals(1L, c.get("in.duplicated"));
        assertEquals(1L, c.get("in.passed"));
        assertEquals(1L, c.get("out.dropped"));
        assertEquals(1L, c.get("rule.dupAck.fired"));
        assertEquals(0L, c.get("rule.r2.fired"));
    }

    @Test
    void aPlanReplacedAtRuntimeAppliesFromTheNextDatagram() {
        FaultInjector f = FaultInjector.builder().seed(1).build();
        EmbeddedChannel ch = channel(f);
        receive(ch, roce(Opcode.RC_SEND_ONLY, 1));
        f.plan(Direction.IN, FaultPlan.none().withDrop(1));
        receive(ch, roce(Opcode.RC_SEND_ONLY, 2));
        assertEquals(List.of(1), inboundPsns(ch));
        assertEquals(1, f.plan(Direction.IN).drop());
        assertEquals(0, f.plan(Direction.OUT).drop());
    }

    @Test
    void probabilitiesAreHonouredOverManyDatagrams() {
        FaultInjector f = FaultInjector.builder().seed(11).drop(0.1).duplicate(0.2).corrupt(0.3).build();
        EmbeddedChannel ch = channel(f);
        int n = 20_000;
        for (int i = 0; i < n; i++) {
            receive(ch, junk(i));
            for (Object o; (o = ch.readInbound()) != null; ) {
                ((DatagramPacket) o).release();
            }
        }
        assertEquals(0.1, f.dropped(Direction.IN) / (double) n, 0.01);
        assertEquals(0.2, f.duplicated(Direction.IN) / (double) n, 0.01);
        assertEquals(0.3, f.corrupted(Direction.IN) / (double) n, 0.01);
        assertEquals(0.4, f.passed(Direction.IN) / (double) n, 0.01);
    }
}
