package io.jroce.endpoint;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Random;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Post-time checks (ibv_post_send / ibv_post_recv return an error, nothing goes on the wire): bad lkey,
 * SGE outside its region, too many SGEs, inline data too big, a full queue, a READ or atomic into a region
 * without LOCAL_WRITE. A refused request leaves the QP in RTS, produces no completion, and the next good
 * request works. Posted with faults in the completion (as the verbs library posts), the same bad SGEs are taken
 * and fail in their completions instead.
 */
class PostValidationTest {
    private static final int MAX_SGE = 4;
    private static final int MAX_INLINE = 64;
    private static final int DEPTH = 8;

    private static final class Fixture implements AutoCloseable {
        final Pair p;
        final CompletionQueue cqA;
        final CompletionQueue cqB;
        final QueuePair qa;
        final QueuePair qb;
        final MemoryRegion local;
        final MemoryRegion readOnly;
        final MemoryRegion remote;
        final MemoryRegion foreign;

        Fixture() throws Exception {
            p = new Pair();
            cqA = p.a.createCq(64);
            cqB = p.b.createCq(64);
            qa = p.pdA.createQp(new QpInitAttr(cqA).maxSendWr(DEPTH).maxRecvWr(DEPTH).maxSendSge(MAX_SGE).maxRecvSge(MAX_SGE)
                    .maxInlineData(MAX_INLINE));
            qb = p.pdB.createQp(new QpInitAttr(cqB).maxSendWr(DEPTH).maxRecvWr(DEPTH).maxSendSge(MAX_SGE).maxRecvSge(MAX_SGE));
            p.connect(qa, qb, Mtu.MTU_1024, 0x10, 0x20, 2, 2);
            local = p.pdA.allocateAndRegister(4096, Access.LOCAL_WRITE);
            readOnly = p.pdA.allocateAndRegister(4096, 0);
            remote = p.pdB.allocateAndRegister(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
            foreign = p.a.allocPd().allocateAndRegister(4096, Access.LOCAL_WRITE);
        }

        SendWorkRequest write(long id, Sge... sgl) {
            return new SendWorkRequest(id, WrOpcode.RDMA_WRITE, sgl).remote(remote.address(), remote.rkey()).signaled();
        }

        /** The post is refused with a message containing {@code words}, nothing is sent, nothing completes. */
        void assertSendRefused(SendWorkRequest wr, String... words) {
            long out = p.a.counters().packetsOut;
            VerbsException e = assertThrows(VerbsException.class, () -> qa.postSend(wr), wr.toString());
            for (String w : words) assertTrue(e.getMessage().contains(w), "message should mention '" + w + "': " + e.getMessage());
            assertSame(wr, e.badRequest());
            assertFalse(e.isQueueFull(), "an invalid request is not a full queue: " + e.getMessage());
            Pair.barrier(p.a);
            assertEquals(out, p.a.counters().packetsOut, "a refused post sends nothing: " + wr);
            assertEquals(0, cqA.size(), "a refused post completes nothing");
            assertEquals(QpState.RTS, qa.state());
        }

        void assertRecvRefused(ReceiveWorkRequest wr, String... words) {
            VerbsException e = assertThrows(VerbsException.class, () -> qb.postRecv(wr), wr.toString());
            for (String w : words) assertTrue(e.getMessage().contains(w), "message should mention '" + w + "': " + e.getMessage());
            assertSame(wr, e.badRequest());
            assertEquals(QpState.RTS, qb.state());
        }

        /** The QP still works: a good WRITE completes and lands. */
        void assertStillWorks(long id) {
            qa.postSend(write(id, Sge.of(local, 0, 100)));
            Wcs.assertOk(Pair.awaitOne(cqA), id, WcOpcode.RDMA_WRITE, 100, qa);
            Pair.assertEmpty(cqA);
        }

        @Override
        public void close() {
            p.close();
        }
    }

