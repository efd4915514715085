package io.jroce.endpoint.fault;

import static io.jroce.endpoint.fault.Datagrams.icrcExact;
import static io.jroce.endpoint.fault.Datagrams.outboundPsns;
import static io.jroce.endpoint.fault.Datagrams.send;
import static io.jroce.endpoint.fault.Datagrams.syndrome;
import static io.jroce.endpoint.fault.Datagrams.withAeth;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jroce.wire.Opcode;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.socket.DatagramPacket;

import java.util.EnumSet;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The {@code rule=} items of the --chaos spec: what they build, and one-line messages for what they do not accept. */
class FaultRuleSpecTest {

    private static FaultRule only(String spec) {
        List<FaultRule> rs = FaultInjector.parse(spec).rules();
        assertEquals(1, rs.size(), spec);
        return rs.get(0);
    }

    @Test
    void aRuleNamesItsActionDirectionMatchAndFiring() {
        FaultRule r = only("out.rule=drop/nak:seq/always");
        assertEquals(FaultAction.DROP, r.action());
        assertTrue(r.appliesTo(Direction.OUT));
        assertFalse(r.appliesTo(Direction.IN));
        assertEquals(0x60, r.syndromeValue());
        assertEquals(0x7F, r.syndromeMask());
        assertTrue(r.toString().contains("always"), r.toString());

        FaultRule w = only(" in.rule = drop / op:rc_rdma_write_middle+RC_SEND_MIDDLE / nth:3 / every:0x10 / times:2 ");
        assertTrue(w.appliesTo(Direction.IN));
        assertFalse(w.appliesTo(Direction.OUT));
        assertEquals(EnumSet.of(Opcode.RC_RDMA_WRITE_MIDDLE, Opcode.RC_SEND_MIDDLE), w.opcodes());
        assertTrue(w.toString().contains("nth=3 every=16 times=2"), w.toString());

        FaultRule both = only("rule=delay:250/psn:0x123456/qp:17/rnr/once");
        assertTrue(both.appliesTo(Direction.IN) && both.appliesTo(Direction.OUT));
        assertEquals(250, both.delayMicros());
        assertEquals(0x123456, both.psn());
        assertEquals(17, both.destQp());
        assertEquals(0x20, both.syndromeValue());
        assertEquals(0x60, both.syndromeMask());

        assertEquals(-1, only("rule=delay").delayMicros(), "without micros: the plan's delay");
        assertEquals(0x00, only("rule=pass/ack").syndromeValue());
        assertEquals(0x60, only("rule=corrupt/nak").syndromeMask());
        assertEquals(0x7F, only("rule=dup/nak:5").syndromeMask());
        assertEquals(0x65, only("rule=reorder/nak:5").syndromeValue());
    }

    @Test
    void eachNakNameIsItsCode() {
        String[] names = {"seq", "inv", "acc", "op", "rd"};
        for (int code = 0; code < names.length; code++) {
            assertEquals(0x60 | code, only("rule=drop/nak:" + names[code]).syndromeValue(), names[code]);
        }
    }

    @Test
    void aRewriteRuleFromTheSpecRewritesWhatItNames() {
        FaultInjector f = FaultInjector.parse("seed=1,out.rule=rewrite:12:61/nak:acc/always");
        FaultRule r = f.rules().get(0);
        assertEquals(12, r.rewriteOffset());
        assertArrayEquals(new byte[] {0x61}, r.rewriteBytes());
        EmbeddedChannel ch = new EmbeddedChannel(f);
        send(ch, withAeth(Opcode.RC_ACKNOWLEDGE, 1, 0x62, 9), withAeth(Opcode.RC_ACKNOWLEDGE, 2, 0x61, 9));
        DatagramPacket first = ch.readOutbound();
        DatagramPacket second = ch.readOutbound();
        assertNull(ch.readOutbound());
        assertEquals(0x61, syndrome(first));
        assertTrue(icrcExact(first.content()));
        assertEquals(0x61, syndrome(second));
        first.release();
        second.release();
        assertEquals(1, r.fired(), "only the remote access error matched");
    }

