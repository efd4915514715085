package io.jroce.endpoint;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The receive queue (rdma_rxe rxe_queue.h, rxe_resp.c): a ring of N slots holds N-1 entries, entries are consumed strictly
 * in order so receive completions arrive in send order, and a SEND that finds the ring dry is RNR-NAKed
 * and retried until a receive is posted.
 */
class ReceiveQueueTest {

    @Test
    void aRingOfNSlotsHoldsNMinusOneEntries() throws Exception {
        try (Pair p = new Pair()) {
            int maxRecvWr = 8;
            CompletionQueue cqB = p.b.createCq(32);
            QueuePair qa = p.pdA.createQp(new QpInitAttr(p.a.createCq(32)).maxSendWr(16).maxRecvWr(8));
            QueuePair qb = p.pdB.createQp(new QpInitAttr(cqB).maxSendWr(8).maxRecvWr(maxRecvWr));
            p.connect(qa, qb, Mtu.MTU_1024, 0x10, 0x20, 2, 2);
            MemoryRegion rbuf = p.pdB.allocateAndRegister(64 * 16, Access.LOCAL_WRITE);
            for (int i = 0; i < maxRecvWr; i++) qb.postRecv(new ReceiveWorkRequest(i, Sge.of(rbuf, i * 64L, 64)));
            ReceiveWorkRequest extra = new ReceiveWorkRequest(99, Sge.of(rbuf, 0, 64));
            VerbsException e = assertThrows(VerbsException.class, () -> qb.postRecv(extra), "max_recv_wr + 1");
            assertTrue(e.getMessage().contains("full"), e.getMessage());
            assertTrue(e.isQueueFull(), "a full receive queue says so (libibverbs: ENOMEM)");
            assertSame(extra, e.badRequest());

            // one SEND consumes one entry; then exactly one more fits
            MemoryRegion src = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            qa.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(src, 0, 5)));
            Wcs.assertOk(Pair.awaitOne(cqB), 0, WcOpcode.RECV, 5, qb);
            ReceiveWorkRequest a = new ReceiveWorkRequest(8, Sge.of(rbuf, 8 * 64L, 64));
            ReceiveWorkRequest b = new ReceiveWorkRequest(9, Sge.of(rbuf, 9 * 64L, 64));
            e = assertThrows(VerbsException.class, () -> qb.postRecv(Pair.chain(a, b)));
            assertSame(b, e.badRequest(), "the chain is refused at its second request; the first was posted");
            // the entries are consumed in order: 1..7, then 8
            for (int i = 1; i <= 8; i++) qa.postSend(new SendWorkRequest(1 + i, WrOpcode.SEND, Sge.of(src, 0, i)));
            List<WorkCompletion> wcs = Pair.await(cqB, 8, 10_000);
            for (int i = 1; i <= 8; i++) Wcs.assertOk(wcs.get(i - 1), i, WcOpcode.RECV, i, qb);
        }
    }

    @Test
    void receiveCompletionsArriveInSendOrder() throws Exception {
        long seed = Bytes.seed("ReceiveQueueTest.receiveCompletionsArriveInSendOrder");
        Random r = new Random(seed);
        int n = 120;
        int mtu = 256;
        int slot = 3 * mtu + 7;
        try (Pair p = new Pair()) {
            Pair.Conn c = p.connect(Mtu.MTU_256, 0xFFFFC0, 0x77);
            MemoryRegion src = p.pdA.allocateAndRegister(n * slot, Access.LOCAL_WRITE);
            MemoryRegion rbuf = p.pdB.allocateAndRegister(n * slot, Access.LOCAL_WRITE);
            MemoryRegion wbuf = p.pdB.allocateAndRegister(n * slot, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            byte[] data = Bytes.random(r, n * slot);
            Bytes.write(src, 0, data);
            byte[] rImage = Bytes.fillCanary(rbuf, r);
            byte[] wImage = Bytes.fillCanary(wbuf, r);
            int[] sizes = new int[n];
            WrOpcode[] ops = new WrOpcode[n];
            WrOpcode[] choice = {WrOpcode.SEND, WrOpcode.SEND_WITH_IMM, WrOpcode.RDMA_WRITE_WITH_IMM};
            for (int i = 0; i < n; i++) {
                c.qpB.postRecv(new ReceiveWorkRequest(1000 + i, Sge.of(rbuf, (long) i * slot, slot)));
            }
            List<SendWorkRequest> wrs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                sizes[i] = r.nextInt(slot + 1);
                ops[i] = choice[r.nextInt(choice.length)];
                SendWorkRequest wr = new SendWorkRequest(i, ops[i], Sge.of(src, (long) i * slot, sizes[i])).immData(0x1000 + i);
                if (ops[i] == WrOpcode.RDMA_WRITE_WITH_IMM) wr.remote(wbuf.address() + (long) i * slot, wbuf.rkey());
                if (i == n - 1) wr.signaled();
                wrs.add(wr);
            }
            // posted in a few chains and single posts, as an application would
            int i = 0;
            while (i < n) {
                int k = Math.min(n - i, 1 + r.nextInt(10));
                c.qpA.postSend(Pair.chain(wrs.subList(i, i + k).toArray(new SendWorkRequest[0])));
                i += k;
            }
            Wcs.assertOk(Pair.awaitOne(c.cqA), n - 1, ops[n - 1].completionOpcode(), sizes[n - 1], c.qpA);
            List<WorkCompletion> wcs = Pair.await(c.cqB, n, 20_000);
            for (int j = 0; j < n; j++) {
                WorkCompletion wc = wcs.get(j);
                boolean write = ops[j] == WrOpcode.RDMA_WRITE_WITH_IMM;
                Wcs.assertOk(wc, 1000 + j, write ? WcOpcode.RECV_RDMA_WITH_IMM : WcOpcode.RECV, sizes[j], c.qpB);
                if (ops[j] == WrOpcode.SEND) Wcs.assertNoImmNoInv(wc); else Wcs.assertImm(wc, 0x1000 + j);
                byte[] msg = java.util.Arrays.copyOfRange(data, j * slot, j * slot + sizes[j]);
                if (write) {
                    wImage = Bytes.with(wImage, j * slot, msg);
                } else {
                    rImage = Bytes.with(rImage, j * slot, msg);
                }
            }
            Bytes.assertRegion("receive buffers", rImage, rbuf, 0, n * slot);
            Bytes.assertRegion("WRITE_WITH_IMM targets", wImage, wbuf, 0, n * slot);
        }
    }

    @Test
    void aWriteWithImmIntoAnEmptyRingWaitsForAReceive() throws Exception {
        try (Pair p = new Pair()) {
            Pair.Conn c = p.connect(Mtu.MTU_1024, 0xFFFFFE, 0x20);
            MemoryRegion src = p.pdA.allocateAndRegister(3000, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(3000, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            Bytes.write(src, 0, Bytes.random(new Random(6), 3000));
            // three packets: the first two land, the last (with the immediate) needs a receive WQE
            c.qpA.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE_WITH_IMM, Sge.of(src)).remote(dst.address(), dst.rkey())
                    .immData(0xABCD).signaled());
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (c.qpB.counters().rnrNaksSent == 0) {
                assertTrue(System.nanoTime() < deadline, "an RNR NAK while no receive is posted");
                Pair.barrier(p.b);
            }
            c.qpB.postRecv(new ReceiveWorkRequest(8));
            Wcs.assertOk(Pair.awaitOne(c.cqA), 1, WcOpcode.RDMA_WRITE, 3000, c.qpA);
            WorkCompletion rc = Pair.awaitOne(c.cqB);
            Wcs.assertOk(rc, 8, WcOpcode.RECV_RDMA_WITH_IMM, 3000, c.qpB);
            Wcs.assertImm(rc, 0xABCD);
            Bytes.assertRegion("written", Bytes.image(src), dst, 0, 3000);
            Pair.barrier(p.b);
            Pair.assertEmpty(c.cqB); // one message, one receive completion, however many RNR rounds
        }
    }

    @Test
    void aReceiveCqOverrunIsReportedAndFailsTheQp() throws Exception {
        try (Pair p = new Pair()) {
            CompletionQueue recvCq = p.b.createCq(2);
            CompletionQueue sendCqA = p.a.createCq(16);
            QueuePair qa = p.pdA.createQp(new QpInitAttr(sendCqA).maxSendWr(8).maxRecvWr(8));
            QueuePair qb = p.pdB.createQp(new QpInitAttr(p.b.createCq(16), recvCq).maxSendWr(8).maxRecvWr(8));
            p.connect(qa, qb, Mtu.MTU_1024, 0x10, 0x20, 2, 2);
            MemoryRegion src = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            MemoryRegion rbuf = p.pdB.allocateAndRegister(64 * 8, Access.LOCAL_WRITE);
            for (int i = 0; i < 4; i++) qb.postRecv(new ReceiveWorkRequest(i, Sge.of(rbuf, i * 64L, 64)));
            java.util.concurrent.CountDownLatch overrun = new java.util.concurrent.CountDownLatch(1);
            p.b.setAsyncEventListener((event, cq, qp, detail) -> {
                if (event == AsyncEvent.CQ_ERR && cq == recvCq) overrun.countDown();
            });
            for (int i = 0; i < 3; i++) qa.postSend(new SendWorkRequest(i, WrOpcode.SEND, Sge.of(src, 0, 10 + i)));
            assertTrue(overrun.await(10, java.util.concurrent.TimeUnit.SECONDS), "CQ_ERR for the receive CQ");
            WorkCompletion[] buf = new WorkCompletion[4];
            assertEquals(2, recvCq.poll(buf, 4));
            Wcs.assertOk(buf[0], 0, WcOpcode.RECV, 10, qb);
            Wcs.assertOk(buf[1], 1, WcOpcode.RECV, 11, qb);
            assertThrows(VerbsException.class, () -> recvCq.poll(buf, 4));
            Pair.barrier(p.b);
            assertEquals(QpState.ERR, qb.state());
            assertTrue(qb.describe().contains(" rq 0/8 "), qb.describe());
            // the message whose completion did not fit was not delivered, so it is not acknowledged:
            // the sender gets a remote operational error, not a false success
            WorkCompletion failed = Pair.awaitOne(sendCqA);
            assertEquals(2, failed.wrId(), failed.toString());
            assertEquals(WcStatus.REM_OP_ERR, failed.status(), failed.toString());
        }
    }

    @Test
    void aSendIntoAnEmptyRingWaitsForAReceive() throws Exception {
        try (Pair p = new Pair()) {
            Pair.Conn c = p.connect(Mtu.MTU_1024, 0x10, 0x20);
            MemoryRegion src = p.pdA.allocateAndRegister(2000, Access.LOCAL_WRITE);
            MemoryRegion rbuf = p.pdB.allocateAndRegister(2000, Access.LOCAL_WRITE);
            Bytes.write(src, 0, Bytes.random(new Random(5), 2000));
            c.qpA.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(src)).signaled());
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (c.qpB.counters().rnrNaksSent == 0) {
                assertTrue(System.nanoTime() < deadline, "an RNR NAK while no receive is posted");
                Pair.barrier(p.b);
            }
            Pair.assertEmpty(c.cqA);
            c.qpB.postRecv(new ReceiveWorkRequest(7, Sge.of(rbuf)));
            Wcs.assertOk(Pair.awaitOne(c.cqA), 1, WcOpcode.SEND, 2000, c.qpA);
            Wcs.assertOk(Pair.awaitOne(c.cqB), 7, WcOpcode.RECV, 2000, c.qpB);
            Bytes.assertRegion("received", Bytes.image(src), rbuf, 0, 2000);
            assertEquals(QpState.RTS, c.qpA.state());
        }
    }
}