    @Test
    void badLkeyIsRefused() throws Exception {
        try (Fixture f = new Fixture()) {
            int bad = f.local.lkey() ^ 0x1234567;
            while (f.p.a.keys().byLkey(bad) != null) bad++;
            f.assertSendRefused(f.write(1, new Sge(f.local.address(), 10, bad)), "lkey");
            f.assertSendRefused(f.write(2, Sge.of(f.local, 0, 10), new Sge(f.local.address(), 10, bad)), "SGE 1", "lkey");
            int badB = bad;
            while (f.p.b.keys().byLkey(badB) != null) badB++;
            f.assertRecvRefused(new ReceiveWorkRequest(3, new Sge(f.local.address(), 10, badB)), "lkey");
            // an lkey of the other device is just as unknown here
            MemoryRegion other = f.p.pdB.allocateAndRegister(64, Access.LOCAL_WRITE);
            if (f.p.a.keys().byLkey(other.lkey()) == null) f.assertSendRefused(f.write(4, Sge.of(other)), "lkey");
            // a deregistered region's lkey is dead
            MemoryRegion gone = f.p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            gone.deregister();
            f.assertSendRefused(f.write(5, Sge.of(gone)), "lkey");
            f.assertStillWorks(6);
        }
    }

    @Test
    void sgeOutsideItsRegionIsRefused() throws Exception {
        try (Fixture f = new Fixture()) {
            MemoryRegion l = f.local;
            f.assertSendRefused(f.write(1, new Sge(l.address() + 4000, 97, l.lkey())), "outside");
            f.assertSendRefused(f.write(2, new Sge(l.address() - 1, 10, l.lkey())), "outside");
            f.assertSendRefused(f.write(3, new Sge(l.address() + 4096, 1, l.lkey())), "outside");
            f.assertSendRefused(f.write(4, new Sge(Long.MAX_VALUE - 4, 100, l.lkey())), "outside");
            MemoryRegion lb = f.p.pdB.allocateAndRegister(4096, Access.LOCAL_WRITE);
            f.assertRecvRefused(new ReceiveWorkRequest(5, new Sge(lb.address() + 4095, 2, lb.lkey())), "outside");
            f.assertRecvRefused(new ReceiveWorkRequest(5, Sge.of(lb), new Sge(lb.address() - 8, 8, lb.lkey())), "SGE 1", "outside");
            // the exact region, and an empty SGE at its very end, are fine
            f.qa.postSend(f.write(6, new Sge(l.address(), 4096, l.lkey())));
            Wcs.assertOk(Pair.awaitOne(f.cqA), 6, WcOpcode.RDMA_WRITE, 4096, f.qa);
            f.qa.postSend(f.write(7, new Sge(l.address() + 4096, 0, l.lkey())));
            Wcs.assertOk(Pair.awaitOne(f.cqA), 7, WcOpcode.RDMA_WRITE, 0, f.qa);
            f.assertStillWorks(8);
        }
    }

    @Test
    void tooManySgesAreRefused() throws Exception {
        try (Fixture f = new Fixture()) {
            Sge[] five = new Sge[MAX_SGE + 1];
            for (int i = 0; i < five.length; i++) five[i] = Sge.of(f.local, i * 10L, 10);
            f.assertSendRefused(f.write(1, five), "max_send_sge");
            MemoryRegion lb = f.p.pdB.allocateAndRegister(64, Access.LOCAL_WRITE);
            Sge[] fiveB = new Sge[MAX_SGE + 1];
            for (int i = 0; i < fiveB.length; i++) fiveB[i] = Sge.of(lb, i * 10L, 10);
            f.assertRecvRefused(new ReceiveWorkRequest(2, fiveB), "max_recv_sge");
            f.qa.postSend(f.write(3, java.util.Arrays.copyOf(five, MAX_SGE)));
            Wcs.assertOk(Pair.awaitOne(f.cqA), 3, WcOpcode.RDMA_WRITE, 40, f.qa);
            f.assertStillWorks(4);
        }
    }

