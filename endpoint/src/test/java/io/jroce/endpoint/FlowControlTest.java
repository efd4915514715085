package io.jroce.endpoint;

import org.junit.jupiter.api.Test;

import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Flow control: a QP's window is capped by what the device's receive buffer holds at the QP's path MTU, so that a
 * peer like us never overruns it; a large transfer between two devices with small buffers then runs without a drop.
 */
class FlowControlTest {
    @Test
    void theWindowIsCappedByTheReceiveBufferAndNothingIsDropped() throws Exception {
        int asked = 100_000;
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.15.1")).port(0).socketBufferBytes(asked).tailProbeMicros(0),
                new DeviceConfig(Pair.addr("127.77.15.2")).port(0).socketBufferBytes(asked).tailProbeMicros(0))) {
            Transport t = p.a.transport();
            int granted = t.receiveBufferBytes();
            // the kernel doubles what is asked (for its bookkeeping) within net.core.rmem_max, or past it with SO_RCVBUFFORCE
            assertTrue(granted >= asked && granted <= 2 * asked, "receive buffer " + granted);
            assertEquals(granted / 4 * 3 / (8192 + 256), t.flow.capacity(4096), "MTU 4096: about 8.4 KB per datagram, 3/4 of the buffer");
            assertEquals(granted / 4 * 3 / (2048 + 256), t.flow.capacity(1024), "MTU 1024: about 2.3 KB per datagram");
            assertEquals(Math.min(128, t.flow.capacity(4096)), t.flow.windowFor(4096), "one QP: the device window within the capacity");
            assertEquals(Math.min(128, t.flow.capacity(1024)), t.flow.windowFor(1024));
            for (int mtu : new int[] {1024, 4096}) {
                int b = FlowBudget.receiveBufferFor(128, mtu);
                assertEquals(128, FlowBudget.capacity(b, mtu), "the buffer the warning names holds the full window at MTU " + mtu);
                assertEquals(127, FlowBudget.capacity(b - 1, mtu), "and no smaller buffer does, at MTU " + mtu);
            }
            assertEquals(128, new DeviceConfig(Pair.addr("127.77.15.3")).maxUnackedPsns, "the device window the cap applies to");

            Pair.Conn c = connect(p, Mtu.MTU_4096, 0x10, 0x20);
            int n = 4 << 20;
            Regions rg = Regions.of(p, n, 9);
            MemoryRegion src = rg.src();
            MemoryRegion dst = rg.dst();
            byte[] data = rg.data();
            for (int i = 0; i < 4; i++) {
                c.qpA.postSend(new SendWorkRequest(i, WrOpcode.RDMA_WRITE, Sge.of(src, i * (n / 4), n / 4))
                        .remote(dst.address() + i * (n / 4), dst.rkey()).signaled());
            }
            for (WorkCompletion wc : Pair.await(c.cqA, 4, 30_000)) assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            byte[] got = new byte[n];
            dst.buffer().get(got);
            assertArrayEquals(data, got);
            assertEquals(0, p.a.counters().retransmits, "no drop at the receiver's socket, so nothing resent: " + p.a.counters());
            assertEquals(0, c.qpB.counters().seqNaksSent, "no gap seen by the responder: " + c.qpB.counters());
        }
    }

    /** 64 QPs at once, each with a 128-PSN window: the QPs in flight share the receive buffer instead of overrunning it. */
    @Test
    void busyQpsShareTheReceiveBuffer() throws Exception {
        int qps = 64;
        int size = 256 * 1024;
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.15.4")).port(0).socketBufferBytes(1 << 20).tailProbeMicros(0),
                new DeviceConfig(Pair.addr("127.77.15.5")).port(0).socketBufferBytes(1 << 20).tailProbeMicros(0))) {
            MemoryRegion src = p.pdA.allocateAndRegister(size, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(size * qps, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            byte[] data = new byte[size];
            new Random(10).nextBytes(data);
            src.buffer().put(data);
            Pair.Conn[] c = new Pair.Conn[qps];
            for (int i = 0; i < qps; i++) c[i] = connect(p, Mtu.MTU_1024, 0x1000 * i, 0x1000 * i + 7);
            for (int i = 0; i < qps; i++) {
                c[i].qpA.postSend(new SendWorkRequest(i, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address() + (long) i * size, dst.rkey()).signaled());
            }
            for (int i = 0; i < qps; i++) {
                WorkCompletion wc = Pair.await(c[i].cqA, 1, 60_000).get(0);
                assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            }
            byte[] got = new byte[size];
            for (int i = 0; i < qps; i++) {
                dst.buffer().get(i * size, got);
                assertArrayEquals(data, got, "QP " + i);
            }
            assertEquals(0, p.a.counters().retransmits, "64 x 128 PSNs would be 8192 datagrams against a buffer of about 900: " + p.a.counters());
            assertEquals(0, p.a.transport().call(() -> p.a.transport().flow.inFlight), "everything acknowledged: nothing counted in flight");
        }
    }

    /**
     * Far more QPs than the budget has packets, all starting at once: 256 QPs of 8 packets against a budget of about
     * 40. They take turns, each turn a burst within the budget, so the receiver's buffer never overflows (nothing is
     * resent) and each message is acknowledged about once, not packet by packet. A QP with nothing in flight waits
     * its turn like the rest: were it let through, the first burst alone (a packet from every QP) would be six times
     * the buffer.
     */
    @Test
    void moreQpsThanTheBudgetHasPacketsTakeTurnsWithinIt() throws Exception {
        int qps = 256;
        int size = 8 * 1024;
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.15.8")).port(0).socketBufferBytes(64 * 1024).tailProbeMicros(0),
                new DeviceConfig(Pair.addr("127.77.15.9")).port(0).socketBufferBytes(64 * 1024).tailProbeMicros(0))) {
            int capacity = p.a.transport().flow.capacity(1024);
            assertTrue(capacity * 4 < qps, "the budget is far below one packet per QP: " + capacity);
            Regions rg = Regions.of(p, size * qps, 12);
            Pair.Conn[] c = new Pair.Conn[qps];
            for (int i = 0; i < qps; i++) c[i] = connect(p, Mtu.MTU_1024, 0x100 * i, 0x100 * i + 3);
            // every QP's post reaches the device in the same cycle: the burst starts from one thread's command
            p.a.transport().call(() -> {
                for (int i = 0; i < qps; i++) {
                    c[i].qpA.postSend(new SendWorkRequest(i, WrOpcode.RDMA_WRITE, Sge.of(rg.src(), i * size, size))
                            .remote(rg.dst().address() + (long) i * size, rg.dst().rkey()).signaled());
                }
                return null;
            });
            for (int i = 0; i < qps; i++) {
                WorkCompletion wc = Pair.await(c[i].cqA, 1, 60_000).get(0);
                assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            }
            byte[] got = new byte[size * qps];
            rg.dst().buffer().get(0, got);
            assertArrayEquals(rg.data(), got);
            long acks = 0;
            for (Pair.Conn conn : c) acks += conn.qpB.counters().acksSent;
            System.out.printf("FlowControlTest: %d QPs x %d packets, budget %d: %d ACKs, device %s%n", qps, size / 1024,
                    capacity, acks, p.a.counters());
            assertEquals(0, p.a.counters().retransmits, "the receiver's buffer never overflowed: " + p.a.counters());
            assertTrue(acks <= 2L * qps, "a turn is acknowledged once, a message at most twice: " + acks + " ACKs for " + qps + " messages");
            assertEquals(0, p.a.transport().call(() -> p.a.transport().flow.inFlight), "everything acknowledged: nothing counted in flight");
            assertEquals(0, (int) p.a.transport().call(() -> p.a.transport().flow.waiting()), "no QP left waiting");
        }
    }

    /**
     * A QP that the budget let fill it and that then meets an RNR NAK (its peer posted no receive) gives its room
     * back while it waits out the back-off, so the device's other QPs go on: a WRITE on a second QP completes while
     * the SEND still waits, and the SEND completes once the receive is posted.
     */
    @Test
    void aQpWaitingOnRnrDoesNotHoldTheBudget() throws Exception {
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.15.10")).port(0).socketBufferBytes(64 * 1024).tailProbeMicros(0),
                new DeviceConfig(Pair.addr("127.77.15.11")).port(0).socketBufferBytes(64 * 1024).tailProbeMicros(0))) {
            int capacity = p.a.transport().flow.capacity(1024);
            int sendSize = 2 * capacity * 1024; // more packets than the budget: the SEND alone fills it
            MemoryRegion src = p.pdA.allocateAndRegister(256 * 1024, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(256 * 1024, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            CompletionQueue cqA = p.a.createCq(16);
            CompletionQueue cqB = p.b.createCq(16);
            QueuePair sendA = p.pdA.createQp(new QpInitAttr(cqA).maxSendWr(8).maxRecvWr(8));
            QueuePair sendB = p.pdB.createQp(new QpInitAttr(cqB).maxSendWr(8).maxRecvWr(8));
            RcConnect.connectPair(sendA, 0x70, sendB, 0x80,
                    RcConnect.Params.defaults().mtu(Mtu.MTU_1024).timeout(18).retryCnt(7).rnrRetry(7).minRnrTimer(14));
            Pair.Conn write = connect(p, Mtu.MTU_1024, 0x90, 0xa0);

            sendA.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(src, 0, sendSize)).signaled());
            Pair.until("the SEND meets an RNR NAK", () -> sendA.counters().rnrWaits > 0);
            write.qpA.postSend(new SendWorkRequest(2, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
            WorkCompletion wc = Pair.await(write.cqA, 1, 20_000).get(0);
            assertEquals(WcStatus.SUCCESS, wc.status(), "the WRITE went on while the SEND waited: " + wc);
            assertEquals(0, cqA.poll(new WorkCompletion[1]), "the SEND is still waiting for a receive");

            sendB.postRecv(new ReceiveWorkRequest(3, Sge.of(dst, 0, sendSize)));
            assertEquals(WcStatus.SUCCESS, Pair.await(cqA, 1, 20_000).get(0).status());
            assertEquals(WcStatus.SUCCESS, Pair.await(cqB, 1, 20_000).get(0).status());
            assertEquals(0, p.a.transport().call(() -> p.a.transport().flow.inFlight), "everything acknowledged: nothing counted in flight");
        }
    }

    /**
     * A receiver whose buffer is smaller than the sender's (about 200 KB against 4 MiB): a sender counting only its own
     * buffer keeps 128 PSNs of 4 KiB in flight, more than twice what the receiver's kernel queues; told the peer's
     * buffer (as a jroce peer tells it out of band), it keeps within it and nothing is dropped or resent. The same
     * transfer with the sender not told is run first and its retransmissions printed, for comparison.
     */
    @Test
    void aSenderToldThePeersSmallerBufferKeepsWithinIt() throws Exception {
        int asked = 100_000;
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.15.6")).port(0).tailProbeMicros(0),
                new DeviceConfig(Pair.addr("127.77.15.7")).port(0).socketBufferBytes(asked).tailProbeMicros(0))) {
            int peerBuffer = p.b.receiveBufferBytes();
            assertTrue(peerBuffer < p.a.receiveBufferBytes() / 4, "the receiver's buffer is the smaller: " + peerBuffer);
            int n = 8 << 20;
            Regions rg = Regions.of(p, n, 11);
            MemoryRegion src = rg.src();
            MemoryRegion dst = rg.dst();
            byte[] data = rg.data();
            for (boolean told : new boolean[] {false, true}) {
                Pair.Conn c = connect(p, Mtu.MTU_4096, told ? 0x30 : 0x50, told ? 0x40 : 0x60, told ? peerBuffer : 0);
                assertEquals(told ? FlowBudget.capacity(peerBuffer, 4096) : Integer.MAX_VALUE,
                        (int) p.a.transport().call(c.qpA::peerWindow), "the window the peer's buffer allows");
                long resentBefore = p.a.counters().retransmits;
                dst.buffer().put(0, new byte[n]);
                c.qpA.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
                WorkCompletion wc = Pair.await(c.cqA, 1, 60_000).get(0);
                assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
                byte[] got = new byte[n];
                dst.buffer().get(0, got);
                assertArrayEquals(data, got);
                long resent = p.a.counters().retransmits - resentBefore;
                System.out.printf("FlowControlTest: peer buffer %d bytes %s: %d retransmissions, QP %s%n", peerBuffer,
                        told ? "told" : "not told", resent, c.qpA.counters());
                if (told) {
                    assertEquals(0, resent, "nothing dropped at the receiver's socket, so nothing resent: " + c.qpA.counters());
                    assertEquals(0, c.qpB.counters().seqNaksSent, "no gap seen by the responder: " + c.qpB.counters());
                }
            }
        }
    }

    private static Pair.Conn connect(Pair p, Mtu mtu, int psnA, int psnB) {
        return connect(p, mtu, psnA, psnB, 0);
    }

    /** A source region on A holding {@code n} random bytes ({@code seed}), and a writable target of that size on B. */
    private record Regions(MemoryRegion src, MemoryRegion dst, byte[] data) {
        static Regions of(Pair p, int n, long seed) {
            MemoryRegion src = p.pdA.allocateAndRegister(n, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(n, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            byte[] data = new byte[n];
            new Random(seed).nextBytes(data);
            src.buffer().put(data);
            return new Regions(src, dst, data);
        }
    }

    /**
     * An RC pair with a local ACK timeout of about 1 s (exponent 18) instead of the test default's 67 ms: a drop still
     * shows at once as a sequence NAK and a rewind (counted in {@code retransmits}), but a machine loaded by other work
     * does not fire the timer for packets that were only slow.
     */
    private static Pair.Conn connect(Pair p, Mtu mtu, int psnA, int psnB, int peerBufferOfB) {
        CompletionQueue cqA = p.a.createCq(16);
        CompletionQueue cqB = p.b.createCq(16);
        QueuePair qa = p.pdA.createQp(new QpInitAttr(cqA).maxSendWr(8).maxRecvWr(8));
        QueuePair qb = p.pdB.createQp(new QpInitAttr(cqB).maxSendWr(8).maxRecvWr(8));
        RcConnect.connectPair(qa, psnA, qb, psnB, RcConnect.Params.defaults().mtu(mtu).timeout(18).retryCnt(7));
        if (peerBufferOfB > 0) qa.setPeerReceiveBuffer(peerBufferOfB);
        return new Pair.Conn(qa, cqA, qb, cqB);
    }
}
