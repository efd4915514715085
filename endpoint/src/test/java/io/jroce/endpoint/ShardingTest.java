package io.jroce.endpoint;

import io.jroce.endpoint.fault.FaultInjector;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelInboundHandlerAdapter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Devices with several event loops ({@link DeviceConfig#eventLoops}): every QP is owned by one loop, datagrams the
 * kernel gives another loop's socket are handed over, and RC traffic on many QPs in both directions completes
 * exactly as on one loop. The tests of the hand-off turn steering off ({@link ShardSteering}: with it the kernel
 * gives each loop only its own QPs' datagrams); {@link ShardSteeringTest} tests steering. Addresses 127.77.52.x,
 * ports chosen by the kernel.
 */
class ShardingTest {
    private static final int QPS = 16;
    private static final int ROUNDS = 4;
    private static final int LEN = 3000; // three packets at MTU 1024: FIRST, MIDDLE, LAST

    private static DeviceConfig config(String addr, int loops) {
        return new DeviceConfig(Pair.addr(addr)).port(0).eventLoops(loops);
    }

    /** A device whose loops hand each other datagrams: the kernel picks their socket by the 4-tuple hash alone. */
    private static DeviceConfig handingOver(String addr, int loops) {
        return config(addr, loops).steer(false);
    }

    /** One side of a connection: its QP and buffers. */
    private record End(QueuePair qp, MemoryRegion src, MemoryRegion dst, MemoryRegion recv) {
    }

    @ParameterizedTest(name = "{0} and {1} event loops, steered {2}, GSO {3}")
    @CsvSource({"2, 2, false, false", "4, 4, false, false", "2, 4, false, false", "2, 4, true, false", "2, 4, true, true"})
    void manyQpsExchangeEveryOperationBothWays(int loopsA, int loopsB, boolean steer, boolean gso) throws Exception {
        long seed = new SplittableRandom().nextLong();
        System.out.println("ShardingTest: seed " + seed);
        SplittableRandom rnd = new SplittableRandom(seed);
        // GSO: a run holds one QP's packets, so the steering program, which reads a super-datagram's first BTH only,
        // still gives every packet to its QP's loop
        try (Pair p = new Pair(config("127.77.52.1", loopsA).steer(steer).gso(gso), config("127.77.52.2", loopsB).steer(steer).gso(gso))) {
            assertEquals(loopsA, p.a.eventLoops());
            assertEquals(loopsB, p.b.eventLoops());
            // one send CQ and one receive CQ per device, shared by QPs of every loop: several producers
            CompletionQueue scqA = p.a.createCq(QPS * 64);
            CompletionQueue rcqA = p.a.createCq(QPS * 64);
            CompletionQueue scqB = p.b.createCq(QPS * 64);
            CompletionQueue rcqB = p.b.createCq(QPS * 64);
            int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
            MemoryRegion wordA = p.pdA.allocateAndRegister(8, access);
            MemoryRegion wordB = p.pdB.allocateAndRegister(8, access);
            End[] as = new End[QPS];
            End[] bs = new End[QPS];
            Set<Integer> shardsA = new HashSet<>();
            Set<Integer> shardsB = new HashSet<>();
            for (int i = 0; i < QPS; i++) {
                QueuePair qa = p.pdA.createQp(new QpInitAttr(scqA, rcqA).maxSendWr(64).maxRecvWr(64));
                QueuePair qb = p.pdB.createQp(new QpInitAttr(scqB, rcqB).maxSendWr(64).maxRecvWr(64));
                connect(qa, p.b, qb, p.a, rnd.nextInt(1 << 24), rnd.nextInt(1 << 24));
                as[i] = end(p.pdA, qa, access, rnd);
                bs[i] = end(p.pdB, qb, access, rnd);
                shardsA.add(qa.tx.shard());
                shardsB.add(qb.tx.shard());
            }
            assertEquals(loopsA, shardsA.size(), "QPs spread over every loop of A");
            assertEquals(loopsB, shardsB.size(), "QPs spread over every loop of B");

            for (int round = 0; round < ROUNDS; round++) {
                // every QP: SEND, WRITE, READ, FETCH_ADD and CMP_SWAP, both ways at once
                for (int i = 0; i < QPS; i++) {
                    post(as[i], bs[i], wordB, round, i);
                    post(bs[i], as[i], wordA, round, i);
                }
                try {
                    check(as, bs, scqA, rcqB, round);
                    check(bs, as, scqB, rcqA, round);
                } catch (AssertionError e) {
                    System.out.println("ShardingTest: failed in round " + round + "\nA " + p.a.counters() + "\nB " + p.b.counters());
                    for (int i = 0; i < QPS; i++) System.out.println("  A " + as[i].qp.describe() + "\n  B " + bs[i].qp.describe());
                    throw e;
                }
            }
            // every fetch-add on the one word, from QPs of every loop, counted once: atomic across loops
            assertEquals((long) QPS * ROUNDS, wordA.getLong(0));
            assertEquals((long) QPS * ROUNDS, wordB.getLong(0));

            for (Device d : List.of(p.a, p.b)) {
                DeviceCounters c = d.counters();
                System.out.println("ShardingTest: " + d.address() + " " + c);
                assertEquals(steer, d.isShardSteered());
                if (gso) assertTrue(c.gsoDatagrams > 0, "GSO runs sent: " + c);
                if (steer) {
                    // the kernel gives each loop's socket its own QPs' datagrams
                    assertEquals(0, c.shardHandoffs, "no handoff: " + c);
                } else {
                    // jroce sends every packet from the device's one port: each peer's datagrams all reach one socket,
                    // and that loop hands the other loops' QPs their share
                    assertTrue(c.shardHandoffs > 0, "handoffs counted: " + c);
                }
                for (DropReason r : List.of(DropReason.UNKNOWN_QP, DropReason.WRONG_SOURCE, DropReason.ICRC,
                        DropReason.MALFORMED, DropReason.HANDOFF_OVERFLOW)) {
                    assertEquals(0, c.drops(r), r + ": " + c);
                }
                assertEquals(QPS, d.qpCount());
                assertEquals(QPS, d.queuePairs().size());
            }
        }
    }

    /**
     * Connects {@code qa} of A and {@code qb} of B with a local ACK timeout of 268 ms (exponent 16) instead of 67 ms:
     * on a loaded shared machine a cold JVM's first rounds can keep a loop off the CPU longer than 67 ms, and eight
     * such timeouts in a row would fail a QP that lost nothing.
     */
    private static void connect(QueuePair qa, Device b, QueuePair qb, Device a, int psnA, int psnB) {
        RcConnect.Params params = RcConnect.Params.defaults().mtu(Mtu.MTU_1024).maxRdAtomic(4).maxDestRdAtomic(4).minRnrTimer(1)
                .timeout(16).accessFlags(Pair.QP_ACCESS);
        RcConnect.connect(qa, new RcConnect.Peer(b.address(), b.port(), qb.qpNum(), psnB), psnA, params);
        RcConnect.connect(qb, new RcConnect.Peer(a.address(), a.port(), qa.qpNum(), psnA), psnB, params);
    }

    private static End end(ProtectionDomain pd, QueuePair qp, int access, SplittableRandom rnd) {
        MemoryRegion src = pd.allocateAndRegister(ROUNDS * LEN, access);
        byte[] bytes = new byte[ROUNDS * LEN];
        rnd.nextBytes(bytes);
        src.buffer().put(bytes);
        // dst: [WRITE target | READ target | two atomic results]
        return new End(qp, src, pd.allocateAndRegister(2 * ROUNDS * LEN + 16, access), pd.allocateAndRegister(ROUNDS * LEN, access));
    }

    /** From {@code from} to {@code to}: a receive at {@code to}, then SEND, WRITE, READ and two atomics. */
    private static void post(End from, End to, MemoryRegion word, int round, int i) {
        long off = (long) round * LEN;
        to.qp.postRecv(new ReceiveWorkRequest(round, Sge.of(to.recv, (int) off, LEN)));
        long base = round * 10L;
        from.qp.postSend(Pair.chain(
                new SendWorkRequest(base + 1, WrOpcode.SEND, Sge.of(from.src, (int) off, LEN)).signaled(),
                new SendWorkRequest(base + 2, WrOpcode.RDMA_WRITE, Sge.of(from.src, (int) off, LEN))
                        .remote(to.dst.address() + off, to.dst.rkey()).signaled(),
                new SendWorkRequest(base + 3, WrOpcode.RDMA_READ, Sge.of(from.dst, (int) (ROUNDS * LEN + off), LEN))
                        .remote(to.src.address() + off, to.src.rkey()).signaled(),
                new SendWorkRequest(base + 4, WrOpcode.ATOMIC_FETCH_AND_ADD, Sge.of(from.dst, 2 * ROUNDS * LEN, 8))
                        .remote(word.address(), word.rkey()).compareAdd(1).signaled(),
                // compare with a value the word never holds at this point: no swap, but a full atomic round trip
                new SendWorkRequest(base + 5, WrOpcode.ATOMIC_CMP_AND_SWP, Sge.of(from.dst, 2 * ROUNDS * LEN + 8, 8))
                        .remote(word.address(), word.rkey()).compareAdd(-1).swap(0).signaled()));
    }

    /** All QPs' five send completions and the peer's receive, in order per QP, and the bytes where they belong. */
    private static void check(End[] from, End[] to, CompletionQueue scq, CompletionQueue rcq, int round) {
        Map<Integer, Integer> index = new HashMap<>();
        for (int i = 0; i < QPS; i++) index.put(from[i].qp.qpNum(), i);
        Map<Integer, List<WorkCompletion>> byQp = new HashMap<>();
        for (WorkCompletion wc : Pair.await(scq, QPS * 5, 30_000)) byQp.computeIfAbsent(wc.qpNum(), k -> new ArrayList<>()).add(wc);
        WcOpcode[] ops = {WcOpcode.SEND, WcOpcode.RDMA_WRITE, WcOpcode.RDMA_READ, WcOpcode.FETCH_ADD, WcOpcode.COMP_SWAP};
        int[] lens = {LEN, LEN, LEN, 8, 8};
        for (int i = 0; i < QPS; i++) {
            List<WorkCompletion> wcs = byQp.get(from[i].qp.qpNum());
            assertEquals(5, wcs.size(), "completions of QP " + i + ": " + wcs);
            for (int k = 0; k < 5; k++) Wcs.assertOk(wcs.get(k), round * 10L + k + 1, ops[k], lens[k], from[i].qp);
        }
        Map<Integer, WorkCompletion> recvs = new HashMap<>();
        for (WorkCompletion wc : Pair.await(rcq, QPS, 30_000)) recvs.put(wc.qpNum(), wc);
        int off = round * LEN;
        for (int i = 0; i < QPS; i++) {
            Wcs.assertOk(recvs.get(to[i].qp.qpNum()), round, WcOpcode.RECV, LEN, to[i].qp);
            byte[] sent = bytes(from[i].src, off, LEN);
            assertArrayEquals(sent, bytes(to[i].recv, off, LEN), "SEND payload of QP " + i);
            assertArrayEquals(sent, bytes(to[i].dst, off, LEN), "WRITE payload of QP " + i);
            assertArrayEquals(bytes(to[i].src, off, LEN), bytes(from[i].dst, ROUNDS * LEN + off, LEN), "READ payload of QP " + i);
        }
        assertTrue(index.size() == QPS);
    }

    private static byte[] bytes(MemoryRegion mr, int off, int len) {
        byte[] b = new byte[len];
        mr.buffer().duplicate().position(off).get(b);
        return b;
    }

    /**
     * Peers on many source ports (as rdma_rxe uses one per QP), steering off: the kernel spreads their datagrams
     * over the loops' sockets by the 4-tuple hash, and every datagram still reaches the loop of its QP.
     */
    @Test
    void everySourcePortReachesTheOwner() throws Exception {
        int peers = 8;
        Device b = Device.open(handingOver("127.77.52.3", 2));
        List<Device> senders = new ArrayList<>();
        try {
            ProtectionDomain pdB = b.allocPd();
            CompletionQueue cqB = b.createCq(peers * 4);
            MemoryRegion recv = pdB.allocateAndRegister(peers * 64, Access.LOCAL_WRITE);
            List<QueuePair> qbs = new ArrayList<>();
            List<QueuePair> qas = new ArrayList<>();
            List<CompletionQueue> cqAs = new ArrayList<>();
            for (int i = 0; i < peers; i++) {
                Device a = Device.open(new DeviceConfig(Pair.addr("127.77.52.4")).port(0).warmUp(false)); // its own source port
                senders.add(a);
                CompletionQueue cqA = a.createCq(4);
                QueuePair qa = a.allocPd().createQp(new QpInitAttr(cqA));
                QueuePair qb = pdB.createQp(new QpInitAttr(cqB));
                Pair.bringUp(qa, b, qb.qpNum(), Mtu.MTU_1024, 0, 100, 1, 1);
                Pair.bringUp(qb, a, qa.qpNum(), Mtu.MTU_1024, 100, 0, 1, 1);
                qb.postRecv(new ReceiveWorkRequest(i, Sge.of(recv, i * 64, 64)));
                qas.add(qa);
                qbs.add(qb);
                cqAs.add(cqA);
            }
            for (int i = 0; i < peers; i++) {
                MemoryRegion src = qas.get(i).pd().allocateAndRegister(64, 0);
                src.buffer().put(0, (byte) i);
                qas.get(i).postSend(new SendWorkRequest(i, WrOpcode.SEND, Sge.of(src, 0, 64)).signaled());
            }
            for (int i = 0; i < peers; i++) Wcs.assertOk(Pair.awaitOne(cqAs.get(i)), i, WcOpcode.SEND, 64, qas.get(i));
            Set<Integer> received = new HashSet<>();
            for (WorkCompletion wc : Pair.await(cqB, peers, 10_000)) {
                assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
                received.add((int) wc.wrId());
                assertEquals(wc.wrId(), recv.buffer().get((int) wc.wrId() * 64), "payload of " + wc);
            }
            assertEquals(peers, received.size());
            DeviceCounters c = b.counters();
            long[] perLoop = new long[2];
            for (int i = 0; i < 2; i++) {
                Transport t = b.shards().all[i];
                perLoop[i] = t.call(() -> t.counters().packetsIn);
            }
            System.out.println("ShardingTest: datagrams read per loop " + java.util.Arrays.toString(perLoop) + "; " + c);
            assertTrue(c.packetsIn >= peers, "a SEND per peer (and any tail-loss probe of a cold sender): " + c);
            assertEquals(0, c.totalDrops(), c.toString());
            assertTrue(c.shardHandoffs > 0, "some arrived on the other loop's socket: " + c);
        } finally {
            for (Device d : senders) d.close();
            b.close();
        }
    }

    /** Under loss, reordering, duplication and corruption, devices of two loops recover as one-loop devices do. */
    @Test
    void recoversUnderChaosWithTwoLoops() throws Exception {
        QpCounters[] sums = SoakTest.soak("ShardingTest chaos", 0, "127.77.52.5", "127.77.52.6", 2);
        // the soak itself checks every message, the atomics, the drops and that recovery retransmitted
        assertTrue(sums[0].retries + sums[1].seqNaksSent + sums[1].outOfOrder > 0, "losses seen by the engines: " + sums[0] + " " + sums[1]);
    }

    /** IPv6: the handed-over datagram carries its 16-byte sender, which the owner checks the ICRC and the source with. */
    @Test
    void ipv6DevicesOfTwoLoops() throws Exception {
        try (Pair p = new Pair(handingOver("::1", 2), handingOver("::1", 2))) {
            CompletionQueue cqA = p.a.createCq(64);
            CompletionQueue cqB = p.b.createCq(64);
            MemoryRegion src = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(64 * 8, Access.LOCAL_WRITE);
            List<QueuePair> qas = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                QueuePair qa = p.pdA.createQp(new QpInitAttr(cqA));
                QueuePair qb = p.pdB.createQp(new QpInitAttr(cqB));
                connect(qa, p.b, qb, p.a, 1, 2);
                qb.postRecv(new ReceiveWorkRequest(i, Sge.of(dst, i * 64, 64)));
                qas.add(qa);
            }
            for (int i = 0; i < 8; i++) qas.get(i).postSend(new SendWorkRequest(i, WrOpcode.SEND, Sge.of(src, 0, 64)).signaled());
            for (WorkCompletion wc : Pair.await(cqA, 8, 10_000)) assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            for (WorkCompletion wc : Pair.await(cqB, 8, 10_000)) assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            DeviceCounters c = p.b.counters();
            assertTrue(c.shardHandoffs > 0, c.toString());
            assertEquals(0, c.totalDrops(), c.toString());
        }
    }

    /** The loops share one pcap writer: every datagram sent and received is one whole record, none lost or torn. */
    @Test
    void onePcapForAllLoops(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("a.pcap");
        long packets;
        try (Pair p = new Pair(handingOver("127.77.52.12", 2).pcap(file).tailProbeMicros(0), handingOver("127.77.52.13", 2).tailProbeMicros(0))) {
            CompletionQueue cqA = p.a.createCq(256);
            CompletionQueue cqB = p.b.createCq(256);
            MemoryRegion src = p.pdA.allocateAndRegister(3000, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(3000, Access.LOCAL_WRITE);
            List<QueuePair> qas = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                QueuePair qa = p.pdA.createQp(new QpInitAttr(cqA).maxSendWr(8));
                QueuePair qb = p.pdB.createQp(new QpInitAttr(cqB).maxRecvWr(8));
                connect(qa, p.b, qb, p.a, 1, 2);
                for (int k = 0; k < 4; k++) qb.postRecv(new ReceiveWorkRequest(k, Sge.of(dst, 0, 3000)));
                qas.add(qa);
            }
            for (QueuePair qa : qas) {
                for (int k = 0; k < 4; k++) qa.postSend(new SendWorkRequest(k, WrOpcode.SEND, Sge.of(src, 0, 3000)).signaled());
            }
            for (WorkCompletion wc : Pair.await(cqA, 64, 30_000)) assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            Pair.await(cqB, 64, 30_000);
            DeviceCounters c = p.a.counters();
            assertTrue(c.shardHandoffs > 0, c.toString());
            packets = c.packetsIn + c.packetsOut;
        }
        // every datagram counted so far is recorded by close (one still in a handoff queue when the counters were
        // read, too); an ACK for messages already complete may still come in after the read
        List<io.jroce.wire.pcap.PcapFrame> frames = io.jroce.wire.pcap.PcapReader.readAll(file);
        assertTrue(frames.size() >= packets && frames.size() <= packets + 64, frames.size() + " records, " + packets + " datagrams");
        io.jroce.wire.RocePacket roce = new io.jroce.wire.RocePacket();
        for (io.jroce.wire.pcap.PcapFrame f : frames) {
            assertTrue(f.isUdp(), "frame " + f.frameNumber());
            assertEquals(io.jroce.wire.Problem.NONE, roce.decode(f.asByteBuf(), f.udpPayloadOffset(), f.udpPayloadLength()),
                    "frame " + f.frameNumber() + " is a whole RoCE packet");
        }
    }

    @Test
    void oneLoopIsTheDefaultAndNeverHandsOff() throws Exception {
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.52.7")).port(0), new DeviceConfig(Pair.addr("127.77.52.8")).port(0))) {
            assertEquals(1, p.a.eventLoops());
            Pair.Conn c = p.connect(Mtu.MTU_1024, 1, 2);
            MemoryRegion mr = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            MemoryRegion rb = p.pdB.allocateAndRegister(64, Access.LOCAL_WRITE);
            c.qpB.postRecv(new ReceiveWorkRequest(1, Sge.of(rb, 0, 64)));
            c.qpA.postSend(new SendWorkRequest(2, WrOpcode.SEND, Sge.of(mr, 0, 64)).signaled());
            Wcs.assertOk(Pair.awaitOne(c.cqA), 2, WcOpcode.SEND, 64, c.qpA);
            assertEquals(0, p.a.counters().shardHandoffs);
            assertEquals(0, p.b.counters().shardHandoffs);
        }
    }

    @Test
    void nioRunsOneLoop() throws Exception {
        try (Device d = Device.open(config("127.77.52.9", 2).preferEpoll(false).warmUp(false))) {
            assertEquals(1, d.eventLoops());
        }
    }

    @Test
    void loopCountIsChecked() {
        DeviceConfig c = new DeviceConfig(Pair.addr("127.77.52.10"));
        assertThrows(IllegalArgumentException.class, () -> c.eventLoops(0));
        assertThrows(IllegalArgumentException.class, () -> c.eventLoops(65));
        assertEquals(64, c.eventLoops(64).eventLoops());
    }

    /** A filter sits on every loop's socket, so it must be sharable; the fault injector is. */
    @Test
    void aFilterMustBeSharable() throws Exception {
        class Tap extends ChannelInboundHandlerAdapter implements DatagramFilter {
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Device.open(config("127.77.52.11", 2).filter(new Tap()).warmUp(false)));
        assertTrue(e.getMessage().contains("@Sharable"), e.getMessage());
        assertTrue(FaultInjector.class.isAnnotationPresent(ChannelHandler.Sharable.class));
        FaultInjector chaos = FaultInjector.builder().seed(1).build();
        try (Device d = Device.open(config("127.77.52.11", 2).filter(chaos).warmUp(false))) {
            assertEquals(2, d.eventLoops());
        }
    }
}