    @Test
    void inlineDataTooBigIsRefused() throws Exception {
        try (Fixture f = new Fixture()) {
            f.assertSendRefused(f.write(1, Sge.of(f.local, 0, MAX_INLINE + 1)).flags(SendFlags.INLINE | SendFlags.SIGNALED), "max_inline_data");
            f.assertSendRefused(f.write(2, Sge.of(f.local, 0, 40), Sge.of(f.local, 100, 25)).flags(SendFlags.INLINE | SendFlags.SIGNALED),
                    "max_inline_data");
            f.assertSendRefused(new SendWorkRequest(3, WrOpcode.RDMA_READ, Sge.of(f.local, 0, 8)).remote(f.remote.address(), f.remote.rkey())
                    .flags(SendFlags.INLINE | SendFlags.SIGNALED), "INLINE");
            f.assertStillWorks(4);
        }
    }

    @Test
    void inlineDataIsCopiedAtPostTime() throws Exception {
        try (Fixture f = new Fixture()) {
            byte[] data = Bytes.random(new Random(9), MAX_INLINE);
            Bytes.write(f.local, 0, data);
            MemoryRegion rbuf = f.p.pdB.allocateAndRegister(MAX_INLINE, Access.LOCAL_WRITE);
            f.qb.postRecv(new ReceiveWorkRequest(10, Sge.of(rbuf)));
            f.qa.modify(new QpAttr().state(QpState.SQD)); // hold the WRs on the send queue
            // inline bytes may come from a region without LOCAL_WRITE and are copied now
            f.qa.postSend(Pair.chain(
                    new SendWorkRequest(1, WrOpcode.SEND, Sge.of(f.local, 0, MAX_INLINE)).flags(SendFlags.INLINE | SendFlags.SIGNALED),
                    f.write(2, Sge.of(f.local, 0, 32)).flags(SendFlags.INLINE | SendFlags.SIGNALED)));
            Bytes.write(f.local, 0, new byte[MAX_INLINE]); // the application reuses the buffer at once
            f.qa.modify(new QpAttr().state(QpState.RTS));
            List<WorkCompletion> wcs = Pair.await(f.cqA, 2, 10_000);
            Wcs.assertOk(wcs.get(0), 1, WcOpcode.SEND, MAX_INLINE, f.qa);
            Wcs.assertOk(wcs.get(1), 2, WcOpcode.RDMA_WRITE, 32, f.qa);
            Wcs.assertOk(Pair.awaitOne(f.cqB), 10, WcOpcode.RECV, MAX_INLINE, f.qb);
            Bytes.assertRegion("inline SEND", data, rbuf, 0, MAX_INLINE);
            assertEquals(java.util.Arrays.toString(java.util.Arrays.copyOf(data, 32)),
                    java.util.Arrays.toString(Bytes.read(f.remote, 0, 32)), "inline WRITE");
        }
    }

    @Test
    void aFullSendQueueIsRefused() throws Exception {
        try (Fixture f = new Fixture()) {
            f.qa.modify(new QpAttr().state(QpState.SQD)); // nothing retires while the queue drains
            SendWorkRequest[] wrs = new SendWorkRequest[DEPTH + 1];
            for (int i = 0; i < wrs.length; i++) wrs[i] = f.write(i, Sge.of(f.local, i * 10L, 10));
            VerbsException e = assertThrows(VerbsException.class, () -> f.qa.postSend(Pair.chain(wrs)));
            assertTrue(e.getMessage().contains("full"), e.getMessage());
            assertTrue(e.isQueueFull(), "a full queue says so (libibverbs: ENOMEM)");
            assertSame(wrs[DEPTH], e.badRequest(), "the chain is refused at the request that did not fit");
            SendWorkRequest one = f.write(99, Sge.of(f.local, 0, 1));
            e = assertThrows(VerbsException.class, () -> f.qa.postSend(one));
            assertSame(one, e.badRequest());
            // the DEPTH requests before it were posted and run once the QP is back in RTS
            f.qa.modify(new QpAttr().state(QpState.RTS));
            List<WorkCompletion> wcs = Pair.await(f.cqA, DEPTH, 10_000);
            for (int i = 0; i < DEPTH; i++) Wcs.assertOk(wcs.get(i), i, WcOpcode.RDMA_WRITE, 10, f.qa);
            Pair.barrier(f.p.a);
            Pair.assertEmpty(f.cqA);
            f.assertStillWorks(100);
        }
    }

