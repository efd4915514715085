package io.jroce.endpoint;

import java.io.IOException;
import java.net.InetAddress;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Two devices on 127.0.0.1 and 127.0.0.2 over real UDP sockets, with helpers to connect RC queue pairs
 * and wait for completions (never by sleeping).
 */
final class Pair implements AutoCloseable {
    static final int PORT = 4791;
    final Device a;
    final Device b;
    final ProtectionDomain pdA;
    final ProtectionDomain pdB;

    Pair() throws IOException {
        this(new DeviceConfig(addr("127.0.0.1")), new DeviceConfig(addr("127.0.0.2")));
    }

    Pair(DeviceConfig ca, DeviceConfig cb) throws IOException {
        a = Device.open(ca);
        Device bb;
        try {
            bb = Device.open(cb);
        } catch (IOException | RuntimeException e) {
            a.close();
            throw e;
        }
        b = bb;
        pdA = a.allocPd();
        pdB = b.allocPd();
    }

    static InetAddress addr(String s) {
        try {
            return InetAddress.getByName(s);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Connection parameters of one side. */
    record Side(QueuePair qp, CompletionQueue cq) {
    }

    static final class Conn {
        final QueuePair qpA;
        final QueuePair qpB;
        final CompletionQueue cqA;
        final CompletionQueue cqB;

        Conn(QueuePair qpA, CompletionQueue cqA, QueuePair qpB, CompletionQueue cqB) {
            this.qpA = qpA;
            this.qpB = qpB;
            this.cqA = cqA;
            this.cqB = cqB;
        }
    }

    Conn connect(Mtu mtu, int psnA, int psnB) {
        return connect(mtu, psnA, psnB, 4, 4, 256);
    }

    Conn connect(Mtu mtu, int psnA, int psnB, int maxRdAtomic, int maxDestRdAtomic, int depth) {
        return connect(mtu, psnA, psnB, maxRdAtomic, maxDestRdAtomic, depth, QP_ACCESS, QP_ACCESS);
    }

    /** As above, with the QP access flags of each side given (the responder checks its own). */
    Conn connect(Mtu mtu, int psnA, int psnB, int maxRdAtomic, int maxDestRdAtomic, int depth, int accessA, int accessB) {
        CompletionQueue cqA = a.createCq(depth * 2);
        CompletionQueue cqB = b.createCq(depth * 2);
        QueuePair qa = pdA.createQp(new QpInitAttr(cqA).maxSendWr(depth).maxRecvWr(depth).maxSendSge(4).maxRecvSge(4));
        QueuePair qb = pdB.createQp(new QpInitAttr(cqB).maxSendWr(depth).maxRecvWr(depth).maxSendSge(4).maxRecvSge(4));
        bringUp(qa, b, qb.qpNum(), mtu, psnB, psnA, maxRdAtomic, maxDestRdAtomic, accessA);
        bringUp(qb, a, qa.qpNum(), mtu, psnA, psnB, maxRdAtomic, maxDestRdAtomic, accessB);
        return new Conn(qa, cqA, qb, cqB);
    }

    /** Connects two QPs created by the caller (any CQs, any capabilities) with full QP access flags. */
    Conn connect(QueuePair qa, QueuePair qb, Mtu mtu, int psnA, int psnB, int maxRdAtomic, int maxDestRdAtomic) {
        bringUp(qa, b, qb.qpNum(), mtu, psnB, psnA, maxRdAtomic, maxDestRdAtomic, QP_ACCESS);
        bringUp(qb, a, qa.qpNum(), mtu, psnA, psnB, maxRdAtomic, maxDestRdAtomic, QP_ACCESS);
        return new Conn(qa, qa.sendCq(), qb, qb.recvCq());
    }

    static final int QP_ACCESS = Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC | Access.LOCAL_WRITE;

    /** RESET -> INIT -> RTR -> RTS. {@code rqPsn} is the peer's send PSN, {@code sqPsn} our own. */
    static void bringUp(QueuePair qp, Device peer, int peerQpn, Mtu mtu, int rqPsn, int sqPsn, int maxRdAtomic, int maxDestRdAtomic) {
        bringUp(qp, peer, peerQpn, mtu, rqPsn, sqPsn, maxRdAtomic, maxDestRdAtomic, QP_ACCESS);
    }

    static void bringUp(QueuePair qp, Device peer, int peerQpn, Mtu mtu, int rqPsn, int sqPsn, int maxRdAtomic, int maxDestRdAtomic,
                        int qpAccess) {
        RcConnect.connect(qp, new RcConnect.Peer(peer.address(), peer.port(), peerQpn, rqPsn), sqPsn,
                RcConnect.Params.defaults().mtu(mtu).maxRdAtomic(maxRdAtomic).maxDestRdAtomic(maxDestRdAtomic).minRnrTimer(1)
                        .accessFlags(qpAccess));
    }

    /** Polls until {@code n} completions arrived; fails after the timeout. */
    static List<WorkCompletion> await(CompletionQueue cq, int n, long timeoutMs) {
        try {
            List<WorkCompletion> got = cq.poll(n, timeoutMs, TimeUnit.MILLISECONDS);
            if (got.size() < n) fail("timed out waiting for " + n + " completions, got " + got);
            return got;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    static WorkCompletion awaitOne(CompletionQueue cq) {
        return await(cq, 1, 10_000).get(0);
    }

    /** Links send work requests into one chain for a single post, in the given order. */
    static SendWorkRequest chain(SendWorkRequest... wrs) {
        for (int i = 0; i + 1 < wrs.length; i++) wrs[i].next(wrs[i + 1]);
        return wrs[0];
    }

    /** Links receive work requests into one chain for a single post, in the given order. */
    static ReceiveWorkRequest chain(ReceiveWorkRequest... wrs) {
        for (int i = 0; i + 1 < wrs.length; i++) wrs[i].next(wrs[i + 1]);
        return wrs[0];
    }

    /**
     * Holds {@code d}'s event loop with a task, runs {@code send} (which must put its datagrams on the wire before it
     * returns), then lets the loop go: {@code d} reads what was sent in one burst.
     */
    static void whileLoopHeld(Device d, Runnable send) throws InterruptedException {
        java.util.concurrent.CountDownLatch held = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        d.transport().execute(() -> {
            held.countDown();
            try {
                release.await(20, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        try {
            assertTrue(held.await(10, TimeUnit.SECONDS), "the event loop took the holding task");
            send.run();
        } finally {
            release.countDown();
        }
    }

    /**
     * Returns once every task already queued on the device's event loop has run: a completion the loop
     * produced before this call is then visible, and so is any CQ event it raised.
     */
    static void barrier(Device d) {
        d.runOnLoop(() -> { });
    }

    static void assertEmpty(CompletionQueue cq) {
        assertTrue(cq.size() == 0, "expected no further completions, have " + cq.size());
    }

    @Override
    public void close() {
        try {
            a.close();
        } finally {
            b.close();
        }
    }

    /** SEND with immediate, WRITE, READ, FETCH_ADD and CMP_SWAP of {@code n} random bytes from a to b, each checked, across the PSN wrap. */
    static void exchangeEveryOperation(Pair p, int n) {
        Conn c = p.connect(Mtu.MTU_1024, 0xFFFFF0, 0x000010);
        MemoryRegion srcA = p.pdA.allocateAndRegister(n, Access.LOCAL_WRITE);
        MemoryRegion dstB = p.pdB.allocateAndRegister(n, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
        byte[] data = new byte[n];
        new Random(6).nextBytes(data);
        srcA.buffer().put(data);

        c.qpB.postRecv(new ReceiveWorkRequest(7, Sge.of(dstB)));
        c.qpA.postSend(new SendWorkRequest(1, WrOpcode.SEND_WITH_IMM, Sge.of(srcA, 0, Math.min(n, 3000))).immData(0x66).signaled());
        assertEquals(WcStatus.SUCCESS, awaitOne(c.cqA).status());
        WorkCompletion r = awaitOne(c.cqB);
        assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
        assertEquals(Math.min(n, 3000), r.byteLen());
        assertEquals(WcOpcode.RECV, r.opcode());
        assertEquals(0x66, r.immData());
        byte[] got = new byte[Math.min(n, 3000)];
        dstB.buffer().get(got);
        assertArrayEquals(Arrays.copyOf(data, Math.min(n, 3000)), got);

        c.qpA.postSend(new SendWorkRequest(2, WrOpcode.RDMA_WRITE, Sge.of(srcA)).remote(dstB.address(), dstB.rkey()).signaled());
        WorkCompletion w = awaitOne(c.cqA);
        assertEquals(WcStatus.SUCCESS, w.status(), w.toString());
        got = new byte[n];
        dstB.buffer().get(got);
        assertArrayEquals(data, got);

        MemoryRegion back = p.pdA.allocateAndRegister(n, Access.LOCAL_WRITE);
        c.qpA.postSend(new SendWorkRequest(3, WrOpcode.RDMA_READ, Sge.of(back)).remote(dstB.address(), dstB.rkey()).signaled());
        WorkCompletion rd = awaitOne(c.cqA);
        assertEquals(WcStatus.SUCCESS, rd.status(), rd.toString());
        assertEquals(WcOpcode.RDMA_READ, rd.opcode());
        got = new byte[n];
        back.buffer().get(got);
        assertArrayEquals(data, got);

        MemoryRegion res = p.pdA.allocateAndRegister(8, Access.LOCAL_WRITE);
        long before = dstB.getLong(0);
        c.qpA.postSend(new SendWorkRequest(4, WrOpcode.ATOMIC_FETCH_AND_ADD, Sge.of(res)).remote(dstB.address(), dstB.rkey()).compareAdd(5).signaled());
        WorkCompletion fa = awaitOne(c.cqA);
        assertEquals(WcStatus.SUCCESS, fa.status(), fa.toString());
        assertEquals(before, res.getLong(0));
        assertEquals(before + 5, dstB.getLong(0));
        c.qpA.postSend(new SendWorkRequest(5, WrOpcode.ATOMIC_CMP_AND_SWP, Sge.of(res)).remote(dstB.address(), dstB.rkey())
                .compareAdd(before + 5).swap(42).signaled());
        WorkCompletion cs = awaitOne(c.cqA);
        assertEquals(WcStatus.SUCCESS, cs.status(), cs.toString());
        assertEquals(before + 5, res.getLong(0));
        assertEquals(42, dstB.getLong(0));
    }

    /** Waits (spinning, bounded at 10 s) until the condition holds, for a state with no completion to wait on. */
    static void until(String what, java.util.function.BooleanSupplier cond) {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) org.junit.jupiter.api.Assertions.fail("timed out waiting for: " + what);
            Thread.onSpinWait();
        }
    }
}
