package io.jroce.endpoint;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeUnit;

/**
 * Runs the whole data path once, through the device's own socket, before the device is handed out.
 *
 * <p>A fresh JVM answers its first RoCE packets slowly: classes load, the interpreter runs the codec,
 * the queue pair engines and Netty's native send and receive paths, and the first packet pays for all
 * of it. Measured on two loopback processes, a cold responder took 33 ms from the first RDMA READ
 * request to its first response; with two emulated rdma_rxe guests sharing the machine it took over
 * 60 ms, close enough to rxe's 67 ms ACK timeout (exponent 14, what ibv_rc_pingpong and perftest set)
 * that rxe retried its READs. So the device connects two private queue pairs to each other (its own
 * address and port) and exchanges every operation type in both directions, single- and multi-packet,
 * a few rounds, before the pcap and the datagram filter are attached and the counters are zeroed.
 *
 * <p>Bounded: it gives up after {@link #BUDGET_NANOS} (for example when a packet filter drops the
 * host's own traffic) and never fails the device; after a warm-up cut short the device waits for its last packets to
 * arrive before going live, and the queue pair numbers it used are handed out again.
 */
final class Warmup {
    private static final Logger log = LoggerFactory.getLogger(Warmup.class);
    static final long BUDGET_NANOS = TimeUnit.SECONDS.toNanos(2);
    private static final int ROUNDS = 16;
    /** Completions of a warm-up that ran to the end: per round 8 sends and 3 receives. */
    static final int COMPLETIONS = ROUNDS * 11;
    /** Three packets at MTU 4096: FIRST, MIDDLE and LAST opcodes. */
    private static final int LARGE = 9000;
    private static final int SMALL = 64;
    private static final int REGION = 4 * LARGE;

    private Warmup() {
    }

    /** Returns the number of completions seen; logs and returns early on a problem. */
    static int run(Device dev) {
        long deadline = System.nanoTime() + dev.config().warmUpBudgetNanos;
        ProtectionDomain pd = dev.allocPd();
        MemoryRegion mr = pd.allocateAndRegister(REGION, Access.ALL);
        // not zeros: a capture of the warm-up (tcpdump on lo) then decodes cleanly in Wireshark too, whose
        // InfiniBand dissector takes a payload with two zero bytes at offset 2 for an Ethernet frame
        java.nio.ByteBuffer fill = mr.buffer();
        while (fill.hasRemaining()) fill.put((byte) 0x6A);
        CompletionQueue cq = dev.createCq(256);
        QueuePair a = null;
        QueuePair b = null;
        int seen = 0;
        try {
            a = pd.createQp(new QpInitAttr(cq).maxSendWr(16).maxRecvWr(16));
            b = pd.createQp(new QpInitAttr(cq).maxSendWr(16).maxRecvWr(16));
            RcConnect.connectPair(a, 0, b, 0, RcConnect.Params.defaults().mtu(Mtu.MTU_4096).rdAtomic(4).minRnrTimer(1).timeout(12)
                    .accessFlags(Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC));
            long atomicVa = (mr.address() + 2 * LARGE + 7) & ~7L;
            WorkCompletion[] wc = new WorkCompletion[32];
            for (int round = 0; round < ROUNDS; round++) {
                QueuePair requester = (round & 1) == 0 ? a : b;
                QueuePair responder = requester == a ? b : a;
                responder.postRecv(new ReceiveWorkRequest(1, Sge.of(mr, LARGE, LARGE)));
                responder.postRecv(new ReceiveWorkRequest(2, Sge.of(mr, LARGE, LARGE)));
                responder.postRecv(new ReceiveWorkRequest(3, Sge.of(mr, LARGE, LARGE)));
                requester.postSend(new SendWorkRequest(10, WrOpcode.SEND, Sge.of(mr, 0, SMALL)).signaled()
                        .next(new SendWorkRequest(11, WrOpcode.SEND_WITH_IMM, Sge.of(mr, 0, LARGE)).immData(round).signaled()
                        .next(new SendWorkRequest(12, WrOpcode.RDMA_WRITE, Sge.of(mr, 0, LARGE))
                                .remote(mr.address() + LARGE, mr.rkey()).signaled()
                        .next(new SendWorkRequest(13, WrOpcode.RDMA_WRITE_WITH_IMM, Sge.of(mr, 0, SMALL))
                                .remote(mr.address() + LARGE, mr.rkey()).immData(round).signaled()
                        .next(new SendWorkRequest(14, WrOpcode.RDMA_READ, Sge.of(mr, 0, LARGE))
                                .remote(mr.address() + LARGE, mr.rkey()).signaled()
                        .next(new SendWorkRequest(15, WrOpcode.RDMA_READ, Sge.of(mr, 0, SMALL))
                                .remote(mr.address() + LARGE, mr.rkey()).signaled()
                        .next(new SendWorkRequest(16, WrOpcode.ATOMIC_FETCH_AND_ADD, Sge.of(mr, 0, 8))
                                .remote(atomicVa, mr.rkey()).compareAdd(1).signaled()
                        .next(new SendWorkRequest(17, WrOpcode.ATOMIC_CMP_AND_SWP, Sge.of(mr, 0, 8))
                                .remote(atomicVa, mr.rkey()).compareAdd(0).swap(1).signaled()))))))));
                for (int want = 11; want > 0; ) { // 8 sends + 3 receives
                    long left = deadline - System.nanoTime();
                    int n = left <= 0 ? 0 : cq.poll(wc, wc.length, left, TimeUnit.NANOSECONDS);
                    if (n == 0) {
                        log.debug("warm-up of {} stopped after {} completions: out of time", dev.address().getHostAddress(), seen);
                        return seen;
                    }
                    for (int i = 0; i < n; i++) {
                        if (wc[i].status() != WcStatus.SUCCESS) {
                            log.debug("warm-up of {} stopped: {}", dev.address().getHostAddress(), wc[i]);
                            return seen + i;
                        }
                    }
                    seen += n;
                    want -= n;
                }
            }
            return seen;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return seen;
        } catch (RuntimeException e) {
            log.debug("warm-up of {} failed: {}", dev.address().getHostAddress(), e.toString());
            return seen;
        } finally {
            if (a != null) a.destroy();
            if (b != null) b.destroy();
            mr.deregister();
        }
    }
}
