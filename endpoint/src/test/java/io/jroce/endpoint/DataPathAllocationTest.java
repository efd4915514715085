package io.jroce.endpoint;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandler;
import io.netty.util.concurrent.FastThreadLocalThread;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The threads that move packets allocate nothing per packet in steady state, on send and on receive, in both agent
 * modes: the socket is read without an address and an envelope per datagram ({@link DirectReceive}), packets leave
 * in reused envelopes ({@link SendEnvelope}) or, alone in a flush, without Netty's {@code sendto} copies
 * ({@link DirectSend}), or, gathering the payload from the region, through one {@code sendmmsg} of their own
 * ({@link GatherSend}). Measured with the JVM's per-thread allocation counter over a stream of RDMA WRITEs and a
 * ping-pong of small SENDs, after a warm-up; what is left is time-based (timer tasks), a few bytes per packet at
 * most. Before these paths the same measure gave about 80 bytes per packet (JFR: a DatagramPacket per packet sent;
 * an InetSocketAddress, an Inet4Address and a DatagramPacket per datagram received).
 */
class DataPathAllocationTest {
    /** Bytes per packet (counted once by the sender and once by the receiver) the loop threads may allocate. */
    private static final double LIMIT = 16;
    private static final int MSG = 64 * 1024;

    @Test
    void dedicatedLoopsAllocateNothingPerPacket() throws Exception {
        try (Pair p = new Pair(config("127.0.31.11", AgentMode.DEDICATED), config("127.0.31.12", AgentMode.DEDICATED))) {
            assertTrue(p.a.transport().isEpoll(), "the epoll transport");
            assertTrue(p.a.transport().call(() -> p.a.transport().port().isDirectReceive()), "the socket is read directly");
            long[] loops = {loopThread(p.a), loopThread(p.b)};
            Pair.Conn c = p.connect(Mtu.MTU_4096, 100, 200);
            Stream s = new Stream(p, c);
            s.writes(2000); // warm-up: JIT, pools and caches filled
            s.pingPong(3000);
            long before = allocated(loops);
            long packets0 = packets(p);
            s.writes(400);
            s.pingPong(2000);
            double perPacket = (allocated(loops) - before) / (double) (packets(p) - packets0);
            System.out.printf("DataPathAllocationTest dedicated: %.2f bytes per packet%n", perPacket);
            assertTrue(perPacket < LIMIT, perPacket + " bytes allocated per packet by the event loops");
            SendEnvelope.Pool pool = p.a.transport().port().envelopes();
            assertTrue(pool.made < 2048, "envelopes reused: " + pool.made + " made for " + p.a.counters().packetsOut + " packets");
            GatherSend gatherA = p.a.transport().port().gather();
            GatherSend gatherB = p.b.transport().port().gather();
            if (gatherB != null) {
                // every datagram leaves through the gathering sender; the WRITEs' payload from the region
                assertTrue(gatherB.sent > 1000, "ACKs and small SENDs sent directly: " + gatherB.sent);
                assertTrue(gatherA.gathered > 2400 * (MSG / 4096), "WRITE packets gathered from the region: " + gatherA.gathered);
            } else {
                assertTrue(p.b.transport().port().directSend().sent > 1000, "ACKs and small SENDs left alone in their flush, directly");
            }
            assertEquals(0, p.a.counters().totalDrops() + p.b.counters().totalDrops(), "drops");
        }
    }

