package io.jroce.endpoint;

import io.jroce.endpoint.cm.CmAgent;
import io.jroce.endpoint.cm.CmConfig;
import io.jroce.endpoint.cm.CmEvent;
import io.jroce.endpoint.cm.CmEventChannel;
import io.jroce.endpoint.cm.CmEventType;
import io.jroce.endpoint.cm.CmId;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Devices with several event loops whose reuseport group carries the steering program ({@link ShardSteering}): the
 * kernel delivers every datagram to the socket of the loop that owns its destination QP, so no loop hands one over
 * ({@code shard_handoffs} stays 0), for data QPs and for QP 1 (the CM); with steering off the loops hand datagrams
 * over and the same traffic completes. Devices on 127.0.91.1 and 127.0.91.2, UDP port 4791 (IPv6: ::1, port 0).
 */
class ShardSteeringTest {
    private static final String A = "127.0.91.1";
    private static final String B = "127.0.91.2";
    private static final int QPS = 8;
    private static final int LEN = 3000; // three packets at MTU 1024
    private static final Duration T = Duration.ofSeconds(10);

    private static DeviceConfig config(String addr, int loops, boolean steer) {
        return new DeviceConfig(Pair.addr(addr)).port(addr.contains(":") ? 0 : 4791).eventLoops(loops).steer(steer);
    }

    /** Each shard's own count of datagrams read from its socket. */
    private static long[] readPerShard(Device d) {
        Transport[] all = d.shards().all;
        long[] n = new long[all.length];
        for (int i = 0; i < all.length; i++) {
            Transport t = all[i];
            n[i] = t.call(() -> t.counters().packetsIn);
        }
        return n;
    }

    @ParameterizedTest(name = "{0} event loops")
    @ValueSource(ints = {2, 3})
    void everyDatagramReachesItsQpsLoopWithoutHandoff(int loops) throws Exception {
        try (Pair p = new Pair(config(A, loops, true), config(B, loops, true))) {
            assertTrue(p.a.isShardSteered() && p.b.isShardSteered(), "the kernel took the program");
            exchange(p, loops, seed());
            for (Device d : List.of(p.a, p.b)) {
                DeviceCounters c = d.counters();
                long[] perShard = readPerShard(d);
                System.out.println("ShardSteeringTest: " + d.address() + " read per loop " + Arrays.toString(perShard) + "; " + c);
                assertEquals(0, c.shardHandoffs, "no datagram read by a loop that does not own its QP: " + c);
                assertEquals(0, c.totalDrops(), c.toString());
                for (int i = 0; i < loops; i++) assertTrue(perShard[i] > 0, "loop " + i + " read its QPs' datagrams itself");
            }
        }
    }

    /** The hand-off path, as on a kernel that refuses the program: the same traffic completes, handed over. */
    @Test
    void withSteeringOffLoopsHandDatagramsOver() throws Exception {
        try (Pair p = new Pair(config(A, 2, false), config(B, 2, false))) {
            assertFalse(p.a.isShardSteered());
            assertFalse(p.b.isShardSteered());
            exchange(p, 2, seed());
            for (Device d : List.of(p.a, p.b)) {
                DeviceCounters c = d.counters();
                System.out.println("ShardSteeringTest: steering off, " + d.address() + " " + c);
                // all of a peer's datagrams share one 4-tuple, so one socket reads them and hands the other loop its share
                assertTrue(c.shardHandoffs > 0, c.toString());
                assertEquals(0, c.totalDrops(), c.toString());
            }
        }
    }

    /** One loop: nothing to steer. */
    @Test
    void oneLoopIsNotSteered() throws Exception {
        try (Device d = Device.open(config(A, 1, true).warmUp(false))) {
            assertFalse(d.isShardSteered());
        }
    }

    /**
     * The refusal path: a socket that is in no reuseport group (a one-loop device binds without SO_REUSEPORT)
     * makes the kernel refuse the program (EINVAL, net/core/sock_reuseport.c reuseport_attach_prog), and the
     * reason comes back instead of an exception; a device whose shards got such an answer hands datagrams over.
     */
    @Test
    void aSocketOutsideAReuseportGroupRefusesTheProgram() throws Exception {
        try (Device d = Device.open(config(A, 1, true).warmUp(false))) {
            String refused = d.shards().first().port().steer(2);
            System.out.println("ShardSteeringTest: refused: " + refused);
            assertNotNull(refused, "the kernel refused");
            assertTrue(refused.toLowerCase(java.util.Locale.ROOT).contains("invalid argument"), refused);
        }
    }

