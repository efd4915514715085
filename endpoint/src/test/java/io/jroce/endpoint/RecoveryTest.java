package io.jroce.endpoint;

import io.jroce.endpoint.fault.FaultInjector;
import io.jroce.endpoint.fault.FaultRule;
import io.jroce.wire.Opcode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.*;

/**
 * One deterministic test per recovery path: a targeted fault rule makes exactly one thing go wrong, and
 * the test checks that the data still arrives exactly once and that recovery took the path the IBA spec
 * prescribes (sequence NAK, local ACK timeout, duplicate handling, RNR). Timers run on a manual clock.
 */
class RecoveryTest {
    private static final int TIMEOUT_CODE = 14;                      // 4.096 us << 14 = 67 ms
    private static final long TIMEOUT_NANOS = 4096L << TIMEOUT_CODE;
    private static final int MTU = 256;

    private ManualClock clock;
    private FaultInjector chaosA;
    private FaultInjector chaosB;
    private Pair p;
    private QueuePair qa;
    private QueuePair qb;
    private CompletionQueue cqA;
    private CompletionQueue cqB;
    private MemoryRegion srcA;
    private MemoryRegion dstB;
    private MemoryRegion backA;
    private byte[] data;

    @BeforeEach
    void open() throws Exception {
        clock = new ManualClock();
        chaosA = FaultInjector.builder().seed(1).build();
        chaosB = FaultInjector.builder().seed(2).build();
        p = new Pair(new DeviceConfig(Pair.addr("127.0.5.1")).clock(clock).filter(chaosA),
                new DeviceConfig(Pair.addr("127.0.5.2")).clock(clock).filter(chaosB));
        int remote = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
        srcA = p.pdA.allocateAndRegister(64 << 10, Access.LOCAL_WRITE);
        backA = p.pdA.allocateAndRegister(64 << 10, Access.LOCAL_WRITE);
        dstB = p.pdB.allocateAndRegister(64 << 10, remote);
        data = new byte[64 << 10];
        new Random(7).nextBytes(data);
        srcA.buffer().put(data);
    }

    @AfterEach
    void close() {
        if (p != null) p.close();
    }