    @Test
    void rulesAddUpInOrderAndTheRestOfTheSpecStillWorks() {
        FaultInjector f = FaultInjector.parse("drop=0.5,out.rule=drop/rnr/always,out.rule=drop/ack/nth:2,seed=7");
        assertEquals(7, f.seed());
        assertEquals(0.5, f.plan(Direction.IN).drop());
        assertEquals(2, f.rules().size());
        f.plan(Direction.OUT, FaultPlan.none());
        EmbeddedChannel ch = new EmbeddedChannel(f);
        send(ch, withAeth(Opcode.RC_ACKNOWLEDGE, 1, 0x1F, 0), withAeth(Opcode.RC_ACKNOWLEDGE, 2, 0x2E, 0),
                withAeth(Opcode.RC_ACKNOWLEDGE, 3, 0x1F, 0), withAeth(Opcode.RC_ACKNOWLEDGE, 4, 0x1F, 0));
        assertEquals(List.of(1, 4), outboundPsns(ch), "the RNR NAK and the second ACK are dropped");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "rule=|chaos spec: rule=: unknown action '' (actions: drop, dup, corrupt, reorder, pass, delay[:micros], rewrite:offset:hex)",
        "rule=explode|chaos spec: rule=explode: unknown action 'explode' (actions: drop, dup, corrupt, reorder, pass, delay[:micros], "
            + "rewrite:offset:hex)",
        "rule=drop:3|chaos spec: rule=drop:3: 'drop:3' takes no value after its name",
        "rule=delay:-5|chaos spec: rule=delay:-5: delay must not be negative, was -5",
        "rule=rewrite:12|chaos spec: rule=rewrite:12: 'rewrite:12' takes 2 values after its name",
        "rule=rewrite:12:6|chaos spec: rule=rewrite:12:6: rewrite bytes '6' are not hex digits in pairs (e.g. 61 or 00abcd)",
        "rule=rewrite:x:61|chaos spec: rule=rewrite:x:61: rewrite offset 'x' is not a whole number (decimal or 0x hex)",
        "rule=drop/op:RC_NOTHING|chaos spec: rule=drop/op:RC_NOTHING: unknown opcode 'RC_NOTHING' (names as in jroce inspect, e.g. RC_ACKNOWLEDGE)",
        "rule=drop/psn:0x1000000|chaos spec: rule=drop/psn:0x1000000: a PSN is 24 bits (0..16777215), was 16777216",
        "rule=drop/nak:32|chaos spec: rule=drop/nak:32: a NAK code is 0..31 (or seq, inv, acc, op, rd), was 32",
        "rule=drop/nth:0|chaos spec: rule=drop/nth:0: nth counts matches from 1, was 0",
        "rule=drop/sometimes|chaos spec: rule=drop/sometimes: unknown match 'sometimes' (matches: op:NAME[+NAME], psn:N, qp:N, ack, rnr, nak[:CODE], "
            + "syndrome:VALUE:MASK, nth:N, every:N, times:N, once, always)",
        "rule=drop/syndrome:0x61:0x60|chaos spec: rule=drop/syndrome:0x61:0x60: a syndrome match is 8 bits, value within a non-zero mask, "
            + "was value 0x61 mask 0x60",
    })
    void badRulesAreOneLineNamingTheItem(String spec, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> FaultInjector.parse(spec));
        assertEquals(message, e.getMessage());
        assertFalse(e.getMessage().contains("\n"));
    }

    /** What spec() writes, parse() reads back into the same rules: a run with rules can be replayed. */
    @Test
    void rulesRoundTripThroughTheSpec() {
        FaultInjector f = FaultInjector.builder().seed(3).drop(0.1)
                .rule(FaultRule.drop().outbound().nak(io.jroce.wire.Aeth.NakCode.PSN_SEQUENCE_ERROR).always())
                .rule(FaultRule.rewrite(16, new byte[] {1, 2, (byte) 0xFF}).inbound().opcode(Opcode.RC_ATOMIC_ACKNOWLEDGE, Opcode.RC_ACKNOWLEDGE)
                        .nth(2).every(3).times(4))
                .rule(FaultRule.delay(77).psn(5).destQp(0x12).aeth(io.jroce.wire.Aeth.Kind.RNR_NAK).name("slow"))
                .rule(FaultRule.delay().aeth(io.jroce.wire.Aeth.Kind.RESERVED))
                .rule(FaultRule.duplicate().syndrome(0x1F, 0xFF).once())
                .rule(FaultRule.corrupt().syndrome(0x60 | 9, 0x7F))
                .build();
        String spec = f.spec();
        assertTrue(spec.endsWith(",seed=3,out.rule=drop/nak:seq/always,in.rule=rewrite:16:0102ff/op:RC_ACKNOWLEDGE+RC_ATOMIC_ACKNOWLEDGE/nth:2/every:3"
                + "/times:4,rule=delay:77/psn:5/qp:18/rnr,rule=delay/syndrome:0x40:0x60,rule=dup/syndrome:0x1f:0xff,rule=corrupt/nak:9"), spec);
        FaultInjector g = FaultInjector.parse(spec);
        assertEquals(spec, g.spec());
        assertEquals(f.rules().size(), g.rules().size());
        for (int i = 0; i < f.rules().size(); i++) {
            FaultRule a = f.rules().get(i);
            FaultRule b = g.rules().get(i);
            assertEquals(a.action(), b.action());
            assertEquals(a.opcodes(), b.opcodes());
            assertEquals(a.syndromeValue(), b.syndromeValue());
            assertEquals(a.syndromeMask(), b.syndromeMask());
            assertArrayEquals(a.rewriteBytes(), b.rewriteBytes());
            assertEquals(a.delayMicros(), b.delayMicros());
        }
    }

    @Test
    void aRewriteIsBounded() {
        String ok = "rule=rewrite:0:" + "00".repeat(FaultRuleSpec.MAX_REWRITE_BYTES);
        assertEquals(FaultRuleSpec.MAX_REWRITE_BYTES, only(ok).rewriteBytes().length);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> FaultInjector.parse(ok + "00"));
        assertTrue(e.getMessage().endsWith("rewrite writes 1..64 bytes, was 65"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> FaultInjector.parse("rule=rewrite:70000:00"));
    }
}
