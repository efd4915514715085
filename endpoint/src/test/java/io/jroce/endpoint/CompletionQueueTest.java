package io.jroce.endpoint;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Completion queues and completion generation (rxe_comp.c do_complete, rxe_cq.c rxe_cq_post): overflow
 * is reported and fails the QP, unsignaled send WRs complete silently while a later signaled one
 * completes, a flush ignores the signal gate, and armed notifications fire for solicited receives only
 * when asked to.
 */
class CompletionQueueTest {

    @Test
    void overflowIsReportedAfterTheStoredEntriesAndFailsTheQp() throws Exception {
        try (Pair p = new Pair()) {
            CompletionQueue sendCq = p.a.createCq(4);
            CompletionQueue recvCq = p.a.createCq(16);
            QueuePair qa = p.pdA.createQp(new QpInitAttr(sendCq, recvCq).maxSendWr(4).maxRecvWr(4));
            QueuePair qb = p.pdB.createQp(new QpInitAttr(p.b.createCq(16)).maxSendWr(4).maxRecvWr(4));
            p.connect(qa, qb, Mtu.MTU_1024, 0x10, 0x20, 2, 2);
            CountDownLatch overrun = new CountDownLatch(1);
            p.a.setAsyncEventListener((event, cq, qp, detail) -> {
                if (event == AsyncEvent.CQ_ERR && cq == sendCq) overrun.countDown();
            });
            MemoryRegion src = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            MemoryRegion rbuf = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            qa.postRecv(new ReceiveWorkRequest(77, Sge.of(rbuf)));
            // one lap of the send ring, polled, so every slot has held a WQE before
            for (int i = 0; i < 4; i++) {
                qa.postSend(new SendWorkRequest(i, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
            }
            Pair.await(sendCq, 4, 10_000);
            // four completions fill the queue; nobody polls, so the fifth finds it full
            for (int i = 4; i < 8; i++) {
                qa.postSend(new SendWorkRequest(i, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
            }
            // the send queue holds 4: post the fifth once the first four have retired (and filled the CQ)
            while (sendCq.size() < 4) {
                sendCq.requestNotify(false);
                if (sendCq.size() >= 4) break;
                assertTrue(sendCq.awaitEvent(10, TimeUnit.SECONDS), "completions of WRs 4..7");
            }
            Pair.barrier(p.a);
            qa.postSend(new SendWorkRequest(8, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
            assertTrue(overrun.await(10, TimeUnit.SECONDS), "CQ_ERR event for the overrun");

            WorkCompletion[] buf = new WorkCompletion[8];
            int n = sendCq.poll(buf, 8);
            assertEquals(4, n, "the entries that fitted are still delivered");
            for (int i = 0; i < 4; i++) Wcs.assertOk(buf[i], 4 + i, WcOpcode.RDMA_WRITE, 64, qa);
            VerbsException e = assertThrows(VerbsException.class, () -> sendCq.poll(buf, 8));
            assertTrue(e.getMessage().contains("overrun"), e.getMessage());
            assertThrows(VerbsException.class, () -> sendCq.poll(buf, 1, 10, TimeUnit.MILLISECONDS));
            assertTrue(sendCq.isOverrun());

            Pair.barrier(p.a); // the event loop must still be alive
            assertEquals(QpState.ERR, qa.state(), "the QP whose completion did not fit goes to ERR");
            // its receive queue was flushed into the other (healthy) CQ
            Wcs.assertFlushed(Pair.await(recvCq, 1, 5_000), qa, 77);
            // the send queue is fully retired, not beyond: nothing outstanding
            assertTrue(qa.describe().contains(" sq 0/4 "), qa.describe());
        }
    }

    /** poll(n, timeout) returns the first n completions as copies, leaves the rest queued, and returns fewer on timeout. */
    @Test
    void pollForNCompletionsTakesNLeavesTheRestAndStopsAtTheTimeout() throws Exception {
        try (Pair p = new Pair()) {
            Pair.Conn c = p.connect(Mtu.MTU_1024, 0x10, 0x20);
            MemoryRegion src = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            for (int i = 0; i < 3; i++) {
                c.qpA.postSend(new SendWorkRequest(i, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
            }
            List<WorkCompletion> two = c.cqA.poll(2, 10, TimeUnit.SECONDS);
            assertEquals(2, two.size());
            assertEquals(0, two.get(0).wrId);
            assertEquals(1, two.get(1).wrId);
            assertTrue(two.get(0) != two.get(1), "copies, not the queue's reused entries");
            List<WorkCompletion> rest = c.cqA.poll(2, 200, TimeUnit.MILLISECONDS);
            assertEquals(1, rest.size(), "only the third was left: the wait ends at the timeout with what arrived");
            assertEquals(2, rest.get(0).wrId);
        }
    }

    /** Verbs contract: once a send completion is polled, its send queue slot takes a new work request. */
    @Test
    void aPolledSendCompletionHasFreedItsQueueSlot() throws Exception {
        try (Pair p = new Pair()) {
            CompletionQueue cq = p.a.createCq(4);
            QueuePair qa = p.pdA.createQp(new QpInitAttr(cq).maxSendWr(1).maxRecvWr(1));
            QueuePair qb = p.pdB.createQp(new QpInitAttr(p.b.createCq(4)).maxSendWr(1).maxRecvWr(1));
            p.connect(qa, qb, Mtu.MTU_1024, 0x10, 0x20, 1, 1);
            MemoryRegion src = p.pdA.allocateAndRegister(8, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(8, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            for (int i = 0; i < 300; i++) {
                qa.postSend(new SendWorkRequest(i, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
                Wcs.assertOk(Pair.awaitOne(cq), i, WcOpcode.RDMA_WRITE, 8, qa);
            }
        }
    }

    @Test
    void unsignaledWrsCompleteSilentlyAndALaterSignaledOneCompletes() throws Exception {
        try (Pair p = new Pair()) {
            Pair.Conn c = p.connect(Mtu.MTU_256, 0x10, 0x20);
            MemoryRegion src = p.pdA.allocateAndRegister(6 * 300, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(6 * 300, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            Bytes.write(src, 0, Bytes.random(new java.util.Random(11), 6 * 300));
            for (int i = 0; i < 5; i++) {
                c.qpA.postSend(new SendWorkRequest(i, WrOpcode.RDMA_WRITE, Sge.of(src, i * 300, 300))
                        .remote(dst.address() + i * 300, dst.rkey()));
            }
            c.qpA.postSend(new SendWorkRequest(5, WrOpcode.RDMA_WRITE, Sge.of(src, 5 * 300, 300))
                    .remote(dst.address() + 5 * 300, dst.rkey()).signaled());
            List<WorkCompletion> wcs = Pair.await(c.cqA, 1, 10_000);
            Wcs.assertOk(wcs.get(0), 5, WcOpcode.RDMA_WRITE, 300, c.qpA);
            Pair.barrier(p.a);
            Pair.assertEmpty(c.cqA);
            // the signaled completion implies the earlier ones are done
            Bytes.assertRegion("all six WRITEs", Bytes.image(src), dst, 0, 6 * 300);
        }
    }

    @Test
    void sqSigAllSignalsEveryWr() throws Exception {
        try (Pair p = new Pair()) {
            CompletionQueue cqA = p.a.createCq(16);
            QueuePair qa = p.pdA.createQp(new QpInitAttr(cqA).maxSendWr(16).maxRecvWr(16).sqSigAll(true));
            QueuePair qb = p.pdB.createQp(new QpInitAttr(p.b.createCq(16)).maxSendWr(16).maxRecvWr(16));
            p.connect(qa, qb, Mtu.MTU_1024, 0x10, 0x20, 2, 2);
            MemoryRegion src = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            for (int i = 0; i < 3; i++) {
                qa.postSend(new SendWorkRequest(i, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()));
            }
            List<WorkCompletion> wcs = Pair.await(cqA, 3, 10_000);
            for (int i = 0; i < 3; i++) Wcs.assertOk(wcs.get(i), i, WcOpcode.RDMA_WRITE, 64, qa);
        }
    }

    @Test
    void aFlushReportsUnsignaledWrsToo() throws Exception {
        try (Pair p = new Pair()) {
            Pair.Conn c = p.connect(Mtu.MTU_1024, 0x10, 0x20);
            MemoryRegion src = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            byte[] dstImage = Bytes.image(dst);
            c.qpA.modify(new QpAttr().state(QpState.SQD)); // the WRs below stay queued
            c.qpA.postSend(Pair.chain(
                    new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()),
                    new SendWorkRequest(2, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled(),
                    new SendWorkRequest(3, WrOpcode.SEND, Sge.of(src)),
                    new SendWorkRequest(4, WrOpcode.RDMA_READ, Sge.of(src)).remote(dst.address(), dst.rkey())));
            c.qpA.modify(new QpAttr().state(QpState.ERR));
            Wcs.assertFlushed(Pair.await(c.cqA, 4, 10_000), c.qpA, 1, 2, 3, 4);
            Pair.barrier(p.a);
            Pair.assertEmpty(c.cqA);
            Bytes.assertRegion("untouched", dstImage, dst, 0, 0);
        }
    }

    @Test
    void receivesAlwaysComplete() throws Exception {
        try (Pair p = new Pair()) {
            Pair.Conn c = p.connect(Mtu.MTU_1024, 0x10, 0x20);
            MemoryRegion src = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            MemoryRegion rbuf = p.pdB.allocateAndRegister(64, Access.LOCAL_WRITE);
            c.qpB.postRecv(new ReceiveWorkRequest(9, Sge.of(rbuf)));
            c.qpA.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(src, 0, 10))); // unsignaled send
            Wcs.assertOk(Pair.awaitOne(c.cqB), 9, WcOpcode.RECV, 10, c.qpB);
        }
    }

    @Test
    void solicitedOnlyNotificationFiresForSolicitedMessagesOnly() throws Exception {
        try (Pair p = new Pair()) {
            Pair.Conn c = p.connect(Mtu.MTU_1024, 0x10, 0x20);
            MemoryRegion src = p.pdA.allocateAndRegister(4096, Access.LOCAL_WRITE);
            MemoryRegion rbuf = p.pdB.allocateAndRegister(8 * 4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            for (int i = 0; i < 8; i++) c.qpB.postRecv(new ReceiveWorkRequest(100 + i, Sge.of(rbuf, i * 4096L, 4096)));

            c.cqB.requestNotify(true);
            c.qpA.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(src, 0, 3000)));
            Wcs.assertOk(Pair.awaitOne(c.cqB), 100, WcOpcode.RECV, 3000, c.qpB);
            Pair.barrier(p.b); // any event the completion raised has been raised by now
            assertFalse(c.cqB.awaitEvent(0, TimeUnit.MILLISECONDS), "no event for a SEND without SOLICITED");

            // multi-packet: the SE bit rides on the last packet
            c.qpA.postSend(new SendWorkRequest(2, WrOpcode.SEND, Sge.of(src, 0, 3000)).flags(SendFlags.SOLICITED));
            assertTrue(c.cqB.awaitEvent(10, TimeUnit.SECONDS), "event for a SOLICITED SEND");
            Wcs.assertOk(Pair.awaitOne(c.cqB), 101, WcOpcode.RECV, 3000, c.qpB);

            // the arm is one-shot: another solicited message raises nothing until re-armed
            c.qpA.postSend(new SendWorkRequest(3, WrOpcode.SEND_WITH_IMM, Sge.of(src, 0, 10)).immData(3).flags(SendFlags.SOLICITED));
            Pair.awaitOne(c.cqB);
            Pair.barrier(p.b);
            assertFalse(c.cqB.awaitEvent(0, TimeUnit.MILLISECONDS), "no event without re-arming");

            // WRITE_WITH_IMM: unsolicited raises nothing, solicited raises an event
            c.cqB.requestNotify(true);
            c.qpA.postSend(new SendWorkRequest(4, WrOpcode.RDMA_WRITE_WITH_IMM, Sge.of(src, 0, 10)).remote(rbuf.address(), rbuf.rkey()).immData(4));
            Wcs.assertOk(Pair.awaitOne(c.cqB), 103, WcOpcode.RECV_RDMA_WITH_IMM, 10, c.qpB);
            Pair.barrier(p.b);
            assertFalse(c.cqB.awaitEvent(0, TimeUnit.MILLISECONDS), "no event for an unsolicited WRITE_WITH_IMM");
            c.qpA.postSend(new SendWorkRequest(5, WrOpcode.RDMA_WRITE_WITH_IMM, Sge.of(src, 0, 10)).remote(rbuf.address(), rbuf.rkey())
                    .immData(5).flags(SendFlags.SOLICITED));
            assertTrue(c.cqB.awaitEvent(10, TimeUnit.SECONDS), "event for a solicited WRITE_WITH_IMM");
            Pair.awaitOne(c.cqB);

            // an armed solicited-only CQ also reports a failed completion
            c.cqB.requestNotify(true);
            c.qpB.modify(new QpAttr().state(QpState.ERR));
            assertTrue(c.cqB.awaitEvent(10, TimeUnit.SECONDS), "event for a flushed receive");
        }
    }

    @Test
    void anyCompletionNotificationFiresForEveryKind() throws Exception {
        try (Pair p = new Pair()) {
            Pair.Conn c = p.connect(Mtu.MTU_1024, 0x10, 0x20);
            MemoryRegion src = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            int[] listened = new int[1];
            c.cqA.setEventListener(() -> listened[0]++);
            c.cqA.requestNotify(false);
            assertFalse(c.cqA.awaitEvent(0, TimeUnit.MILLISECONDS));
            c.qpA.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
            assertTrue(c.cqA.awaitEvent(10, TimeUnit.SECONDS), "event for a send completion");
            assertFalse(c.cqA.awaitEvent(0, TimeUnit.MILLISECONDS), "one event per arm");
            Pair.awaitOne(c.cqA);
            Pair.barrier(p.a);
            assertEquals(1, listened[0], "the event listener ran once");
        }
    }

    @Test
    void twoQpsShareOneCqAndAreToldApartByQpNum() throws Exception {
        try (Pair p = new Pair()) {
            CompletionQueue shared = p.a.createCq(32);
            QueuePair a1 = p.pdA.createQp(new QpInitAttr(shared).maxSendWr(8).maxRecvWr(8));
            QueuePair a2 = p.pdA.createQp(new QpInitAttr(shared).maxSendWr(8).maxRecvWr(8));
            QueuePair b1 = p.pdB.createQp(new QpInitAttr(p.b.createCq(16)).maxSendWr(8).maxRecvWr(8));
            QueuePair b2 = p.pdB.createQp(new QpInitAttr(p.b.createCq(16)).maxSendWr(8).maxRecvWr(8));
            p.connect(a1, b1, Mtu.MTU_1024, 0x10, 0x20, 2, 2);
            p.connect(a2, b2, Mtu.MTU_1024, 0x30, 0x40, 2, 2);
            MemoryRegion src = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            a1.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
            Wcs.assertOk(Pair.awaitOne(shared), 1, WcOpcode.RDMA_WRITE, 64, a1);
            a2.postSend(new SendWorkRequest(2, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
            Wcs.assertOk(Pair.awaitOne(shared), 2, WcOpcode.RDMA_WRITE, 64, a2);
        }
    }

    @Test
    void aTimedPollReturnsZeroWhenNothingCompletes() throws Exception {
        try (Pair p = new Pair()) {
            CompletionQueue cq = p.a.createCq(4);
            WorkCompletion[] buf = new WorkCompletion[4];
            assertEquals(0, cq.poll(buf, 20, TimeUnit.MILLISECONDS));
            assertEquals(0, cq.poll(buf));
            assertEquals(0, cq.size());
        }
    }
}