    @Test
    void readOrAtomicIntoARegionWithoutLocalWriteIsRefused() throws Exception {
        try (Fixture f = new Fixture()) {
            MemoryRegion ro = f.readOnly;
            long aligned = f.remote.address() + Bytes.alignedOffset(f.remote, 0);
            f.assertSendRefused(new SendWorkRequest(1, WrOpcode.RDMA_READ, Sge.of(ro, 0, 100)).remote(f.remote.address(), f.remote.rkey()).signaled(),
                    "LOCAL_WRITE");
            f.assertSendRefused(new SendWorkRequest(2, WrOpcode.RDMA_READ, Sge.of(f.local, 0, 100), Sge.of(ro, 0, 100))
                    .remote(f.remote.address(), f.remote.rkey()).signaled(), "SGE 1", "LOCAL_WRITE");
            f.assertSendRefused(new SendWorkRequest(3, WrOpcode.ATOMIC_FETCH_AND_ADD, Sge.of(ro, 0, 8)).remote(aligned, f.remote.rkey())
                    .compareAdd(1).signaled(), "LOCAL_WRITE");
            f.assertSendRefused(new SendWorkRequest(4, WrOpcode.ATOMIC_CMP_AND_SWP, Sge.of(ro, 0, 8)).remote(aligned, f.remote.rkey()).signaled(),
                    "LOCAL_WRITE");
            MemoryRegion roB = f.p.pdB.allocateAndRegister(64, 0);
            f.assertRecvRefused(new ReceiveWorkRequest(5, Sge.of(roB)), "LOCAL_WRITE");
            // SEND and WRITE only read the local buffer: no LOCAL_WRITE needed
            f.qa.postSend(f.write(6, Sge.of(ro, 0, 100)));
            Wcs.assertOk(Pair.awaitOne(f.cqA), 6, WcOpcode.RDMA_WRITE, 100, f.qa);
            f.assertStillWorks(7);
        }
    }

    @Test
    void atomicsNeedExactlyOneEightByteSge() throws Exception {
        try (Fixture f = new Fixture()) {
            long aligned = f.remote.address() + Bytes.alignedOffset(f.remote, 0);
            Function<Sge[], SendWorkRequest> fadd = sgl -> new SendWorkRequest(1, WrOpcode.ATOMIC_FETCH_AND_ADD, sgl)
                    .remote(aligned, f.remote.rkey()).compareAdd(1).signaled();
            f.assertSendRefused(fadd.apply(new Sge[] {Sge.of(f.local, 0, 4)}), "8 bytes");
            f.assertSendRefused(fadd.apply(new Sge[] {Sge.of(f.local, 0, 16)}), "8 bytes");
            f.assertSendRefused(fadd.apply(new Sge[] {Sge.of(f.local, 0, 4), Sge.of(f.local, 8, 4)}), "8 bytes");
            f.assertSendRefused(fadd.apply(new Sge[0]), "8 bytes");
            f.assertStillWorks(2);
        }
    }

    @Test
    void aRegionOfAnotherProtectionDomainIsRefused() throws Exception {
        try (Fixture f = new Fixture()) {
            f.assertSendRefused(f.write(1, Sge.of(f.foreign, 0, 10)), "protection domain");
            MemoryRegion foreignB = f.p.b.allocPd().allocateAndRegister(64, Access.LOCAL_WRITE);
            f.assertRecvRefused(new ReceiveWorkRequest(2, Sge.of(foreignB)), "protection domain");
            f.assertStillWorks(3);
        }
    }

