package io.jroce.endpoint;

import io.jroce.endpoint.fault.FaultInjector;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.*;

/**
 * A seeded soak under loss, reordering, duplication and corruption in both directions of both nodes:
 * SEND (with and without immediate), RDMA WRITE (with and without immediate), READ, CMP_SWAP and
 * FETCH_ADD of random sizes (0 to 256 KiB) over 8 QP pairs. Every payload is checked by SHA-256, every
 * WR completes exactly once, successfully, in posting order; receive completions come in send order;
 * each FETCH_ADD returns the count of the adds before it and the counter ends at the number of adds.
 *
 * <p>{@code -Djroce.seed=N} replays a run; {@code -Djroce.soak.messages=N} makes it longer (default 1600,
 * a couple of seconds in CI; 100000 is a good long run by hand).
 */
class SoakTest {
    private static final int QPS = 8;
    private static final int DEPTH = 4;
    private static final int MAX = 256 << 10;
    private static final int MTU = 1024;

    /** What the test expects of one posted WR. */
    private record Expect(long wrId, WrOpcode op, int slot, int len, byte[] sha, long fetchAddIndex) {
    }

    private static final class Lane {
        QueuePair qa;
        QueuePair qb;
        CompletionQueue cqA;
        CompletionQueue cqB;
        MemoryRegion srcA;      // DEPTH slots of MAX: source of SEND/WRITE
        MemoryRegion dstA;      // DEPTH slots of MAX: READ destination
        MemoryRegion resA;      // DEPTH slots of 8: atomic results
        MemoryRegion dstB;      // DEPTH slots of MAX: WRITE target
        MemoryRegion recvB;     // DEPTH slots of MAX: receive buffers
        MemoryRegion readB;     // MAX bytes of fixed content to READ
        MemoryRegion wordsB;    // [0] fetch-add counter, [8] cmp-swap word
        final ArrayDeque<Expect> sends = new ArrayDeque<>();
        final ArrayDeque<Expect> recvExpect = new ArrayDeque<>();
        final boolean[] slotBusy = new boolean[DEPTH];
        long nextWrId = 1;
        long expectWrId = 1;
        long recvPosted;
        long recvCompleted;
        long fetchAdds;
        long casValue;
        int posted;
        int done;
    }

    @Test
    void everyMessageArrivesOnceInOrderUnderChaos() throws Exception {
        soak("SoakTest", 0, "127.0.6.1", "127.0.6.2");
    }

    /**
     * The soak with {@code extensions} ({@link JroceExtensions}) on both sides: the same checks hold. Returns the
     * pair's per-QP counters summed over A's QPs (requester side) and B's (responder side).
     */
    static QpCounters[] soak(String name, int extensions, String addrA, String addrB) throws Exception {
        return soak(name, extensions, addrA, addrB, 1);
    }

