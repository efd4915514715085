package io.jroce.endpoint;

import io.jroce.endpoint.fault.FaultInjector;
import io.jroce.endpoint.fault.FaultRule;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The timer wheel on an injected clock: a QP's timer check runs when its deadline has come, not on every cycle or
 * tick while it is armed, and a deadline more than a turn of the wheel away waits for its turn.
 */
class TimersTest {
    private final ManualClock clock = new ManualClock();
    private final FaultInjector chaosA = FaultInjector.builder().seed(1).build();
    private Pair p;

    @AfterEach
    void close() {
        if (p != null) p.close();
    }

    /** QPs A to B whose WRITEs are all lost: each has its local ACK timer armed {@code timeoutCode} from now. */
    private List<QueuePair> lostWrites(int qps, int timeoutCode) throws Exception {
        p = new Pair(new DeviceConfig(Pair.addr("127.0.5.41")).clock(clock).filter(chaosA).tailProbeMicros(0),
                new DeviceConfig(Pair.addr("127.0.5.42")).clock(clock).tailProbeMicros(0));
        chaosA.addRule(FaultRule.drop().outbound().always());
        CompletionQueue cqA = p.a.createCq(4 * qps);
        CompletionQueue cqB = p.b.createCq(4 * qps);
        MemoryRegion src = p.pdA.allocateAndRegister(4096, Access.LOCAL_WRITE);
        MemoryRegion dst = p.pdB.allocateAndRegister(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        List<QueuePair> out = new ArrayList<>();
        for (int i = 0; i < qps; i++) {
            QueuePair a = p.pdA.createQp(new QpInitAttr(cqA).maxSendWr(4).maxRecvWr(4));
            QueuePair b = p.pdB.createQp(new QpInitAttr(cqB).maxSendWr(4).maxRecvWr(4));
            RcConnect.connectPair(a, 0x100, b, 0x200, RcConnect.Params.defaults().mtu(Mtu.ofBytes(1024)).timeout(timeoutCode)
                    .retryCnt(7).accessFlags(Access.REMOTE_WRITE));
            a.postSend(new SendWorkRequest(i, WrOpcode.RDMA_WRITE, Sge.of(src, 0, 64)).remote(dst.address(), dst.rkey()).signaled());
            out.add(a);
        }
        // every WRITE has left (and was dropped): the loop ran each post, so each timer is armed
        p.a.runOnLoop(() -> { });
        return out;
    }

    private static long timeouts(List<QueuePair> qps) {
        long n = 0;
        for (QueuePair q : qps) n += q.counters().timeouts;
        return n;
    }

    @Test
    void aCycleBeforeTheDeadlineChecksNoQp() throws Exception {
        List<QueuePair> qps = lostWrites(200, 14); // 67 ms
        long visits = p.a.timerChecks();
        for (int i = 0; i < 100; i++) { // 100 cycles 0.5 ms apart: 50 ms, all before the deadline
            clock.advanceNanos(500_000);
            p.a.runTimers();
        }
        assertEquals(0, p.a.timerChecks() - visits, "timer checks before any deadline came");
        assertEquals(0, timeouts(qps));
        clock.advanceNanos(20_000_000); // 70 ms: every deadline has come
        p.a.runTimers();
        assertEquals(200, p.a.timerChecks() - visits, "one timer check per QP whose deadline came");
        assertEquals(200, timeouts(qps));
    }

    @Test
    void aDeadlineBeyondATurnOfTheWheelWaitsForItsTurn() throws Exception {
        List<QueuePair> qps = lostWrites(3, 17); // 4.096 us << 17 = 537 ms, two turns of 256 ms and more
        clock.advanceNanos(300_000_000); // its slot has come round once: not yet due
        p.a.runTimers();
        assertEquals(0, timeouts(qps));
        clock.advanceNanos(200_000_000); // 500 ms
        p.a.runTimers();
        assertEquals(0, timeouts(qps));
        clock.advanceNanos(40_000_000); // 540 ms
        p.a.runTimers();
        assertEquals(3, timeouts(qps));
    }
}