    @Test
    void aChainStopsAtTheFirstRefusedRequest() throws Exception {
        try (Fixture f = new Fixture()) {
            SendWorkRequest good1 = f.write(1, Sge.of(f.local, 0, 10));
            SendWorkRequest bad = f.write(2, new Sge(f.local.address() + 4090, 10, f.local.lkey()));
            SendWorkRequest good3 = f.write(3, Sge.of(f.local, 0, 10));
            VerbsException e = assertThrows(VerbsException.class, () -> f.qa.postSend(Pair.chain(good1, bad, good3)));
            assertSame(bad, e.badRequest());
            Wcs.assertOk(Pair.awaitOne(f.cqA), 1, WcOpcode.RDMA_WRITE, 10, f.qa);
            Pair.barrier(f.p.a);
            Pair.assertEmpty(f.cqA); // the request after the refused one was not posted
            f.assertStillWorks(4);
        }
    }

    /** The status of the next completion on {@code cq}, which must be {@code wrId}'s. */
    private static WcStatus statusOf(CompletionQueue cq, long wrId) {
        WorkCompletion wc = Pair.awaitOne(cq);
        assertEquals(wrId, wc.wrId(), wc.toString());
        return wc.status();
    }

    /**
     * With faults in the completion (how the verbs library posts, as rdma_rxe does): the same SGEs are posted, and the
     * WR fails when its data would move, the QP entering the error state: a WRITE outside its region LOC_PROT_ERR
     * (nothing of it sent) and the WR after it flushed, an unknown lkey LOC_QP_OP_ERR, a READ into memory outside its
     * region LOC_PROT_ERR once its response comes, a receive outside its region LOC_QP_OP_ERR when a SEND reaches it
     * (the sender REM_OP_ERR).
     */
    @Test
    void faultsInTheCompletionArePostedAndFailAsOnRxe() throws Exception {
        try (Fixture f = new Fixture()) {
            SendWorkRequest outside = f.write(2, new Sge(f.local.address() + 4090, 10, f.local.lkey()));
            f.qa.postSend(Pair.chain(f.write(1, Sge.of(f.local, 0, 10)), outside, f.write(3, Sge.of(f.local, 0, 10))), true);
            Wcs.assertOk(Pair.awaitOne(f.cqA), 1, WcOpcode.RDMA_WRITE, 10, f.qa);
            assertEquals(WcStatus.LOC_PROT_ERR, statusOf(f.cqA, 2));
            assertEquals(WcStatus.WR_FLUSH_ERR, statusOf(f.cqA, 3));
            assertEquals(QpState.ERR, f.qa.state());
        }
        try (Fixture f = new Fixture()) {
            int bad = f.local.lkey() ^ 0x1234567;
            while (f.p.a.keys().byLkey(bad) != null) bad++;
            f.qa.postSend(new SendWorkRequest(1, WrOpcode.SEND, new Sge(f.local.address(), 10, bad)).signaled(), true);
            assertEquals(WcStatus.LOC_QP_OP_ERR, statusOf(f.cqA, 1));
            assertEquals(QpState.ERR, f.qa.state());
        }
        try (Fixture f = new Fixture()) {
            f.qa.postSend(new SendWorkRequest(1, WrOpcode.RDMA_READ, new Sge(f.local.address() + 4090, 10, f.local.lkey()))
                    .remote(f.remote.address(), f.remote.rkey()).signaled(), true);
            assertEquals(WcStatus.LOC_PROT_ERR, statusOf(f.cqA, 1));
            assertEquals(QpState.ERR, f.qa.state());
        }
        try (Fixture f = new Fixture()) {
            MemoryRegion lb = f.p.pdB.allocateAndRegister(4096, Access.LOCAL_WRITE);
            f.qb.postRecv(new ReceiveWorkRequest(1, new Sge(lb.address() + 4090, 10, lb.lkey())), true);
            f.qa.postSend(new SendWorkRequest(2, WrOpcode.SEND, Sge.of(f.local, 0, 10)).signaled());
            assertEquals(WcStatus.LOC_QP_OP_ERR, statusOf(f.cqB, 1));
            assertEquals(WcStatus.REM_OP_ERR, statusOf(f.cqA, 2));
            assertEquals(QpState.ERR, f.qb.state());
        }
    }
}