    private void connect(int psnA, int psnB, int rnrRetry, int minRnrTimer) {
        cqA = p.a.createCq(256);
        cqB = p.b.createCq(256);
        qa = p.pdA.createQp(new QpInitAttr(cqA).maxSendWr(64).maxRecvWr(64));
        qb = p.pdB.createQp(new QpInitAttr(cqB).maxSendWr(64).maxRecvWr(64));
        RcConnect.connectPair(qa, psnA, qb, psnB, RcConnect.Params.defaults().mtu(Mtu.ofBytes(MTU)).rdAtomic(4)
                .minRnrTimer(minRnrTimer).timeout(TIMEOUT_CODE).rnrRetry(rnrRetry)
                .accessFlags(Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
    }

    private void connect() {
        connect(0x100, 0x200, 7, 1);
    }


    /** Lets the local ACK timer expire: step the clock past the timeout and run the timers. */
    private void expireTimers() {
        clock.advanceNanos(TIMEOUT_NANOS + 1);
        p.a.runTimers();
        p.b.runTimers();
    }

    private void write(long wrId, int len) {
        qa.postSend(new SendWorkRequest(wrId, WrOpcode.RDMA_WRITE, Sge.of(srcA, 0, len)).remote(dstB.address(), dstB.rkey()).signaled());
    }

    private void assertLanded(int len) {
        byte[] got = new byte[len];
        dstB.buffer().get(got);
        assertArrayEquals(java.util.Arrays.copyOf(data, len), got, "bytes at the responder");
    }

    private static WorkCompletion one(CompletionQueue cq) {
        return Pair.await(cq, 1, 10_000).get(0);
    }

    @Test
    void lostFirstIsRecoveredBySequenceNak() {
        connect();
        FaultRule r = chaosA.addRule(FaultRule.drop().outbound().opcode(Opcode.RC_RDMA_WRITE_FIRST).once());
        write(1, 3 * MTU);
        Wcs.assertOk(one(cqA), 1, WcOpcode.RDMA_WRITE, 3 * MTU, qa);
        assertEquals(1, r.fired());
        assertLanded(3 * MTU);
        assertEquals(1, qa.counters().seqNaksReceived, "recovered by the responder's sequence NAK");
        assertEquals(0, qa.counters().timeouts);
        assertEquals(1, qb.counters().seqNaksSent, "exactly one NAK for the gap");
    }

    @Test
    void lostMiddleIsRecoveredBySequenceNak() {
        connect();
        FaultRule r = chaosA.addRule(FaultRule.drop().outbound().opcode(Opcode.RC_RDMA_WRITE_MIDDLE).nth(2).once());
        write(1, 5 * MTU);
        Wcs.assertOk(one(cqA), 1, WcOpcode.RDMA_WRITE, 5 * MTU, qa);
        assertEquals(1, r.fired());
        assertLanded(5 * MTU);
        assertEquals(1, qb.counters().seqNaksSent);
        assertEquals(0, qa.counters().timeouts);
    }

    @Test
    void afterATimeoutGoBackNRestartsWithOnePacketInFlight() {
        connect();
        // the first transmission of a 16-packet WRITE is lost whole
        FaultRule lost = chaosA.addRule(FaultRule.drop().outbound().always());
        write(1, 16 * MTU);
        Pair.until("the WRITE's 16 packets are dropped", () -> lost.fired() == 16);
        chaosA.removeRule(lost);
        // the responder's acknowledgements are lost too, so that only the timeout's own resend is counted
        FaultRule noAck = chaosB.addRule(FaultRule.drop().outbound().opcode(Opcode.RC_ACKNOWLEDGE).always());
        long before = qa.counters().packetsOut;
        expireTimers(); // the timer check runs the requester on the loop: what the timeout sends has left when it returns
        assertEquals(1, qa.counters().packetsOut - before, "packets resent at once after the timeout (the whole window before)");
        Pair.until("the resent packet is acknowledged (and the ACK dropped)", () -> noAck.fired() >= 1);
        chaosB.removeRule(noAck);
        expireTimers(); // again one packet; its ACK now arrives and the window doubles with each one after it
        Wcs.assertOk(one(cqA), 1, WcOpcode.RDMA_WRITE, 16 * MTU, qa);
        assertLanded(16 * MTU);
        assertEquals(2, qa.counters().timeouts);
    }

    @Test
    void lostLastIsRecoveredByTimeout() {
        connect();
        FaultRule r = chaosA.addRule(FaultRule.drop().outbound().opcode(Opcode.RC_RDMA_WRITE_LAST).once());
        write(1, 3 * MTU);
        Pair.until("the LAST packet is dropped", () -> r.fired() == 1);
        assertEquals(0, cqA.size(), "no completion before the data is acknowledged");
        expireTimers();
        Wcs.assertOk(one(cqA), 1, WcOpcode.RDMA_WRITE, 3 * MTU, qa);
        assertLanded(3 * MTU);
        assertEquals(1, qa.counters().timeouts);
    }

    @Test
    void lostOnlyIsRecoveredByTimeoutAndDeliveredOnce() {
        connect();
        FaultRule r = chaosA.addRule(FaultRule.drop().outbound().opcode(Opcode.RC_SEND_ONLY).once());
        qb.postRecv(new ReceiveWorkRequest(9, Sge.of(dstB)));
        qb.postRecv(new ReceiveWorkRequest(10, Sge.of(dstB)));
        qa.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(srcA, 0, 100)).signaled());
        Pair.until("the ONLY packet is dropped", () -> r.fired() == 1);
        expireTimers();
        Wcs.assertOk(one(cqA), 1, WcOpcode.SEND, 100, qa);
        Wcs.assertOk(one(cqB), 9, WcOpcode.RECV, 100, qb);
        assertLanded(100);
        assertEquals(0, cqB.size(), "the second receive is still posted");
    }

