package io.jroce.endpoint;

import io.jroce.endpoint.fault.FaultInjector;
import io.jroce.endpoint.fault.FaultRule;
import io.jroce.wire.Opcode;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Selective repeat ({@link JroceExtensions#SELECTIVE_REPEAT}) between two jroce QPs: the seeded soak over every
 * operation under loss, reordering and duplication (integrity, in-order completions, exactly-once atomics), that
 * only missing packets are resent, and that the responder's out-of-order store is bounded.
 */
class SelectiveRepeatTest {
    private static final int SR = JroceExtensions.SELECTIVE_REPEAT;

    @Test
    void soakUnderChaosWithSelectiveRepeat() throws Exception {
        QpCounters[] c = SoakTest.soak("SelectiveRepeatSoak", SR, "127.77.41.1", "127.77.41.2");
        assertTrue(c[1].sacksSent > 0, "the responder held requests past gaps and SACKed them: " + c[1]);
        assertTrue(c[1].writesPlacedOutOfOrder > 0, "WRITE MIDDLEs past gaps went straight to memory: " + c[1]);
        assertTrue(c[0].sacksReceived > 0 && c[0].selectiveRetransmits > 0, "the requester resent selectively: " + c[0]);
        assertEquals(0, c[1].seqNaksSent, "no Go-Back-N sequence NAK between agreeing peers");
        assertEquals(0, c[0].seqNaksReceived, "no Go-Back-N sequence NAK between agreeing peers");
    }

    /**
     * One WRITE of 64 packets whose 6th packet is lost once: exactly that packet is resent, nothing else, and the
     * MIDDLE packets behind the gap go straight to memory (the bytes are compared at the end).
     */
    @Test
    void onlyTheMissingPacketIsResent() throws Exception {
        int first = 0x100;
        FaultInjector dropOne = dropMiddleOnce(first + 5);
        try (Pair p = lossyPair(dropOne, "127.77.41.3", "127.77.41.4")) {
            Pair.Conn c = connect(p, first, 0x200, SR);
            writeWhole(p, c, 64 * 256, 3, 10_000);
            QpCounters a = c.qpA.counters();
            QpCounters b = c.qpB.counters();
            assertEquals(1, dropOne.counters().get("out.dropped"), "one packet was dropped");
            assertEquals(1, a.selectiveRetransmits, "only the lost packet was resent: " + a);
            // a tail-loss probe (on by itself between selective-repeat peers) may resend the oldest unacknowledged
            // packet once more if the machine stalls; nothing else is ever resent
            assertEquals(64 + 1 + a.probes, a.packetsOut, "64 packets and one resend: " + a);
            assertEquals(58, b.outOfOrder, "the 58 packets after the gap were held: " + b);
            assertEquals(57, b.writesPlacedOutOfOrder, "the 57 MIDDLEs after the gap were placed on arrival, the LAST held whole: " + b);
            // one SACK per run per receive burst, each naming the whole run held: far fewer than one per packet
            assertTrue(b.sacksSent >= 1 && b.sacksSent <= 29, "SACKs per receive burst, not per packet: " + b);
            assertTrue(b.duplicatesSeen <= a.probes, "the responder saw a packet twice only for a probe: " + b);
            assertEquals(0, a.retries + a.timeouts, "no timeout, no Go-Back-N: " + a);
            // the LAST was held as a copy while the gap lasted; once it closed, the store gave its bytes back
            assertEquals(0, p.b.transport().reorderRetained(), "the reorder store keeps nothing after the gap closed");
        }
    }

    /**
     * Two WRITEs of 16 packets posted together, the 6th packet of the first lost once: behind the gap, the MIDDLEs of
     * the first message and those of the second (whose FIRST is held, its RETH checked) go straight to memory; only
     * the two LASTs and the second FIRST are held as copies. Both messages' bytes are compared at the end.
     */
    @Test
    void theMiddlesOfTheNextMessageArePlacedOnArrivalToo() throws Exception {
        int first = 0x500;
        FaultInjector dropOne = dropMiddleOnce(first + 5);
        try (Pair p = lossyPair(dropOne, "127.77.41.5", "127.77.41.6")) {
            Pair.Conn c = connect(p, first, 0x600, SR);
            int n = 16 * 256;
            MemoryRegion dst = p.pdB.allocateAndRegister(2 * n, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            byte[] data = postTwoWrites(p, c, n, 7, dst.address(), dst.rkey(), dst.address() + n, dst.rkey());
            for (WorkCompletion wc : Pair.await(c.cqA, 2, 10_000)) assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            byte[] got = new byte[2 * n];
            dst.buffer().get(got);
            assertArrayEquals(data, got);
            QpCounters a = c.qpA.counters();
            QpCounters b = c.qpB.counters();
            assertEquals(1, dropOne.counters().get("out.dropped"), "one packet was dropped");
            assertEquals(1, a.selectiveRetransmits, "only the lost packet was resent: " + a);
            assertEquals(0, a.retries + a.timeouts, "no timeout, no Go-Back-N: " + a);
            assertEquals(26, b.outOfOrder, "the 10 packets after the gap and the 16 of the next message were held: " + b);
            assertEquals(9 + 14, b.writesPlacedOutOfOrder, "9 MIDDLEs of the first message and 14 of the second were placed on arrival: " + b);
            assertEquals(0, p.b.transport().reorderRetained(), "the reorder store keeps nothing after the gap closed");
        }
    }

    /**
     * As above, but the second WRITE names a region without remote write access: its MIDDLEs are not placed ahead
     * (the held FIRST's RETH fails the check its execution makes), not one of its bytes lands, and it completes with
     * the remote access error its FIRST earns in order.
     */
    @Test
    void nothingIsPlacedAheadForAWriteItsResponderWillRefuse() throws Exception {
        int first = 0x700;
        FaultInjector dropOne = dropMiddleOnce(first + 5);
        try (Pair p = lossyPair(dropOne, "127.77.41.9", "127.77.41.10")) {
            Pair.Conn c = connect(p, first, 0x800, SR);
            int n = 16 * 256;
            MemoryRegion dst = p.pdB.allocateAndRegister(n, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            MemoryRegion readOnly = p.pdB.allocateAndRegister(n, Access.LOCAL_WRITE | Access.REMOTE_READ);
            byte[] data = postTwoWrites(p, c, n, 9, dst.address(), dst.rkey(), readOnly.address(), readOnly.rkey());
            List<WorkCompletion> wcs = Pair.await(c.cqA, 2, 10_000);
            assertEquals(WcStatus.SUCCESS, wcs.get(0).status(), wcs.get(0).toString());
            assertEquals(WcStatus.REM_ACCESS_ERR, wcs.get(1).status(), wcs.get(1).toString());
            byte[] got = new byte[n];
            dst.buffer().get(got);
            assertArrayEquals(java.util.Arrays.copyOf(data, n), got);
            byte[] untouched = new byte[n];
            readOnly.buffer().get(untouched);
            assertArrayEquals(new byte[n], untouched, "no byte of the refused WRITE landed");
            QpCounters b = c.qpB.counters();
            assertEquals(9, b.writesPlacedOutOfOrder, "only the first message's MIDDLEs were placed on arrival: " + b);
        }
    }

    /**
     * One WRITE of 256 packets whose 6th packet is lost twice, first sent and first resent: the resend is found lost
     * as soon as a packet sent after it is SACKed and goes a third time, with no timeout. (Should the machine stall
     * for the 1 ms tail-loss probe first, the probe is what resends it; the bytes and the count of resends hold either way.)
     */
    @Test
    void aLostResendIsSentAgainOnceSomethingSentAfterItArrives() throws Exception {
        int first = 0x300;
        FaultInjector dropTwice = FaultInjector.builder().seed(1)
                .rule(FaultRule.drop().outbound().opcode(Opcode.RC_RDMA_WRITE_MIDDLE).psn(first + 5).times(2)).build();
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.41.7")).filter(dropTwice).tailProbeMicros(0),
                new DeviceConfig(Pair.addr("127.77.41.8")).tailProbeMicros(0))) {
            Pair.Conn c = connect(p, first, 0x400, SR);
            writeWhole(p, c, 256 * 256, 5, 10_000);
            QpCounters a = c.qpA.counters();
            System.out.println("aLostResend: " + a);
            assertEquals(2, dropTwice.counters().get("out.dropped"), "the packet and its first resend were dropped");
            assertEquals(0, a.retries + a.timeouts, "no timeout: " + a);
            if (a.probes == 0) {
                assertEquals(1, a.lostRetransmits, "the resend was found lost by order: " + a);
                assertEquals(2, a.selectiveRetransmits, "resent twice, nothing else: " + a);
            }
        }
    }

    /**
     * One READ of 64 response packets whose 6th, 7th and 40th responses are lost once: the requester places every
     * response that lands past a gap, asks again for the two gaps alone, and the responder, still streaming, sends
     * exactly those three packets again: 67 responses in all instead of a tail per loss.
     */
    @Test
    void onlyTheMissingReadResponsesAreAskedForAgain() throws Exception {
        int firstB = 0x300;
        FaultInjector dropThree = FaultInjector.builder().seed(1)
                .rule(FaultRule.drop().outbound().opcode(Opcode.RC_RDMA_READ_RESPONSE_MIDDLE).psn(firstB + 5))
                .rule(FaultRule.drop().outbound().opcode(Opcode.RC_RDMA_READ_RESPONSE_MIDDLE).psn(firstB + 6))
                .rule(FaultRule.drop().outbound().opcode(Opcode.RC_RDMA_READ_RESPONSE_MIDDLE).psn(firstB + 39)).build();
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.41.7")).tailProbeMicros(0),
                new DeviceConfig(Pair.addr("127.77.41.8")).filter(dropThree).tailProbeMicros(0))) {
            Pair.Conn c = connect(p, firstB, 0x400, SR); // A's send PSNs start at 0x300: the READ's responses carry them
            int n = 64 * 256;
            MemoryRegion local = p.pdA.allocateAndRegister(n, Access.LOCAL_WRITE);
            MemoryRegion remote = p.pdB.allocateAndRegister(n, Access.LOCAL_WRITE | Access.REMOTE_READ);
            byte[] data = new byte[n];
            new Random(5).nextBytes(data);
            remote.buffer().put(data);
            c.qpA.postSend(new SendWorkRequest(1, WrOpcode.RDMA_READ, Sge.of(local)).remote(remote.address(), remote.rkey()).signaled());
            WorkCompletion wc = Pair.awaitOne(c.cqA);
            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            byte[] got = new byte[n];
            local.buffer().get(got);
            assertArrayEquals(data, got);
            QpCounters a = c.qpA.counters();
            QpCounters b = c.qpB.counters();
            assertEquals(3, dropThree.counters().get("out.dropped"), "three responses were dropped");
            assertEquals(64 - 3, a.readResponsesPlacedOutOfOrder + (5), "every response past a gap was placed where it landed: " + a);
            assertEquals(2, a.selectiveRetransmits, "one READ asked again per gap: " + a);
            // a tail-loss probe (on by itself between selective-repeat peers) asks again for the gap open at the time if
            // the machine stalls for a millisecond: at most two more responses each here; nothing else is ever resent
            assertTrue(b.packetsOut >= 64 + 3 && b.packetsOut <= 64 + 3 + 2 * a.probes,
                    "the responder sent the 64 responses and the three lost ones again: " + b + "\nrequester: " + a);
            assertEquals(2 + a.probes, b.duplicatesSeen, "the responder saw the READ again for each gap and each probe only: " + b);
            assertEquals(0, a.retries + a.timeouts, "no timeout, no Go-Back-N: " + a);
        }
    }

    /**
     * A requester that runs further past a hole than the responder's store ({@value JroceExtensions#OOO_WINDOW}
     * PSNs) reaches: ours never does under selective repeat, so here it is a Go-Back-N requester with a 2048-PSN
     * window facing a selective-repeat responder. With the first packet lost, what lies beyond the store is dropped
     * and counted, and the message still arrives intact (the requester reads the SACK as a sequence NAK).
     */
    @Test
    void outOfOrderStoreIsBounded() throws Exception {
        int first = 0x10;
        FaultInjector dropFirst = FaultInjector.builder().seed(1)
                .rule(FaultRule.drop().outbound().opcode(Opcode.RC_RDMA_WRITE_FIRST).psn(first)).build();
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.41.5")).filter(dropFirst).maxUnackedPsns(2048).tailProbeMicros(0),
                new DeviceConfig(Pair.addr("127.77.41.6")))) {
            Pair.Conn c = connect(p, first, 0x20, 0, SR);
            writeWhole(p, c, 2000 * 256, 4, 30_000);
            QpCounters b = c.qpB.counters();
            assertTrue(b.oooDropped > 0, "packets beyond the store were dropped: " + b);
            assertTrue(b.outOfOrder <= JroceExtensions.OOO_WINDOW * 4L, "held no more than the store each time round: " + b);
        }
    }

    /**
     * One signaled RDMA WRITE of {@code n} seeded random bytes from A to B; asserts that it completes within
     * {@code millis} and that B's region then holds exactly those bytes.
     */
    /**
     * An RNR NAK between selective-repeat peers: the responder has no receive for the first of four SENDs of 16
     * packets (posted at once), NAKs it RNR and holds what comes after it (SACKed). Once receives are posted, only what
     * it does not hold goes again: what it held is not resent. (Resending from the RNR-NAKed PSN whole, as Go-Back-N
     * does, sent every held packet again on every RNR NAK: up to the store's 1024 per NAK, a burst that a small socket
     * buffer drops.) The responder's RNR timer is 5.12 ms, so that its SACKs reach the requester before the back-off
     * ends; a packet not yet SACKed then (a machine that stalls that long) is rightly resent, so the bound is half of
     * what was held, where resending from the NAKed PSN whole duplicates all of it at least once.
     */
    @Test
    void afterAnRnrNakOnlyWhatTheResponderDoesNotHoldIsResent() throws Exception {
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.41.21")).tailProbeMicros(0),
                new DeviceConfig(Pair.addr("127.77.41.22")).tailProbeMicros(0))) {
            Pair.Conn c = connect(p, 0x500, 0x600, SR, SR, 18);
            int len = 16 * 256; // 16 packets at MTU 256
            MemoryRegion src = p.pdA.allocateAndRegister(4 * len, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(4 * len, Access.LOCAL_WRITE);
            byte[] data = new byte[4 * len];
            new Random(7).nextBytes(data);
            src.buffer().put(data);
            for (int i = 0; i < 4; i++) c.qpA.postSend(new SendWorkRequest(i, WrOpcode.SEND, Sge.of(src, i * len, len)).signaled());
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (c.qpB.counters().rnrNaksSent == 0) { // the counters are read on the loop, after the NAK left
                assertTrue(System.nanoTime() < deadline, "no RNR NAK: " + c.qpB.counters());
                java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
            }
            for (int i = 0; i < 4; i++) c.qpB.postRecv(new ReceiveWorkRequest(i, Sge.of(dst, i * len, len)));
            for (WorkCompletion wc : Pair.await(c.cqA, 4, 10_000)) assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            for (WorkCompletion wc : Pair.await(c.cqB, 4, 10_000)) assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            byte[] got = new byte[4 * len];
            dst.buffer().get(got);
            assertArrayEquals(data, got);
            QpCounters a = c.qpA.counters();
            QpCounters b = c.qpB.counters();
            System.out.println("afterAnRnrNak: requester " + a + "\nresponder " + b);
            assertTrue(b.outOfOrder > 0, "the responder held packets past the RNR-NAKed one: " + b);
            assertTrue(b.duplicatesSeen < b.outOfOrder / 2, "what it held was not sent again: " + b);
        }
    }

    /** A's device drops the WRITE MIDDLE with {@code psn} once, on its way out. */
    private static FaultInjector dropMiddleOnce(int psn) {
        return FaultInjector.builder().seed(1).rule(FaultRule.drop().outbound().opcode(Opcode.RC_RDMA_WRITE_MIDDLE).psn(psn)).build();
    }

    /** Two devices without tail-loss probes (so only what the tests cause is resent), A's filtered by {@code onA}. */
    private static Pair lossyPair(FaultInjector onA, String a, String b) throws java.io.IOException {
        return new Pair(new DeviceConfig(Pair.addr(a)).filter(onA).tailProbeMicros(0), new DeviceConfig(Pair.addr(b)).tailProbeMicros(0));
    }

    /**
     * Posts two WRITEs of {@code n} seeded random bytes each from a new region of A's, to {@code va1} and {@code va2},
     * as one chain: one doorbell, so the requester sends both messages before the SACK of a gap can come back.
     * Returns the bytes, both messages' back to back.
     */
    private static byte[] postTwoWrites(Pair p, Pair.Conn c, int n, long seed, long va1, int rkey1, long va2, int rkey2) {
        MemoryRegion src = p.pdA.allocateAndRegister(2 * n, Access.LOCAL_WRITE);
        byte[] data = new byte[2 * n];
        new Random(seed).nextBytes(data);
        src.buffer().put(data);
        SendWorkRequest second = new SendWorkRequest(2, WrOpcode.RDMA_WRITE, new Sge(src.address() + n, n, src.lkey()))
                .remote(va2, rkey2).signaled();
        c.qpA.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, new Sge(src.address(), n, src.lkey()))
                .remote(va1, rkey1).signaled().next(second));
        return data;
    }

    private static void writeWhole(Pair p, Pair.Conn c, int n, long seed, long millis) throws Exception {
        MemoryRegion src = p.pdA.allocateAndRegister(n, Access.LOCAL_WRITE);
        MemoryRegion dst = p.pdB.allocateAndRegister(n, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        byte[] data = new byte[n];
        new Random(seed).nextBytes(data);
        src.buffer().put(data);
        c.qpA.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
        WorkCompletion wc = Pair.await(c.cqA, 1, millis).get(0);
        assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
        byte[] got = new byte[n];
        dst.buffer().get(got);
        assertArrayEquals(data, got);
    }

    private static Pair.Conn connect(Pair p, int psnA, int psnB, int ext) {
        return connect(p, psnA, psnB, ext, ext);
    }

    /** A's QP with extensions {@code extA}, B's with {@code extB} (the same on both sides for a real pair of peers). */
    private static Pair.Conn connect(Pair p, int psnA, int psnB, int extA, int extB) {
        return connect(p, psnA, psnB, extA, extB, 1);
    }

    /** With the responders' RNR NAK timer {@code minRnrTimer} (IBA 9.7.5.2.8's encoding: 1 is 0.01 ms, 18 is 5.12 ms). */
    private static Pair.Conn connect(Pair p, int psnA, int psnB, int extA, int extB, int minRnrTimer) {
        CompletionQueue cqA = p.a.createCq(16);
        CompletionQueue cqB = p.b.createCq(16);
        QueuePair qa = p.pdA.createQp(new QpInitAttr(cqA).maxSendWr(8).maxRecvWr(8));
        QueuePair qb = p.pdB.createQp(new QpInitAttr(cqB).maxSendWr(8).maxRecvWr(8));
        RcConnect.Params params = RcConnect.Params.defaults().mtu(Mtu.MTU_256).rdAtomic(4).minRnrTimer(minRnrTimer)
                // a local ACK timeout of 537 ms, not rxe's 67: a machine that stalls a thread for 67 ms (seen with the
                // rxe lab's guests running) would time out and resend what these tests count
                .timeout(17).retryCnt(7);
        RcConnect.connect(qa, RcConnect.Peer.of(qb, psnB), psnA, params.extensions(extA));
        RcConnect.connect(qb, RcConnect.Peer.of(qa, psnA), psnB, params.extensions(extB));
        return new Pair.Conn(qa, cqA, qb, cqB);
    }
}