    /**
     * Datagrams shaped as RoCE packets to chosen QPs, all from one source port: each is read by the socket of
     * {@link Shards#ownerIndex} of its QP (they are then dropped there, no such QP); one too short to hold the QP
     * goes to loop 0. With the 4-tuple hash alone they would all reach one socket.
     */
    @Test
    void theProgramPicksTheOwnersSocketByQpNumber() throws Exception {
        int loops = 3;
        int[] qpns = {1, 2, 3, 4, 5, 6, 7, 0x123456, 0xFFFFFF, 0x0F0F0F};
        try (Device d = Device.open(config(A, loops, true).warmUp(false));
             DatagramSocket s = new DatagramSocket(new InetSocketAddress(Pair.addr(B), 4791))) {
            assertTrue(d.isShardSteered());
            InetSocketAddress to = new InetSocketAddress(d.address(), d.port());
            long[] expected = new long[loops];
            for (int k = 0; k < qpns.length; k++) {
                byte[] b = new byte[16]; // BTH (12) + ICRC (4)
                b[0] = 0x04; // RC SEND_ONLY
                b[4] = (byte) (k % 2 == 0 ? 0 : 0xA5); // the reserved byte in front of the QP: not part of it
                b[5] = (byte) (qpns[k] >>> 16);
                b[6] = (byte) (qpns[k] >>> 8);
                b[7] = (byte) qpns[k];
                s.send(new DatagramPacket(b, b.length, to));
                expected[Shards.ownerIndex(qpns[k], loops)]++;
            }
            s.send(new DatagramPacket(new byte[4], 4, to)); // the load of word 4 fails: index 0
            expected[0]++;
            int total = qpns.length + 1;
            Pair.until("every datagram read", () -> d.counters().packetsIn == total);
            long[] perShard = readPerShard(d);
            System.out.println("ShardSteeringTest: read per loop " + Arrays.toString(perShard) + ", expected " + Arrays.toString(expected));
            assertArrayEquals(expected, perShard, "datagrams read by each loop");
            DeviceCounters c = d.counters();
            assertEquals(0, c.shardHandoffs, c.toString());
            assertEquals(1, c.drops(DropReason.MALFORMED), c.toString());
        }
    }