    @Test
    void invokedDriversAllocateNothingPerPacket() throws Exception {
        // the driving thread must be one Netty pools objects on (AgentMode.INVOKED): a FastThreadLocalThread
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicReference<Double> result = new AtomicReference<>();
        Thread t = new FastThreadLocalThread(() -> {
            try (Pair p = new Pair(config("127.0.31.13", AgentMode.INVOKED), config("127.0.31.14", AgentMode.INVOKED))) {
                Pair.Conn c = p.connect(Mtu.MTU_4096, 100, 200);
                Stream s = new Stream(p, c);
                s.writes(2000);
                s.pingPong(3000);
                List<Thread> drivers = new ArrayList<>(List.of(Thread.currentThread()));
                drivers.addAll(standbys());
                long[] ids = drivers.stream().mapToLong(Thread::getId).toArray();
                long before = allocated(ids);
                long packets0 = packets(p);
                s.writes(400);
                s.pingPong(2000);
                result.set((allocated(ids) - before) / (double) (packets(p) - packets0));
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "allocation-test-driver");
        t.start();
        t.join(120_000);
        if (failure.get() != null) throw new AssertionError(failure.get());
        assertNotNull(result.get(), "the driver finished");
        System.out.printf("DataPathAllocationTest invoked: %.2f bytes per packet%n", result.get());
        assertTrue(result.get() < LIMIT, result.get() + " bytes allocated per packet by the driving threads");
    }

    @Test
    void aDatagramFilterGetsNettysPlainPath() throws Exception {
        DatagramFilter pass = new PassFilter();
        try (Pair p = new Pair(config("127.0.31.15", AgentMode.DEDICATED).filter(pass), config("127.0.31.16", AgentMode.DEDICATED))) {
            UdpPort port = p.a.transport().port();
            assertNull(port.envelopes(), "plain envelopes while a filter is installed");
            assertNull(port.directSend(), "Netty sends while a filter is installed");
            assertTrue(!p.a.transport().call(port::isDirectReceive), "Netty reads while a filter is installed");
            Pair.Conn c = p.connect(Mtu.MTU_4096, 100, 200);
            new Stream(p, c).writes(4);
            assertEquals(0, p.a.counters().totalDrops() + p.b.counters().totalDrops(), "drops");
        }
    }

    /** A filter that passes everything. */
    @ChannelHandler.Sharable
    private static final class PassFilter extends ChannelDuplexHandler implements DatagramFilter {
    }

    private static DeviceConfig config(String addr, AgentMode mode) {
        return new DeviceConfig(Pair.addr(addr)).port(0).agentMode(mode);
    }

    private static long loopThread(Device d) {
        return d.transport().call(() -> Thread.currentThread().getId());
    }

    private static List<Thread> standbys() {
        List<Thread> out = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("jroce-standby-127.0.31.1")) out.add(t);
        }
        return out;
    }

    private static long allocated(long[] threads) {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long sum = 0;
        for (long id : threads) sum += Math.max(0, mx.getThreadAllocatedBytes(id));
        return sum;
    }

    private static long packets(Pair p) {
        return p.a.counters().packetsOut + p.a.counters().packetsIn + p.b.counters().packetsOut + p.b.counters().packetsIn;
    }

    /** RDMA WRITEs of 64 KiB from a to b, and 64-byte SENDs back and forth, with work requests made once. */
    private static final class Stream {
        private final Pair.Conn c;
        private final SendWorkRequest write;
        private final SendWorkRequest sendA;
        private final SendWorkRequest sendB;
        private final ReceiveWorkRequest recvA;
        private final ReceiveWorkRequest recvB;
        private final WorkCompletion[] wcs = new WorkCompletion[16];

        Stream(Pair p, Pair.Conn c) {
            this.c = c;
            MemoryRegion src = p.pdA.allocateAndRegister(MSG, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(MSG, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            MemoryRegion smallA = p.pdA.allocateAndRegister(128, Access.LOCAL_WRITE);
            MemoryRegion smallB = p.pdB.allocateAndRegister(128, Access.LOCAL_WRITE);
            write = new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled();
            sendA = new SendWorkRequest(2, WrOpcode.SEND, new Sge(smallA.address(), 64, smallA.lkey())).signaled();
            sendB = new SendWorkRequest(3, WrOpcode.SEND, new Sge(smallB.address() + 64, 64, smallB.lkey())).signaled();
            recvA = new ReceiveWorkRequest(4, new Sge(smallA.address() + 64, 64, smallA.lkey()));
            recvB = new ReceiveWorkRequest(5, new Sge(smallB.address(), 64, smallB.lkey()));
        }

        /** {@code n} WRITEs, 8 in flight. */
        void writes(int n) throws InterruptedException {
            int posted = 0;
            int done = 0;
            while (done < n) {
                while (posted < n && posted - done < 8) {
                    c.qpA.postSend(write);
                    posted++;
                }
                done += await(c.cqA, 1);
            }
        }

        /** {@code n} round trips of a 64-byte SEND from a to b and back. */
        void pingPong(int n) throws InterruptedException {
            for (int i = 0; i < n; i++) {
                c.qpB.postRecv(recvB);
                c.qpA.postRecv(recvA);
                c.qpA.postSend(sendA);
                await(c.cqB, 1); // b's receive
                c.qpB.postSend(sendB);
                await(c.cqA, 2); // a's send and a's receive
                await(c.cqB, 1); // b's send
            }
        }

        private int await(CompletionQueue cq, int n) throws InterruptedException {
            int got = 0;
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (got < n) {
                int k = cq.poll(wcs, n - got, 1, java.util.concurrent.TimeUnit.MILLISECONDS);
                for (int i = 0; i < k; i++) {
                    if (wcs[i].status() != WcStatus.SUCCESS) throw new AssertionError(wcs[i].toString());
                }
                got += k;
                if (System.nanoTime() > deadline) throw new AssertionError("timed out waiting for completions on " + cq);
            }
            return got;
        }
    }
}
