package io.jroce.endpoint;

import io.jroce.endpoint.fault.FaultInjector;
import io.jroce.endpoint.fault.FaultRule;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * On the system clock an idle loop wakes for its timers by itself: its wait ends at the wheel's next deadline
 * ({@link TimerWait}), with no task scheduled for timers. A WRITE whose every packet is lost exhausts its retries
 * on time, while nothing else happens on either device.
 */
class TimerWaitTest {
    @ParameterizedTest
    @EnumSource(AgentMode.class)
    void anIdleLoopFiresItsRetransmitTimersOnTime(AgentMode mode) throws Exception {
        FaultInjector chaos = FaultInjector.builder().seed(1).build();
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.0.5.51")).filter(chaos).tailProbeMicros(0).agentMode(mode),
                new DeviceConfig(Pair.addr("127.0.5.52")).tailProbeMicros(0))) {
            chaos.addRule(FaultRule.drop().outbound().always());
            CompletionQueue cqA = p.a.createCq(4);
            QueuePair a = p.pdA.createQp(new QpInitAttr(cqA).maxSendWr(4).maxRecvWr(4));
            QueuePair b = p.pdB.createQp(new QpInitAttr(p.b.createCq(4)).maxSendWr(4).maxRecvWr(4));
            // timeout 4.096 us << 11 = 8.4 ms, retry_cnt 2: the WRITE fails after three timeouts, about 25 ms
            RcConnect.connectPair(a, 0x100, b, 0x200, RcConnect.Params.defaults().mtu(Mtu.ofBytes(1024)).timeout(11)
                    .retryCnt(2).accessFlags(Access.REMOTE_WRITE));
            MemoryRegion src = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            long start = System.nanoTime();
            a.postSend(new SendWorkRequest(7, WrOpcode.RDMA_WRITE, Sge.of(src, 0, 64)).remote(dst.address(), dst.rkey()).signaled());
            // a dedicated device is polled from this thread without driving it; an invoked one is driven by the poll
            WorkCompletion[] wc = new WorkCompletion[1];
            int n = cqA.poll(wc, 1, 10, TimeUnit.SECONDS);
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertEquals(1, n, "the WRITE completed");
            assertEquals(WcStatus.RETRY_EXC_ERR, wc[0].status);
            assertEquals(3, a.counters().timeouts, "three timeouts: the first try and two retries");
            // three 8.4 ms timeouts; a loop that slept until something else woke it took a second per timeout
            assertTrue(ms < 500, "retries exhausted after " + ms + " ms");
        }
    }
}