    /** The CM on QP 1 (loop 0) and the connections it sets up on QPs of both loops, with nothing handed over. */
    @Test
    void theCmOnQp1AndItsConnectionsAreSteered() throws Exception {
        try (Device a = Device.open(config(A, 2, true)); Device b = Device.open(config(B, 2, true));
             CmAgent cmA = CmAgent.open(a, cmConfig(1)); CmAgent cmB = CmAgent.open(b, cmConfig(2));
             CmEventChannel chA = new CmEventChannel(); CmEventChannel chB = new CmEventChannel()) {
            ProtectionDomain pdA = a.allocPd();
            ProtectionDomain pdB = b.allocPd();
            CompletionQueue cqA = a.createCq(64);
            CompletionQueue cqB = b.createCq(64);
            CmId listener = CmId.create(cmB, chB);
            listener.bind(19100);
            listener.listen(4);
            Set<Integer> shardsA = new HashSet<>();
            Set<Integer> shardsB = new HashSet<>();
            List<CmId> clients = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                CmId client = CmId.create(cmA, chA);
                client.createQp(pdA, new QpInitAttr(cqA));
                client.connect(b.address(), 19100, null);
                CmEvent req = chB.expect(CmEventType.CONNECT_REQUEST, T);
                req.id().createQp(pdB, new QpInitAttr(cqB));
                req.id().accept(null);
                chA.expect(CmEventType.ESTABLISHED, T);
                chB.expect(CmEventType.ESTABLISHED, T);
                QueuePair qa = client.qp();
                QueuePair qb = req.id().qp();
                shardsA.add(qa.tx.shard());
                shardsB.add(qb.tx.shard());
                MemoryRegion src = pdA.allocateAndRegister(LEN, Access.LOCAL_WRITE);
                MemoryRegion dst = pdB.allocateAndRegister(2 * LEN, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
                for (int k = 0; k < LEN; k++) src.buffer().put(k, (byte) (k * 7 + i));
                qb.postRecv(new ReceiveWorkRequest(10 + i, Sge.of(dst, LEN, LEN)));
                qa.postSend(Pair.chain(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(src, 0, LEN)).remote(dst.address(), dst.rkey())
                        .signaled(), new SendWorkRequest(2, WrOpcode.SEND, Sge.of(src, 0, LEN)).signaled()));
                Wcs.assertOk(Pair.awaitOne(cqA), 1, WcOpcode.RDMA_WRITE, LEN, qa);
                Wcs.assertOk(Pair.awaitOne(cqA), 2, WcOpcode.SEND, LEN, qa);
                Wcs.assertOk(Pair.awaitOne(cqB), 10 + i, WcOpcode.RECV, LEN, qb);
                byte[] sent = new byte[LEN];
                src.buffer().get(0, sent);
                byte[] got = new byte[LEN];
                dst.buffer().get(0, got);
                assertArrayEquals(sent, got, "WRITE payload");
                dst.buffer().get(LEN, got);
                assertArrayEquals(sent, got, "SEND payload");
                clients.add(client);
            }
            assertEquals(Set.of(0, 1), shardsA, "connections on QPs of both of A's loops");
            assertEquals(Set.of(0, 1), shardsB, "connections on QPs of both of B's loops");
            for (CmId c : clients) {
                c.disconnect();
                chA.expect(CmEventType.DISCONNECTED, T);
                chB.expect(CmEventType.DISCONNECTED, T);
            }
            for (Device d : List.of(a, b)) {
                DeviceCounters c = d.counters();
                System.out.println("ShardSteeringTest: CM, " + d.address() + " " + c);
                assertTrue(d.isShardSteered());
                assertEquals(0, c.shardHandoffs, c.toString());
                assertEquals(0, c.totalDrops(), c.toString());
            }
        }
    }

    /** IPv6 (udp6 pulls the same UDP header before the program runs). */
    @Test
    void ipv6DevicesAreSteered() throws Exception {
        try (Pair p = new Pair(config("::1", 2, true), config("::1", 2, true))) {
            assertTrue(p.a.isShardSteered() && p.b.isShardSteered());
            exchange(p, 2, seed());
            for (Device d : List.of(p.a, p.b)) {
                DeviceCounters c = d.counters();
                assertEquals(0, c.shardHandoffs, c.toString());
                assertEquals(0, c.totalDrops(), c.toString());
                for (long n : readPerShard(d)) assertTrue(n > 0, "each loop read datagrams: " + Arrays.toString(readPerShard(d)));
            }
        }
    }

    private static long seed() {
        long seed = new SplittableRandom().nextLong();
        System.out.println("ShardSteeringTest: seed " + seed);
        return seed;
    }

    private static CmConfig cmConfig(long seed) {
        return CmConfig.defaults().cmResponseTimeout(14).packetLifeTime(8).maxCmRetries(4).seed(seed);
    }

    /**
     * {@link #QPS} connected QP pairs, spread over every loop of both devices; on each, a WRITE and a SEND of
     * {@link #LEN} bytes in both directions at once; every completion and every byte checked.
     */
    private static void exchange(Pair p, int loops, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        CompletionQueue scqA = p.a.createCq(QPS * 4);
        CompletionQueue rcqA = p.a.createCq(QPS * 4);
        CompletionQueue scqB = p.b.createCq(QPS * 4);
        CompletionQueue rcqB = p.b.createCq(QPS * 4);
        int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE;
        QueuePair[] as = new QueuePair[QPS];
        QueuePair[] bs = new QueuePair[QPS];
        MemoryRegion[] srcA = new MemoryRegion[QPS];
        MemoryRegion[] srcB = new MemoryRegion[QPS];
        MemoryRegion[] dstA = new MemoryRegion[QPS];
        MemoryRegion[] dstB = new MemoryRegion[QPS];
        Set<Integer> shardsA = new HashSet<>();
        Set<Integer> shardsB = new HashSet<>();
        for (int i = 0; i < QPS; i++) {
            as[i] = p.pdA.createQp(new QpInitAttr(scqA, rcqA).maxSendWr(8).maxRecvWr(8));
            bs[i] = p.pdB.createQp(new QpInitAttr(scqB, rcqB).maxSendWr(8).maxRecvWr(8));
            Pair.bringUp(as[i], p.b, bs[i].qpNum(), Mtu.MTU_1024, 200, 100, 1, 1);
            Pair.bringUp(bs[i], p.a, as[i].qpNum(), Mtu.MTU_1024, 100, 200, 1, 1);
            shardsA.add(as[i].tx.shard());
            shardsB.add(bs[i].tx.shard());
            srcA[i] = filled(p.pdA, rnd);
            srcB[i] = filled(p.pdB, rnd);
            // [WRITE target | SEND target]
            dstA[i] = p.pdA.allocateAndRegister(2 * LEN, access);
            dstB[i] = p.pdB.allocateAndRegister(2 * LEN, access);
        }
        assertEquals(loops, shardsA.size(), "QPs on every loop of A");
        assertEquals(loops, shardsB.size(), "QPs on every loop of B");
        for (int i = 0; i < QPS; i++) {
            as[i].postRecv(new ReceiveWorkRequest(i, Sge.of(dstA[i], LEN, LEN)));
            bs[i].postRecv(new ReceiveWorkRequest(i, Sge.of(dstB[i], LEN, LEN)));
        }
        for (int i = 0; i < QPS; i++) {
            post(as[i], srcA[i], dstB[i]);
            post(bs[i], srcB[i], dstA[i]);
        }
        checkSends(scqA, as);
        checkSends(scqB, bs);
        checkRecvs(rcqA, as);
        checkRecvs(rcqB, bs);
        for (int i = 0; i < QPS; i++) {
            assertArrayEquals(bytes(srcB[i], 0), bytes(dstA[i], 0), "WRITE B->A on QP " + i);
            assertArrayEquals(bytes(srcB[i], 0), bytes(dstA[i], LEN), "SEND B->A on QP " + i);
            assertArrayEquals(bytes(srcA[i], 0), bytes(dstB[i], 0), "WRITE A->B on QP " + i);
            assertArrayEquals(bytes(srcA[i], 0), bytes(dstB[i], LEN), "SEND A->B on QP " + i);
        }
    }

    private static MemoryRegion filled(ProtectionDomain pd, SplittableRandom rnd) {
        MemoryRegion mr = pd.allocateAndRegister(LEN, Access.LOCAL_WRITE);
        byte[] b = new byte[LEN];
        rnd.nextBytes(b);
        mr.buffer().put(0, b);
        return mr;
    }

    private static void post(QueuePair qp, MemoryRegion src, MemoryRegion peerDst) {
        qp.postSend(Pair.chain(
                new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(src, 0, LEN)).remote(peerDst.address(), peerDst.rkey()).signaled(),
                new SendWorkRequest(2, WrOpcode.SEND, Sge.of(src, 0, LEN)).signaled()));
    }

    private static void checkSends(CompletionQueue cq, QueuePair[] qps) {
        List<WorkCompletion> wcs = Pair.await(cq, 2 * QPS, 30_000);
        for (QueuePair qp : qps) {
            List<WorkCompletion> mine = wcs.stream().filter(wc -> wc.qpNum() == qp.qpNum()).toList();
            assertEquals(2, mine.size(), "send completions of QP " + qp.qpNum() + ": " + mine);
            Wcs.assertOk(mine.get(0), 1, WcOpcode.RDMA_WRITE, LEN, qp);
            Wcs.assertOk(mine.get(1), 2, WcOpcode.SEND, LEN, qp);
        }
    }

    private static void checkRecvs(CompletionQueue cq, QueuePair[] qps) {
        List<WorkCompletion> wcs = Pair.await(cq, QPS, 30_000);
        for (int i = 0; i < qps.length; i++) {
            int qpn = qps[i].qpNum();
            List<WorkCompletion> mine = wcs.stream().filter(wc -> wc.qpNum() == qpn).toList();
            assertEquals(1, mine.size(), "receive completions of QP " + qpn + ": " + mine);
            Wcs.assertOk(mine.get(0), i, WcOpcode.RECV, LEN, qps[i]);
        }
    }

    private static byte[] bytes(MemoryRegion mr, int off) {
        byte[] b = new byte[LEN];
        mr.buffer().get(off, b);
        return b;
    }
}