    @Test
    void lostAckIsRecoveredByTimeoutAndTheDuplicateIsNotReExecuted() {
        connect();
        FaultRule r = chaosA.addRule(FaultRule.drop().inbound().opcode(Opcode.RC_ACKNOWLEDGE).once());
        qb.postRecv(new ReceiveWorkRequest(9, Sge.of(dstB)));
        qb.postRecv(new ReceiveWorkRequest(10, Sge.of(dstB)));
        qa.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(srcA, 0, 2 * MTU + 5)).signaled());
        Wcs.assertOk(one(cqB), 9, WcOpcode.RECV, 2 * MTU + 5, qb);
        Pair.until("the ACK is dropped", () -> r.fired() == 1);
        expireTimers();
        Wcs.assertOk(one(cqA), 1, WcOpcode.SEND, 2 * MTU + 5, qa);
        assertTrue(qb.counters().duplicatesSeen >= 1, "the resent packets were seen as duplicates");
        assertEquals(0, cqB.size(), "the duplicate SEND consumed no second receive");
    }

    @Test
    void lostReadRequestIsRecoveredByTimeout() {
        connect();
        dstB.buffer().put(data, 0, 4 * MTU);
        FaultRule r = chaosA.addRule(FaultRule.drop().outbound().opcode(Opcode.RC_RDMA_READ_REQUEST).once());
        qa.postSend(new SendWorkRequest(1, WrOpcode.RDMA_READ, Sge.of(backA, 0, 4 * MTU)).remote(dstB.address(), dstB.rkey()).signaled());
        Pair.until("the READ request is dropped", () -> r.fired() == 1);
        expireTimers();
        Wcs.assertOk(one(cqA), 1, WcOpcode.RDMA_READ, 4 * MTU, qa);
        assertRead(4 * MTU);
    }

    private void assertRead(int len) {
        byte[] got = new byte[len];
        backA.buffer().get(got);
        assertArrayEquals(java.util.Arrays.copyOf(data, len), got, "bytes read back");
    }

    @Test
    void lostReadResponseInTheMiddleResumesTheReadPartWay() {
        connect();
        dstB.buffer().put(data, 0, 6 * MTU);
        FaultRule r = chaosA.addRule(FaultRule.drop().inbound().opcode(Opcode.RC_RDMA_READ_RESPONSE_MIDDLE).nth(2).once());
        qa.postSend(new SendWorkRequest(1, WrOpcode.RDMA_READ, Sge.of(backA, 0, 6 * MTU)).remote(dstB.address(), dstB.rkey()).signaled());
        Wcs.assertOk(one(cqA), 1, WcOpcode.RDMA_READ, 6 * MTU, qa);
        assertEquals(1, r.fired());
        assertRead(6 * MTU);
        assertEquals(1, qa.counters().retries, "one retry from the first missing response");
        assertEquals(1, qb.counters().duplicatesSeen, "the resumed READ is a duplicate at the responder");
        assertEquals(0, qa.counters().timeouts);
    }

    @Test
    void lostAtomicAckIsAnsweredFromTheSavedResultSoTheAddHappensOnce() {
        connect();
        MemoryRegion res = p.pdA.allocateAndRegister(8, Access.LOCAL_WRITE);
        FaultRule r = chaosA.addRule(FaultRule.drop().inbound().opcode(Opcode.RC_ATOMIC_ACKNOWLEDGE).once());
        qa.postSend(new SendWorkRequest(1, WrOpcode.ATOMIC_FETCH_AND_ADD, Sge.of(res)).remote(dstB.address(), dstB.rkey()).compareAdd(5).signaled());
        Pair.until("the atomic ACK is dropped", () -> r.fired() == 1);
        expireTimers();
        Wcs.assertOk(one(cqA), 1, WcOpcode.FETCH_ADD, 8, qa);
        long before = java.nio.ByteBuffer.wrap(data, 0, 8).order(java.nio.ByteOrder.nativeOrder()).getLong();
        assertEquals(0, res.getLong(0), "original value (the region was zero)");
        assertEquals(5, dstB.getLong(0), "added exactly once");
        assertEquals(1, qb.counters().duplicatesSeen);
        assertNotEquals(Long.MIN_VALUE, before);
    }

    @Test
    void duplicatedReadAndAtomicRequestsAreAnsweredWithoutReExecutingTheAtomic() {
        connect();
        dstB.buffer().put(data, 0, 3 * MTU);
        dstB.buffer().putLong(3 * MTU, 0); // the atomic word
        MemoryRegion res = p.pdA.allocateAndRegister(8, Access.LOCAL_WRITE);
        FaultRule dr = chaosA.addRule(FaultRule.duplicate().outbound().opcode(Opcode.RC_RDMA_READ_REQUEST).once());
        FaultRule da = chaosA.addRule(FaultRule.duplicate().outbound().opcode(Opcode.RC_FETCH_ADD).once());
        qa.postSend(new SendWorkRequest(1, WrOpcode.RDMA_READ, Sge.of(backA, 0, 3 * MTU)).remote(dstB.address(), dstB.rkey()).signaled());
        qa.postSend(new SendWorkRequest(2, WrOpcode.ATOMIC_FETCH_AND_ADD, Sge.of(res)).remote(dstB.address() + 3 * MTU, dstB.rkey()).compareAdd(3).signaled());
        List<WorkCompletion> wcs = Pair.await(cqA, 2, 10_000);
        Wcs.assertOk(wcs.get(0), 1, WcOpcode.RDMA_READ, 3 * MTU, qa);
        Wcs.assertOk(wcs.get(1), 2, WcOpcode.FETCH_ADD, 8, qa);
        assertEquals(1, dr.fired());
        assertEquals(1, da.fired());
        assertRead(3 * MTU);
        assertEquals(0, res.getLong(0));
        Pair.until("both duplicates reach the responder", () -> qb.counters().duplicatesSeen == 2);
        assertEquals(3, dstB.getLong(3 * MTU), "the duplicate FETCH_ADD was replayed, not executed");
        // the replayed answers reach the requester as duplicates and change nothing
        assertEquals(0, cqA.size());
    }

    @Test
    void reorderingTriggersExactlyOneSequenceNak() {
        connect();
        // FIRST, MIDDLE (held back), LAST: the LAST overtakes the MIDDLE, which then arrives late
        FaultRule r = chaosA.addRule(FaultRule.reorder().outbound().opcode(Opcode.RC_RDMA_WRITE_MIDDLE).nth(1).once());
        write(1, 3 * MTU);
        Wcs.assertOk(one(cqA), 1, WcOpcode.RDMA_WRITE, 3 * MTU, qa);
        assertEquals(1, r.fired());
        assertLanded(3 * MTU);
        assertEquals(1, qa.counters().seqNaksReceived);
        assertEquals(1, qb.counters().seqNaksSent, "one NAK per gap, however many packets overtook");
    }

    @Test
    void corruptionIsCaughtByTheIcrcAndRecovered() {
        connect();
        FaultRule r = chaosA.addRule(FaultRule.corrupt().outbound().opcode(Opcode.RC_RDMA_WRITE_MIDDLE).once());
        write(1, 4 * MTU);
        Wcs.assertOk(one(cqA), 1, WcOpcode.RDMA_WRITE, 4 * MTU, qa);
        assertEquals(1, r.fired());
        assertLanded(4 * MTU);
        assertEquals(1, p.b.counters().drops(DropReason.ICRC), "the flipped bit was caught by the ICRC");
    }

    @Test
    void rnrThenAReceiveIsPostedAndTheDataArrives() {
        connect(0x100, 0x200, 7, 1);
        qa.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(srcA, 0, 300)).signaled());
        Pair.until("the RNR NAK arrives", () -> qa.counters().rnrNaksReceived >= 1);
        qb.postRecv(new ReceiveWorkRequest(9, Sge.of(dstB)));
        clock.advanceNanos(1_000_000); // > RNR timer code 1 (10 us)
        p.a.runTimers();
        Wcs.assertOk(one(cqA), 1, WcOpcode.SEND, 300, qa);
        Wcs.assertOk(one(cqB), 9, WcOpcode.RECV, 300, qb);
        assertLanded(300);
        assertTrue(qa.counters().rnrWaits >= 1);
        assertTrue(qb.counters().rnrNaksSent >= 1);
    }

    @Test
    void rnrExhaustionCompletesWithRnrRetryExcErrAndFlushes() {
        connect(0x100, 0x200, 2, 1);
        qa.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(srcA, 0, 10)).signaled());
        qa.postSend(new SendWorkRequest(2, WrOpcode.RDMA_WRITE, Sge.of(srcA, 0, 10)).remote(dstB.address(), dstB.rkey()));
        for (int i = 0; i < 3; i++) {
            int want = i + 1;
            Pair.until("RNR NAK " + want, () -> qa.counters().rnrNaksReceived >= want);
            clock.advanceNanos(1_000_000);
            p.a.runTimers();
        }
        List<WorkCompletion> wcs = Pair.await(cqA, 2, 10_000);
        assertEquals(WcStatus.RNR_RETRY_EXC_ERR, wcs.get(0).status());
        assertEquals(1, wcs.get(0).wrId());
        assertEquals(WcStatus.WR_FLUSH_ERR, wcs.get(1).status(), "the unsignaled WR is flushed too");
        assertEquals(QpState.ERR, qa.state());
    }

    @Test
    void vanishedPeerGivesRetryExcErrAndFlushesEverything() {
        connect();
        qa.postRecv(new ReceiveWorkRequest(50, Sge.of(backA)));
        chaosA.addRule(FaultRule.drop().outbound().always()); // the peer is gone: nothing reaches it
        write(1, 10);
        write(2, 10);
        qa.postSend(new SendWorkRequest(3, WrOpcode.RDMA_WRITE, Sge.of(srcA, 0, 10)).remote(dstB.address(), dstB.rkey()));
        for (int i = 0; i < 8 && qa.state() != QpState.ERR; i++) {
            int want = i + 1;
            Pair.until("retransmission " + want, () -> qa.counters().packetsOut >= 3L * want);
            expireTimers();
        }
        List<WorkCompletion> wcs = Pair.await(cqA, 4, 10_000);
        assertEquals(WcStatus.RETRY_EXC_ERR, wcs.get(0).status(), wcs.toString());
        assertEquals(1, wcs.get(0).wrId());
        for (WorkCompletion wc : wcs.subList(1, 4)) assertEquals(WcStatus.WR_FLUSH_ERR, wc.status(), wcs.toString());
        assertEquals(QpState.ERR, qa.state());
        assertEquals(7, qa.counters().timeouts - 1, "retry_cnt 7: seven retries, then the eighth timeout fails");
    }

    @Test
    void retransmissionAcrossThePsnWrap() {
        connect(0xFFFFFE, 0xFFFFFD, 7, 1);
        // A's packets carry PSNs 0xFFFFFE, 0xFFFFFF, 0x000000, 0x000001...: drop the one at the wrap
        FaultRule r = chaosA.addRule(FaultRule.drop().outbound().psn(0x000000).once());
        write(1, 6 * MTU);
        Wcs.assertOk(one(cqA), 1, WcOpcode.RDMA_WRITE, 6 * MTU, qa);
        assertEquals(1, r.fired());
        assertLanded(6 * MTU);
        assertEquals(1, qb.counters().seqNaksSent);
        assertEquals(0x000004, qa.query().sqPsn());
    }
}
