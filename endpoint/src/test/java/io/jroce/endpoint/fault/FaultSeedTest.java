package io.jroce.endpoint.fault;

import static io.jroce.endpoint.fault.Datagrams.drain;
import static io.jroce.endpoint.fault.Datagrams.receive;
import static io.jroce.endpoint.fault.Datagrams.roce;
import static io.jroce.endpoint.fault.Datagrams.send;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jroce.wire.Opcode;
import io.netty.buffer.ByteBuf;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.socket.DatagramPacket;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Same seed, same traffic, same faults. */
class FaultSeedTest {
    private static final Opcode[] OPS = {Opcode.RC_SEND_ONLY, Opcode.RC_RDMA_WRITE_MIDDLE, Opcode.RC_ACKNOWLEDGE,
        Opcode.RC_RDMA_READ_RESPONSE_MIDDLE, Opcode.RC_FETCH_ADD};

    /** What came out, in order, per direction, after pushing n datagrams each way with time moving on. */
    private static List<List<String>> run(FaultInjector f, int n, boolean outboundTraffic) {
        EmbeddedChannel ch = new EmbeddedChannel(f);
        ch.freezeTime();
        List<String> in = new ArrayList<>();
        List<String> out = new ArrayList<>();
        List<ByteBuf> created = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            DatagramPacket r = roce(OPS[i % OPS.length], i);
            created.add(r.content());
            receive(ch, r);
            if (outboundTraffic) {
                DatagramPacket s = roce(OPS[(i + 2) % OPS.length], i);
                created.add(s.content());
                send(ch, s);
            }
            if (i % 7 == 0) {
                ch.advanceTimeBy(150, TimeUnit.MICROSECONDS);
                ch.runPendingTasks();
            }
            in.addAll(drain(ch, Direction.IN));
            out.addAll(drain(ch, Direction.OUT));
        }
        ch.advanceTimeBy(1, TimeUnit.SECONDS);
        ch.runPendingTasks();
        in.addAll(drain(ch, Direction.IN));
        out.addAll(drain(ch, Direction.OUT));
        assertEquals(0, f.pending());
        assertFalse(ch.finishAndReleaseAll());
        for (ByteBuf b : created) {
            assertEquals(0, b.refCnt(), "leaked: every datagram was dropped, forwarded and released, or copied and released");
        }
        return List.of(in, out);
    }

    private static FaultInjector chaos(long seed) {
        return FaultInjector.builder().seed(seed).drop(0.05).duplicate(0.05).reorder(0.1).delay(0.05).corrupt(0.05)
                .delayMicros(400).reorderDepth(4).reorderTimeoutMicros(300)
                .rule(FaultRule.drop().opcode(Opcode.RC_ACKNOWLEDGE).nth(3).every(50).always())
                // an ACK's MSN rewritten now and then, so that rewritten copies are checked for leaks too
                .rule(FaultRule.rewrite(Opcode.RC_ACKNOWLEDGE.aethOffset() + 1, (byte) 1, (byte) 2, (byte) 3)
                        .opcode(Opcode.RC_ACKNOWLEDGE).nth(2).every(40).always())
                .build();
    }

    @Test
    void twoInjectorsWithTheSameSeedMakeIdenticalDecisionsOverTenThousandDatagramsAndLeakNothing() {
        FaultInjector a = chaos(42);
        FaultInjector b = chaos(42);
        List<List<String>> ra = run(a, 10_000, true);
        List<List<String>> rb = run(b, 10_000, true);
        assertEquals(ra, rb);
        Map<String, Long> ca = a.counters();
        assertEquals(ca, b.counters());
        for (Direction d : Direction.values()) {
            assertEquals(10_000, a.arrived(d));
            for (FaultAction act : FaultAction.values()) {
                assertTrue(a.count(d, act) > 0, d + " " + act + " never happened: " + ca);
            }
        }
        assertEquals(80, ca.get("rule.r1.fired"), "ACKs 3, 53, ..., 3953 of 4000 (both directions share the count)");
    }

    @Test
    void aDifferentSeedMakesDifferentDecisions() {
        assertNotEquals(run(chaos(42), 2_000, true), run(chaos(43), 2_000, true));
    }

    @Test
    void inboundDecisionsDoNotDependOnOutboundTraffic() {
        FaultInjector both = FaultInjector.builder().seed(7).drop(0.1).duplicate(0.1).corrupt(0.1).build();
        FaultInjector inOnly = FaultInjector.builder().seed(7).drop(0.1).duplicate(0.1).corrupt(0.1).build();
        assertEquals(run(both, 3_000, true).get(0), run(inOnly, 3_000, false).get(0));
    }

    @Test
    void firedRulesDoNotShiftTheRandomDecisionsOfLaterDatagrams() {
        FaultInjector plain = FaultInjector.builder().seed(9).drop(0.2).build();
        FaultInjector ruled = FaultInjector.builder().seed(9).drop(0.2)
                .rule(FaultRule.duplicate().psn(0)).build();
        List<String> a = run(plain, 1_000, false).get(0);
        List<String> b = run(ruled, 1_000, false).get(0);
        // datagram 0 differs (dropped or not vs duplicated); all later fates are the same
        int skipA = a.get(0).equals(b.get(0)) ? 1 : 0;
        List<String> restA = a.subList(skipA, a.size());
        List<String> restB = b.subList(2, b.size());
        assertEquals(restA, restB);
    }

    @Test
    void seedIsReportedEvenWhenChosenAtRandom() {
        FaultInjector f = FaultInjector.builder().drop(0.5).build();
        FaultInjector replay = FaultInjector.parse(f.spec());
        assertEquals(f.seed(), replay.seed());
        assertEquals(run(f, 500, true), run(replay, 500, true));
    }
}