    /** The soak between two devices of {@code eventLoops} event loops each ({@link DeviceConfig#eventLoops}). */
    static QpCounters[] soak(String name, int extensions, String addrA, String addrB, int eventLoops) throws Exception {
        long seed = Long.getLong("jroce.seed", new SplittableRandom().nextLong());
        int messages = Integer.getInteger("jroce.soak.messages", 1600);
        System.out.println(name + ": seed " + seed + ", " + messages + " messages (replay with -Djroce.seed=" + seed + ")");
        SplittableRandom rnd = new SplittableRandom(seed);
        FaultInjector chaosA = chaos(rnd.nextLong());
        FaultInjector chaosB = chaos(rnd.nextLong());
        try (Pair p = new Pair(new DeviceConfig(Pair.addr(addrA)).filter(chaosA).eventLoops(eventLoops),
                new DeviceConfig(Pair.addr(addrB)).filter(chaosB).eventLoops(eventLoops))) {
            Lane[] lanes = new Lane[QPS];
            byte[] readContent = new byte[MAX];
            rnd.nextBytes(readContent);
            CompletionQueue cqA = p.a.createCq(QPS * DEPTH * 2);
            CompletionQueue cqB = p.b.createCq(QPS * DEPTH * 2);
            for (int i = 0; i < QPS; i++) lanes[i] = lane(p, rnd, readContent, cqA, cqB, extensions);

            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.getLong("jroce.soak.seconds", 100));
            int perLane = messages / QPS;
            WorkCompletion[] wcs = new WorkCompletion[32];
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            java.util.Map<Integer, Lane> byQpA = new java.util.HashMap<>();
            java.util.Map<Integer, Lane> byQpB = new java.util.HashMap<>();
            for (Lane l : lanes) {
                byQpA.put(l.qa.qpNum(), l);
                byQpB.put(l.qb.qpNum(), l);
            }
            boolean allDone = false;
            while (!allDone) {
                assertTrue(System.nanoTime() < deadline, "soak did not finish in time (seed " + seed + "): "
                        + Arrays.stream(lanes).map(l -> "\n  " + l.qa.describe() + " done " + l.done + "\n  B: " + l.qb.describe()).toList());
                for (Lane l : lanes) {
                    while (l.recvPosted - l.recvCompleted < DEPTH) {
                        int slot = (int) (l.recvPosted % DEPTH);
                        l.qb.postRecv(new ReceiveWorkRequest(l.recvPosted, new Sge(l.recvB.address() + (long) slot * MAX, MAX, l.recvB.lkey())));
                        l.recvPosted++;
                    }
                    for (int slot = 0; slot < DEPTH && l.posted < perLane; slot++) {
                        if (!l.slotBusy[slot]) post(l, slot, rnd, sha);
                    }
                }
                // block briefly on the send side's CQ (no busy spinning: the event loops need the cores)
                int n = cqA.poll(wcs, wcs.length, 1, TimeUnit.MILLISECONDS);
                for (int i = 0; i < n; i++) checkSend(byQpA.get(wcs[i].qpNum()), wcs[i], readContent, sha, seed);
                n = cqB.poll(wcs, wcs.length);
                for (int i = 0; i < n; i++) checkRecv(byQpB.get(wcs[i].qpNum()), wcs[i], sha, seed);
                allDone = true;
                for (Lane l : lanes) {
                    if (l.done < perLane || !l.recvExpect.isEmpty()) allDone = false;
                }
            }
            long adds = 0;
            for (Lane l : lanes) {
                assertEquals(l.fetchAdds, l.wordsB.getLong(0), "fetch-add counter equals the number of adds (seed " + seed + ")");
                assertEquals(l.casValue, l.wordsB.getLong(8), "compare-and-swap word (seed " + seed + ")");
                assertEquals(QpState.RTS, l.qa.state());
                adds += l.fetchAdds;
            }
            System.out.println("SoakTest: done; fetch-adds " + adds + "; chaos A " + chaosA.counters() + "; chaos B " + chaosB.counters());
            System.out.println("SoakTest: A " + p.a.counters() + "\nSoakTest: B " + p.b.counters());
            long faults = chaosA.dropped(io.jroce.endpoint.fault.Direction.OUT) + chaosB.dropped(io.jroce.endpoint.fault.Direction.OUT);
            assertTrue(faults > 0, "the chaos really dropped datagrams");
            QpCounters sumA = new QpCounters();
            QpCounters sumB = new QpCounters();
            for (Lane l : lanes) {
                QpCounters ca = l.qa.counters();
                QpCounters cb = l.qb.counters();
                sumA.retries += ca.retries;
                sumA.sacksReceived += ca.sacksReceived;
                sumA.selectiveRetransmits += ca.selectiveRetransmits;
                sumA.seqNaksReceived += ca.seqNaksReceived;
                sumB.sacksSent += cb.sacksSent;
                sumB.outOfOrder += cb.outOfOrder;
                sumB.writesPlacedOutOfOrder += cb.writesPlacedOutOfOrder;
                sumB.seqNaksSent += cb.seqNaksSent;
            }
            System.out.println(name + ": requester " + sumA + "\n" + name + ": responder " + sumB);
            assertTrue(p.a.counters().retransmits + p.b.counters().retransmits + sumA.selectiveRetransmits > 0,
                    "and recovery really retransmitted");
            return new QpCounters[] {sumA, sumB};
        }
    }

    private static FaultInjector chaos(long seed) {
        // 5% drop, 5% reorder, 1% duplication, 0.1% corruption, on both the send and the receive path
        return FaultInjector.builder().seed(seed).drop(0.05).reorder(0.05).duplicate(0.01).corrupt(0.001).build();
    }

    private static Lane lane(Pair p, SplittableRandom rnd, byte[] readContent, CompletionQueue cqA, CompletionQueue cqB, int extensions) {
        Lane l = new Lane();
        int remote = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
        l.srcA = p.pdA.allocateAndRegister(DEPTH * MAX, Access.LOCAL_WRITE);
        l.dstA = p.pdA.allocateAndRegister(DEPTH * MAX, Access.LOCAL_WRITE);
        l.resA = p.pdA.allocateAndRegister(DEPTH * 8, Access.LOCAL_WRITE);
        l.dstB = p.pdB.allocateAndRegister(DEPTH * MAX, remote);
        l.recvB = p.pdB.allocateAndRegister(DEPTH * MAX, Access.LOCAL_WRITE);
        l.readB = p.pdB.allocateAndRegister(MAX, remote);
        l.wordsB = p.pdB.allocateAndRegister(16, remote);
        l.readB.buffer().put(readContent);
        l.cqA = cqA;
        l.cqB = cqB;
        l.qa = p.pdA.createQp(new QpInitAttr(l.cqA).maxSendWr(DEPTH).maxRecvWr(4));
        l.qb = p.pdB.createQp(new QpInitAttr(l.cqB).maxSendWr(4).maxRecvWr(DEPTH));
        int psnA = rnd.nextInt(1 << 24);
        int psnB = rnd.nextInt(1 << 24);
        // timeout 14 = 67 ms (as rc_pingpong and perftest); retry_cnt 7 (the spec's seven, not infinite); rnr_retry 7 = forever
        RcConnect.connectPair(l.qa, psnA, l.qb, psnB, RcConnect.Params.defaults().mtu(Mtu.ofBytes(MTU)).rdAtomic(DEPTH)
                .minRnrTimer(1).timeout(14).retryCnt(7).rnrRetry(7).extensions(extensions)
                .accessFlags(Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
        return l;
    }


    private static int size(SplittableRandom rnd) {
        int r = rnd.nextInt(100);
        if (r < 50) return rnd.nextInt(4097);
        if (r < 85) return rnd.nextInt(64 << 10) + 1;
        return rnd.nextInt(MAX + 1);
    }

    private static byte[] digest(MessageDigest sha, ByteBuffer bytes) {
        sha.reset();
        sha.update(bytes);
        return sha.digest();
    }

    private static void post(Lane l, int slot, SplittableRandom rnd, MessageDigest sha) {
        WrOpcode[] ops = WrOpcode.values();
        WrOpcode op = ops[rnd.nextInt(ops.length)];
        if (op == WrOpcode.SEND_WITH_INV) op = WrOpcode.SEND; // invalidation is covered elsewhere
        long wrId = l.nextWrId++;
        long slotOff = (long) slot * MAX;
        SendWorkRequest wr = new SendWorkRequest().wrId(wrId).opcode(op).signaled();
        int len = op.isAtomic() ? 8 : size(rnd);
        byte[] h = null;
        long faIndex = -1;
        if (op.isSend() || op.isWrite()) {
            byte[] payload = new byte[len];
            rnd.nextBytes(payload);
            l.srcA.buffer().position((int) slotOff).put(payload);
            h = digest(sha, ByteBuffer.wrap(payload));
            wr.sgl(new Sge(l.srcA.address() + slotOff, len, l.srcA.lkey())).immData((int) wrId);
            if (op.isWrite()) wr.remote(l.dstB.address() + slotOff, l.dstB.rkey());
            if (op.isSend() || op == WrOpcode.RDMA_WRITE_WITH_IMM) l.recvExpect.add(new Expect(wrId, op, slot, len, h, -1));
        } else if (op == WrOpcode.RDMA_READ) {
            int off = rnd.nextInt(MAX - len + 1);
            wr.sgl(new Sge(l.dstA.address() + slotOff, len, l.dstA.lkey())).remote(l.readB.address() + off, l.readB.rkey());
            faIndex = off; // where the READ started, to check against the known content
        } else if (op == WrOpcode.ATOMIC_FETCH_AND_ADD) {
            wr.sgl(new Sge(l.resA.address() + slot * 8L, 8, l.resA.lkey())).remote(l.wordsB.address(), l.wordsB.rkey()).compareAdd(1);
            faIndex = l.fetchAdds++;
        } else {
            long next = rnd.nextLong();
            wr.sgl(new Sge(l.resA.address() + slot * 8L, 8, l.resA.lkey())).remote(l.wordsB.address() + 8, l.wordsB.rkey())
                    .compareAdd(l.casValue).swap(next);
            faIndex = l.casValue;
            l.casValue = next;
        }
        l.slotBusy[slot] = true;
        l.sends.add(new Expect(wrId, op, slot, len, h, faIndex));
        l.qa.postSend(wr);
        l.posted++;
    }

    private static void checkSend(Lane l, WorkCompletion wc, byte[] readContent, MessageDigest sha, long seed) {
        String ctx = " (seed " + seed + ", " + wc + ", " + l.qa.describe() + " A " + l.qa.counters() + " B " + l.qb.counters() + " " + l.sends.peek()
                + " devA " + l.qa.device().counters() + " devB " + l.qb.device().counters() + ")";
        assertEquals(WcStatus.SUCCESS, wc.status(), "every WR succeeds" + ctx);
        Expect e = l.sends.poll();
        assertNotNull(e, "a completion for a WR that was posted" + ctx);
        assertEquals(l.expectWrId++, wc.wrId(), "completions in posting order" + ctx);
        assertEquals(e.wrId(), wc.wrId(), ctx);
        assertEquals(e.op().completionOpcode(), wc.opcode(), ctx);
        long slotOff = (long) e.slot() * MAX;
        switch (e.op()) {
            case RDMA_WRITE, RDMA_WRITE_WITH_IMM -> {
                if (e.op() == WrOpcode.RDMA_WRITE) {
                    ByteBuffer landed = l.dstB.buffer().position((int) slotOff).limit((int) slotOff + e.len());
                    assertArrayEquals(e.sha(), digest(sha, landed), "WRITE payload at the responder" + ctx);
                }
            }
            case RDMA_READ -> {
                assertEquals(e.len(), wc.byteLen(), ctx);
                ByteBuffer got = l.dstA.buffer().position((int) slotOff).limit((int) slotOff + e.len());
                ByteBuffer want = ByteBuffer.wrap(readContent, (int) e.fetchAddIndex(), e.len());
                assertEquals(0, got.compareTo(want), "READ payload" + ctx);
            }
            case ATOMIC_FETCH_AND_ADD -> assertEquals(e.fetchAddIndex(), l.resA.getLong(e.slot() * 8), "fetch-add original value" + ctx);
            case ATOMIC_CMP_AND_SWP -> assertEquals(e.fetchAddIndex(), l.resA.getLong(e.slot() * 8), "compare-and-swap original value" + ctx);
            default -> { }
        }
        l.slotBusy[e.slot()] = false;
        l.done++;
    }

    private static void checkRecv(Lane l, WorkCompletion wc, MessageDigest sha, long seed) {
        String ctx = " (seed " + seed + ", " + wc + ", " + l.qb.describe() + ")";
        assertEquals(WcStatus.SUCCESS, wc.status(), "every receive succeeds" + ctx);
        Expect e = l.recvExpect.poll();
        assertNotNull(e, "a receive completion for a message that was sent" + ctx);
        assertEquals(l.recvCompleted, wc.wrId(), "receives complete in posting order" + ctx);
        boolean withImm = e.op() == WrOpcode.SEND_WITH_IMM || e.op() == WrOpcode.RDMA_WRITE_WITH_IMM;
        assertEquals(withImm, wc.hasImm(), ctx);
        if (withImm) assertEquals((int) e.wrId(), wc.immData(), "receive completions in send order" + ctx);
        assertEquals(e.len(), wc.byteLen(), ctx);
        if (e.op() == WrOpcode.RDMA_WRITE_WITH_IMM) {
            assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, wc.opcode(), ctx);
        } else {
            assertEquals(WcOpcode.RECV, wc.opcode(), ctx);
            long slotOff = (wc.wrId() % DEPTH) * MAX;
            ByteBuffer got = l.recvB.buffer().position((int) slotOff).limit((int) slotOff + e.len());
            assertArrayEquals(e.sha(), digest(sha, got), "SEND payload at the receiver" + ctx);
        }
        l.recvCompleted++;
    }
}
