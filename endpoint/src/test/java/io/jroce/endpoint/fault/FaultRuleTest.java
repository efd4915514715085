package io.jroce.endpoint.fault;

import static io.jroce.endpoint.fault.Datagrams.inboundPsns;
import static io.jroce.endpoint.fault.Datagrams.junk;
import static io.jroce.endpoint.fault.Datagrams.outboundPsns;
import static io.jroce.endpoint.fault.Datagrams.receive;
import static io.jroce.endpoint.fault.Datagrams.roce;
import static io.jroce.endpoint.fault.Datagrams.send;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jroce.wire.Opcode;
import io.jroce.wire.Operation;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.socket.DatagramPacket;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Targeted faults: which datagram, which occurrence, how often, which way. */
class FaultRuleTest {

    private static FaultInjector quiet() {
        return FaultInjector.builder().seed(1).build();
    }

    private static EmbeddedChannel channel(FaultInjector f) {
        EmbeddedChannel ch = new EmbeddedChannel(f);
        ch.freezeTime();
        return ch;
    }

    @Test
    void dropTheFirstInboundAckOnce() {
        FaultInjector f = quiet();
        FaultRule r = f.addRule(FaultRule.drop().inbound().opcode(Opcode.RC_ACKNOWLEDGE).nth(1).once());
        EmbeddedChannel ch = channel(f);
        DatagramPacket first = roce(Opcode.RC_ACKNOWLEDGE, 1);
        receive(ch, first, roce(Opcode.RC_ACKNOWLEDGE, 2), roce(Opcode.RC_ACKNOWLEDGE, 3));
        assertEquals(List.of(2, 3), inboundPsns(ch));
        assertEquals(0, first.refCnt());
        assertEquals(3, r.matched());
        assertEquals(1, r.fired());
        assertTrue(r.exhausted());
        assertEquals(1, f.dropped(Direction.IN));
        assertEquals(2, f.passed(Direction.IN));
    }

    @Test
    void dropTheThirdWriteMiddleOnlyCountingWriteMiddles() {
        FaultInjector f = quiet();
        f.addRule(FaultRule.drop().opcode(Opcode.RC_RDMA_WRITE_MIDDLE).nth(3));
        EmbeddedChannel ch = channel(f);
        Opcode[] ops = {Opcode.RC_RDMA_WRITE_FIRST, Opcode.RC_RDMA_WRITE_MIDDLE, Opcode.RC_ACKNOWLEDGE,
            Opcode.RC_RDMA_WRITE_MIDDLE, Opcode.RC_SEND_ONLY, Opcode.RC_RDMA_WRITE_MIDDLE, Opcode.RC_RDMA_WRITE_MIDDLE,
            Opcode.RC_RDMA_WRITE_LAST};
        for (int psn = 0; psn < ops.length; psn++) {
            send(ch, roce(ops[psn], psn));
        }
        assertEquals(List.of(0, 1, 2, 3, 4, 6, 7), outboundPsns(ch));
    }

    @Test
    void onceFiresOnceAndAlwaysFiresOnEveryMatch() {
        FaultInjector once = quiet();
        once.addRule(FaultRule.drop().opcode(Opcode.RC_SEND_ONLY).once());
        FaultInjector always = quiet();
        always.addRule(FaultRule.drop().opcode(Opcode.RC_SEND_ONLY).always());
        EmbeddedChannel a = channel(once);
        EmbeddedChannel b = channel(always);
        for (int psn = 0; psn < 6; psn++) {
            Opcode op = psn % 2 == 0 ? Opcode.RC_SEND_ONLY : Opcode.RC_SEND_FIRST;
            receive(a, roce(op, psn));
            receive(b, roce(op, psn));
        }
        assertEquals(List.of(1, 2, 3, 4, 5), inboundPsns(a));
        assertEquals(List.of(1, 3, 5), inboundPsns(b));
    }

    @Test
    void timesAndEveryGiveAPeriodicPattern() {
        FaultInjector f = quiet();
        FaultRule r = f.addRule(FaultRule.drop().nth(2).every(3).times(3));
        EmbeddedChannel ch = channel(f);
        for (int psn = 1; psn <= 15; psn++) {
            receive(ch, roce(Opcode.RC_SEND_ONLY, psn));
        }
        // matches 2, 5, 8; then the limit of 3 is reached
        assertEquals(List.of(1, 3, 4, 6, 7, 9, 10, 11, 12, 13, 14, 15), inboundPsns(ch));
        assertEquals(3, r.fired());
        assertEquals(15, r.matched());
    }

