package io.jroce.endpoint;

import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The invoked device ({@link AgentMode#INVOKED}): the thread that polls runs the device, the thread that posts
 * sends at once, a standby keeps an unpolled device answering, and verbs from other threads still work.
 */
class InvokedAgentTest {
    private static DeviceConfig invoked(String address) {
        return new DeviceConfig(Pair.addr(address)).agentMode(AgentMode.INVOKED);
    }

    @Test
    void theReceivingCompletionIsProducedOnThePollingThread() throws Exception {
        // the standby waits 60 s: while this thread polls, no other thread may run either device
        try (Pair p = new Pair(invoked("127.0.0.1").standbyAfterMicros(60_000_000), invoked("127.0.0.2").standbyAfterMicros(60_000_000))) {
            assertEquals(AgentMode.INVOKED, p.b.transport().agent().mode());
            Pair.Conn c = p.connect(Mtu.MTU_1024, 100, 200);
            MemoryRegion src = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(64, Access.LOCAL_WRITE);
            AtomicReference<Thread> producer = new AtomicReference<>();
            c.cqB.setEventListener(() -> producer.set(Thread.currentThread()));
            for (int i = 0; i < 100; i++) {
                c.qpB.postRecv(new ReceiveWorkRequest(i, Sge.of(dst)));
                c.cqB.requestNotify(false);
                producer.set(null);
                src.buffer().putInt(0, i);
                c.qpA.postSend(new SendWorkRequest(i, WrOpcode.SEND, Sge.of(src)).signaled());
                WorkCompletion r = Pair.awaitOne(c.cqB);
                assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
                assertEquals(i, dst.buffer().getInt(0));
                // the completion was pushed (and its event raised) by this thread's own cycle, not handed over
                // from another thread
                assertSame(Thread.currentThread(), producer.get(), "receive " + i);
                WorkCompletion s = Pair.awaitOne(c.cqA);
                assertEquals(WcStatus.SUCCESS, s.status(), s.toString());
            }
            assertTrue(p.b.transport().agent().invokedCycles() > 0);
            assertEquals(0, p.b.transport().agent().standbyCycles(), "the standby never ran B");
        }
    }

    @Test
    void aThreadWatchingMemoryReceivesAWriteByProgress() throws Exception {
        // no standby within the test: only B's own progress() calls can receive the WRITE
        try (Pair p = new Pair(invoked("127.0.0.1"), invoked("127.0.0.2").standbyAfterMicros(60_000_000))) {
            Pair.Conn c = p.connect(Mtu.MTU_1024, 3, 4);
            MemoryRegion src = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            src.buffer().put(63, (byte) 7);
            c.qpA.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            boolean ran = false;
            while (dst.buffer().get(63) != 7) {
                assertTrue(System.nanoTime() < deadline, "the WRITE arrived");
                ran |= p.b.progress();
            }
            assertTrue(ran, "this thread ran B");
            assertEquals(0, p.b.transport().agent().standbyCycles(), "the standby never ran B");
            assertEquals(WcStatus.SUCCESS, Pair.awaitOne(c.cqA).status());
            try (Device dedicated = Device.open(new DeviceConfig(Pair.addr("127.0.0.3")).agentMode(AgentMode.DEDICATED))) {
                assertFalse(dedicated.progress(), "a dedicated device is run by its own thread");
            }
        }
    }

    @Test
    void aDeviceNobodyPollsStillAnswersThroughItsStandby() throws Exception {
        try (Pair p = new Pair(invoked("127.0.0.1"), invoked("127.0.0.2"))) {
            Pair.Conn c = p.connect(Mtu.MTU_1024, 0, 0);
            int n = 256 * 1024;
            MemoryRegion src = p.pdA.allocateAndRegister(n, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(n, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
            for (int i = 0; i < n; i++) src.buffer().put(i, (byte) (i * 31));
            long standbyBefore = p.b.transport().agent().standbyCycles();
            // B's application never polls: its standby thread must execute the WRITE and acknowledge it
            c.qpA.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
            WorkCompletion w = Pair.awaitOne(c.cqA);
            assertEquals(WcStatus.SUCCESS, w.status(), w.toString());
            for (int i = 0; i < n; i++) assertEquals((byte) (i * 31), dst.buffer().get(i), "byte " + i);
            assertTrue(p.b.transport().agent().standbyCycles() > standbyBefore, "B's standby ran the device");
        }
    }

    @Test
    void verbsFromAnotherThreadWorkWhileTheOwnerBlocksInAPoll() throws Exception {
        try (Pair p = new Pair(invoked("127.0.0.1"), invoked("127.0.0.2"))) {
            Pair.Conn c = p.connect(Mtu.MTU_1024, 7, 9);
            MemoryRegion src = p.pdA.allocateAndRegister(32, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(32, Access.LOCAL_WRITE);
            c.qpB.postRecv(new ReceiveWorkRequest(5, Sge.of(dst)));
            // this thread blocks in B's poll (driving B); another thread asks B for its counters and posts on A
            CompletableFuture<DeviceCounters> counters = CompletableFuture.supplyAsync(() -> p.b.counters());
            CompletableFuture<Void> post = CompletableFuture.runAsync(() ->
                    c.qpA.postSend(new SendWorkRequest(6, WrOpcode.SEND, Sge.of(src)).signaled()));
            WorkCompletion r = Pair.awaitOne(c.cqB);
            assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
            assertNotNull(counters.get(10, TimeUnit.SECONDS));
            post.get(10, TimeUnit.SECONDS);
            assertEquals(WcStatus.SUCCESS, Pair.awaitOne(c.cqA).status());
        }
    }

    @Test
    void anErrorRaisedInACycleIsReportedToThePoller() throws Exception {
        try (Pair p = new Pair(invoked("127.0.0.1"), invoked("127.0.0.2"))) {
            Pair.Conn c = p.connect(Mtu.MTU_1024, 1, 2);
            MemoryRegion src = p.pdA.allocateAndRegister(32, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(32, Access.LOCAL_WRITE);
            // a WRITE to an rkey B never issued: B NAKs it (remote access error) and A's poll reports it
            c.qpA.postSend(new SendWorkRequest(3, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey() ^ 0x100).signaled());
            WorkCompletion w = Pair.awaitOne(c.cqA);
            assertEquals(WcStatus.REM_ACCESS_ERR, w.status(), w.toString());
        }
    }
}