    @Test
    void dropEveryReadResponseForOnePsnButNoOther() {
        FaultInjector f = quiet();
        FaultRule r = f.addRule(FaultRule.drop().inbound().operation(Operation.RDMA_READ_RESPONSE).psn(0x10).always());
        EmbeddedChannel ch = channel(f);
        receive(ch,
                roce(Opcode.RC_RDMA_READ_RESPONSE_FIRST, 0x0F),
                roce(Opcode.RC_RDMA_READ_RESPONSE_MIDDLE, 0x10),
                roce(Opcode.RC_RDMA_READ_RESPONSE_LAST, 0x11),
                roce(Opcode.RC_ACKNOWLEDGE, 0x10),
                roce(Opcode.RC_RDMA_READ_RESPONSE_ONLY, 0x10),
                roce(Opcode.RC_RDMA_READ_RESPONSE_MIDDLE, 0x10));
        send(ch, roce(Opcode.RC_RDMA_READ_RESPONSE_ONLY, 0x10));
        assertEquals(List.of(0x0F, 0x11, 0x10), inboundPsns(ch));
        assertEquals(List.of(0x10), outboundPsns(ch), "an inbound rule leaves outbound datagrams alone");
        assertEquals(3, r.fired());
    }

    @Test
    void destQpNarrowsTheMatch() {
        FaultInjector f = quiet();
        f.addRule(FaultRule.drop().destQp(0x22).always());
        EmbeddedChannel ch = channel(f);
        receive(ch, roce(Opcode.RC_SEND_ONLY, 1, 0x21, 0), roce(Opcode.RC_SEND_ONLY, 2, 0x22, 0),
                roce(Opcode.RC_SEND_ONLY, 3, 0x23, 0));
        assertEquals(List.of(1, 3), inboundPsns(ch));
    }

    @Test
    void corruptTheNextSendOnly() {
        FaultInjector f = quiet();
        f.addRule(FaultRule.corrupt().opcode(Opcode.RC_SEND_ONLY));
        EmbeddedChannel ch = channel(f);
        send(ch, roce(Opcode.RC_SEND_FIRST, 1), roce(Opcode.RC_SEND_ONLY, 2), roce(Opcode.RC_SEND_ONLY, 3));
        List<Boolean> ok = new ArrayList<>();
        for (DatagramPacket p; (p = ch.readOutbound()) != null; ) {
            ok.add(Datagrams.icrcOk(p.content()));
            p.release();
        }
        assertEquals(List.of(true, false, true), ok);
        assertEquals(1, f.corrupted(Direction.OUT));
    }

    @Test
    void duplicateTheFirstFetchAdd() {
        FaultInjector f = quiet();
        f.addRule(FaultRule.duplicate().outbound().opcode(Opcode.RC_FETCH_ADD));
        EmbeddedChannel ch = channel(f);
        send(ch, roce(Opcode.RC_COMPARE_SWAP, 1), roce(Opcode.RC_FETCH_ADD, 2), roce(Opcode.RC_FETCH_ADD, 3));
        assertEquals(List.of(1, 2, 2, 3), outboundPsns(ch));
    }

    @Test
    void rulesComeBeforeTheRandomPlan() {
        FaultInjector f = FaultInjector.builder().seed(1).drop(1)
                .rule(FaultRule.pass().opcode(Opcode.RC_ACKNOWLEDGE).always()).build();
        EmbeddedChannel ch = channel(f);
        receive(ch, roce(Opcode.RC_ACKNOWLEDGE, 1), roce(Opcode.RC_SEND_ONLY, 2), roce(Opcode.RC_ACKNOWLEDGE, 3));
        assertEquals(List.of(1, 3), inboundPsns(ch));
        assertEquals(2, f.passed(Direction.IN));
        assertEquals(1, f.dropped(Direction.IN));
    }

    @Test
    void theFirstRuleThatFiresWinsAndLaterRulesDoNotSeeTheDatagram() {
        FaultInjector f = quiet();
        FaultRule notYet = f.addRule(FaultRule.duplicate().nth(2));
        FaultRule drop = f.addRule(FaultRule.drop().opcode(Opcode.RC_SEND_ONLY).always());
        FaultRule never = f.addRule(FaultRule.corrupt().always());
        EmbeddedChannel ch = channel(f);
        receive(ch, roce(Opcode.RC_SEND_ONLY, 1), roce(Opcode.RC_SEND_ONLY, 2), roce(Opcode.RC_SEND_ONLY, 3));
        // 1: the duplicate rule matches but waits for its 2nd match, so the drop rule fires
        // 2: the duplicate rule fires; 3: it is spent, the drop rule fires
        assertEquals(List.of(2, 2), inboundPsns(ch));
        assertEquals(3, notYet.matched());
        assertEquals(1, notYet.fired());
        assertEquals(2, drop.fired());
        assertEquals(0, never.matched());
    }

    @Test
    void nonRoceDatagramsNeverMatchOpcodeRulesButMatchRulesWithoutCriteria() {
        FaultInjector f = quiet();
        FaultRule byOpcode = f.addRule(FaultRule.drop().opcode(Opcode.values()).always());
        FaultRule byPsn = f.addRule(FaultRule.drop().psn(0).always());
        EmbeddedChannel ch = channel(f);
        DatagramPacket j = junk(0);
        receive(ch, j);
        DatagramPacket got = ch.readInbound();
        assertEquals(j, got);
        got.release();
        assertEquals(0, byOpcode.matched());
        assertEquals(0, byPsn.matched());

        FaultRule any = f.addRule(FaultRule.drop().inbound());
        receive(ch, junk(1));
        assertNull(ch.readInbound());
        assertEquals(1, any.fired());
    }

    @Test
    void delayAndReorderRulesUseTheTimers() {
        FaultInjector f = FaultInjector.builder().seed(1).reorderDepth(1).build();
        f.addRule(FaultRule.delay(300).outbound().opcode(Opcode.RC_ACKNOWLEDGE));
        f.addRule(FaultRule.reorder().outbound().opcode(Opcode.RC_SEND_ONLY));
        EmbeddedChannel ch = channel(f);
        send(ch, roce(Opcode.RC_ACKNOWLEDGE, 1), roce(Opcode.RC_SEND_ONLY, 2), roce(Opcode.RC_SEND_FIRST, 3));
        assertEquals(List.of(3, 2), outboundPsns(ch));
        ch.advanceTimeBy(300, TimeUnit.MICROSECONDS);
        ch.runPendingTasks();
        assertEquals(List.of(1), outboundPsns(ch));
    }

    @Test
    void rulesAddedAndRemovedFromAnotherThreadApplyFromTheNextDatagram() throws Exception {
        FaultInjector f = quiet();
        EmbeddedChannel ch = channel(f);
        FaultRule[] added = new FaultRule[1];
        Thread t = new Thread(() -> added[0] = f.addRule(FaultRule.drop().always()));
        t.start();
        t.join();
        receive(ch, roce(Opcode.RC_SEND_ONLY, 1));
        assertTrue(f.removeRule(added[0]));
        assertFalse(f.removeRule(added[0]));
        receive(ch, roce(Opcode.RC_SEND_ONLY, 2));
        assertEquals(List.of(2), inboundPsns(ch));
        assertEquals(1, added[0].fired(), "a removed rule keeps its counters");
        assertEquals(List.of(), f.rules());
    }

    @Test
    void anAddedRuleIsFrozenAndBelongsToOneInjector() {
        FaultInjector f = quiet();
        FaultRule r = f.addRule(FaultRule.drop());
        assertThrows(IllegalStateException.class, () -> r.psn(3));
        assertThrows(IllegalStateException.class, () -> f.addRule(r));
        assertThrows(IllegalStateException.class, () -> quiet().addRule(r));
        f.clearRules();
        FaultInjector g = quiet();
        assertEquals(r, g.addRule(r));
        assertEquals(List.of(r), g.rules());
    }

    @Test
    void ruleArgumentsAreChecked() {
        assertThrows(IllegalArgumentException.class, () -> FaultRule.drop().psn(1 << 24));
        assertThrows(IllegalArgumentException.class, () -> FaultRule.drop().psn(-1));
        assertThrows(IllegalArgumentException.class, () -> FaultRule.drop().destQp(1 << 24));
        assertThrows(IllegalArgumentException.class, () -> FaultRule.drop().nth(0));
        assertThrows(IllegalArgumentException.class, () -> FaultRule.drop().every(0));
        assertThrows(IllegalArgumentException.class, () -> FaultRule.drop().times(0));
        assertThrows(IllegalArgumentException.class, () -> FaultRule.delay(-1));
        assertThrows(IllegalArgumentException.class, () -> FaultRule.of(null));
    }
}
