package io.jroce.it;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.DeviceConfig;
import io.jroce.endpoint.DeviceCounters;
import io.jroce.endpoint.DropReason;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpAttr;
import io.jroce.endpoint.QpCounters;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WcOpcode;
import io.jroce.endpoint.WcStatus;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;
import io.jroce.wire.Aeth;
import io.jroce.wire.AethView;
import io.jroce.wire.AtomicEthView;
import io.jroce.wire.BthView;
import io.jroce.wire.Icrc;
import io.jroce.wire.Opcode;
import io.jroce.wire.Psn;
import io.jroce.wire.RethView;
import io.jroce.wire.RoceV2;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * A victim node (device V on 127.0.11.2) with live, verified RC traffic to its peer (device P on 127.0.11.1, same
 * JVM) is hit by a seeded fuzzer with well over 100,000 hostile datagrams: from a socket on 127.0.11.3 (a stranger,
 * and the remote end of two "attack" QPs the victim has connected to it, so hostile requests reach the responder's
 * access checks) and from a socket on the peer's own address 127.0.11.1 with another UDP port (spoofing the peer).
 *
 * <p>What is guaranteed and asserted (RoCE has no authentication, so a spoofer that knows the QPN and a PSN inside
 * the live window can legitimately disturb a connection; this test never sends such packets to the legit QP):
 * <ul>
 * <li>junk (random bytes, truncated headers, reserved opcodes, bad TVer/pad, bad ICRC, unknown QPN, wrong source)
 *     is dropped and counted under a {@link DropReason}; valid-ICRC junk gets past the ICRC check;</li>
 * <li>requests on a connected QP whose PSN is far outside the window never execute (no byte moves, the QP stays
 *     RTS); responses naming PSNs never sent are ignored (counted as unexpected responses);</li>
 * <li>in-sequence hostile requests (wrong rkey, no remote access, out-of-range VA, DMA length up to 2^32-1, READ
 *     larger than the region, misaligned / out-of-range atomics, bad lengths, bad opcode sequence) are NAKed with
 *     the right code and move no byte;</li>
 * <li>spoofed requests with a PSN far ahead cause at most one PSN-sequence NAK per gap; the legit flow completes,
 *     possibly through retransmission, and every byte it moved is verified;</li>
 * <li>guard bytes around every registered region are untouched, a region without remote access stays intact, and
 *     no datagram the victim sends to the fuzzer contains its bytes or guard bytes;</li>
 * <li>heap after GC stays bounded.</li>
 * </ul>
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class HostileInputIT {
    static final InetAddress P_ADDR = Verbs.addr("127.0.11.1");
    static final InetAddress V_ADDR = Verbs.addr("127.0.11.2");
    static final InetAddress F_ADDR = Verbs.addr("127.0.11.3");
    static final int GUARD = 64;
    static final byte CANARY = (byte) 0xCA;
    static final int ATTACK_MTU = 1024;
    static final int FAKE_QPN_BULK = 0x000066;
    static final int FAKE_QPN_SYNC = 0x000077;

    final long seed = Long.getLong("jroce.seed", System.nanoTime());
    final Random rnd = new Random(seed);

    /** A QP number in the upper half that no QP of the victim holds (its numbers start at a random point). */
    int unknownQpn() {
        while (true) {
            int q = 0x800000 | rnd.nextInt(0x7FFFFF);
            if (v.queuePairs().stream().noneMatch(qp -> qp.qpNum() == q)) return q;
        }
    }

    // victim memory: one arena, regions are slices with canary guards between them
    ByteBuffer arena;
    final List<int[]> guards = new ArrayList<>();
    MemoryRegion vRw;      // legit WRITE target / READ source (REMOTE_WRITE | REMOTE_READ)
    MemoryRegion vAtomic;  // legit atomics (REMOTE_ATOMIC)
    MemoryRegion vRecv;    // legit SEND receive buffers (local only)
    MemoryRegion vLocal;   // victim's own requester buffers (local only)
    MemoryRegion vSecret;  // no remote access at all, filled with a secret pattern
    MemoryRegion vFuzz;    // ALL access: the attack QPs may legitimately use it
    byte[] secret;
    final Set<Long> secretWords = new HashSet<>();

    Device p;
    Device v;
    QueuePair qpP;
    QueuePair qpV;
    CompletionQueue cqP;
    CompletionQueue cqV;
    QueuePair attackBulk; // stays RTS; hit with far-PSN requests and unsolicited responses
    QueuePair attackSync; // re-armed for every in-sequence hostile request
    static final int P_PSN = 0x100000;
    static final int V_PSN = 0x200000;
    int attackBulkRqPsn;
    int attackBulkSqPsn;

    DatagramSocket fuzz;  // 127.0.11.3
    DatagramSocket spoof; // 127.0.11.1, another port
    InetSocketAddress victim;
    final Icrc icrc = new Icrc();
    final BthView bth = new BthView();
    final RethView reth = new RethView();
    final AethView aeth = new AethView();
    final AtomicEthView atomicEth = new AtomicEthView();
    final byte[] out = new byte[4200];
    final ByteBuf outBuf = Unpooled.wrappedBuffer(out);
    final BlockingQueue<byte[]> replies = new LinkedBlockingQueue<>();
    final AtomicLong repliesSeen = new AtomicLong();
    final AtomicReference<String> leak = new AtomicReference<>();
    long sent;
    long paceBaseVIn;
    long paceBasePOut;
    long paceSent;

    enum Kind {
        RANDOM_BYTES, TRUNCATED, OPCODE_SWEEP, BAD_TVER, BAD_PAD, UNKNOWN_QPN, WRONG_SOURCE, BAD_ICRC,
        FAR_PSN_REQUEST, UNSOLICITED_RESPONSE, HOSTILE_IN_SEQUENCE, SPOOF_RESPONSE_AHEAD, SPOOF_REQUEST_AHEAD, SPOOF_REQUEST_BEHIND
    }

    final Map<Kind, Long> sentBy = new EnumMap<>(Kind.class);

    @Test
    void victimSurvivesHostileDatagramsWithLiveTraffic() throws Exception {
        System.out.println("HostileInputIT seed: -Djroce.seed=" + seed);
        long t0 = System.nanoTime();
        long heapBefore = Verbs.usedHeapAfterGc();
        p = Device.open(new DeviceConfig(P_ADDR));
        v = Device.open(new DeviceConfig(V_ADDR));
        try {
            setUp();
            Legit legit = new Legit();
            legit.iteration(0); // sanity before any junk
            Thread lt = new Thread(legit, "legit-traffic");
            lt.start();
            Thread rx = new Thread(this::receiveReplies, "fuzz-rx");
            rx.setDaemon(true);
            rx.start();

            DeviceCounters v0 = v.counters();
            DeviceCounters p0 = p.counters();
            QpCounters qv0 = qpV.counters();
            QpCounters qb0 = attackBulk.counters();
            paceBaseVIn = v0.packetsIn;
            paceBasePOut = p0.packetsOut;

            bulk(90_000);
            int hostile = inSequenceAttacks(3_000);
            spoofing(12_000);
            waitQuiet();

            legit.stop = true;
            lt.join(60_000);
            assertTrue(!lt.isAlive(), "legit traffic thread did not finish");
            if (legit.failure.get() != null) throw new AssertionError("legit traffic failed during the attack", legit.failure.get());
            assertTrue(legit.done >= 20, "legit traffic made too little progress: " + legit.done + " iterations");

            DeviceCounters v1 = v.counters();
            DeviceCounters p1 = p.counters();
            QpCounters qv1 = qpV.counters();
            QpCounters qb1 = attackBulk.counters();
            printTable(v0, v1, p0, p1, qv0, qv1, qb0, qb1, legit.done);

            // -- accounting ------------------------------------------------------------------------------
            long d = v1.packetsIn - v0.packetsIn;
            long legitIn = p1.packetsOut - p0.packetsOut;
            long junkIn = d - legitIn;
            assertTrue(sent >= 100_000, "sent " + sent);
            assertTrue(junkIn >= sent * 99 / 100 && junkIn <= sent + 64,
                    "victim received " + junkIn + " junk datagrams, fuzzer sent " + sent);
            long dropΔ = v1.totalDrops() - v0.totalDrops();
            long ghostΔ = v1.ghostResponse - v0.ghostResponse;
            long qpLevel = (qb1.outOfOrder - qb0.outOfOrder) + (qb1.duplicatesSeen - qb0.duplicatesSeen)
                    + (qv1.outOfOrder - qv0.outOfOrder) + (qv1.duplicatesSeen - qv0.duplicatesSeen);
            long accounted = dropΔ + ghostΔ + qpLevel + hostile;
            // READ/atomic duplicates are counted twice (duplicatesSeen and DUPLICATE_UNKNOWN): allow for that
            long dupUnknown = v1.drops(DropReason.DUPLICATE_UNKNOWN) - v0.drops(DropReason.DUPLICATE_UNKNOWN);
            assertTrue(accounted - dupUnknown >= sent * 98 / 100 && accounted - dupUnknown <= sent + legitIn / 10 + 64,
                    "counters account for " + (accounted - dupUnknown) + " of " + sent + " hostile datagrams");
            long icrcΔ = v1.drops(DropReason.ICRC) - v0.drops(DropReason.ICRC);
            assertTrue(icrcΔ >= sentBy.get(Kind.BAD_ICRC), "bad-ICRC datagrams not all dropped for ICRC");
            assertTrue(icrcΔ <= sentBy.get(Kind.BAD_ICRC) + sentBy.get(Kind.RANDOM_BYTES),
                    "valid-ICRC datagrams were dropped for ICRC (" + icrcΔ + "): the sender's IPv4 ID/DF assumption failed");
            assertTrue(v1.drops(DropReason.UNKNOWN_QP) - v0.drops(DropReason.UNKNOWN_QP) >= sentBy.get(Kind.UNKNOWN_QPN),
                    "valid-ICRC packets to unknown QPs must reach the QP lookup");
            assertTrue(v1.drops(DropReason.WRONG_SOURCE) - v0.drops(DropReason.WRONG_SOURCE) >= sentBy.get(Kind.WRONG_SOURCE),
                    "packets for a connected QP from a stranger must be dropped as WRONG_SOURCE");
            assertTrue(v1.drops(DropReason.MALFORMED) - v0.drops(DropReason.MALFORMED)
                    >= sentBy.get(Kind.BAD_TVER) + sentBy.get(Kind.BAD_PAD), "bad TVer / pad must be MALFORMED");
            assertTrue(ghostΔ >= sentBy.get(Kind.SPOOF_RESPONSE_AHEAD),
                    "spoofed responses for PSNs never sent must be ignored as unexpected, got " + ghostΔ);
            assertTrue(qv1.outOfOrder - qv0.outOfOrder >= sentBy.get(Kind.SPOOF_REQUEST_AHEAD), "spoofed ahead requests");
            // at most one sequence NAK per gap: a gap closes only when the expected (legit) packet arrives
            long legitReq = qv1.packetsIn - qv0.packetsIn;
            assertTrue(qv1.seqNaksSent - qv0.seqNaksSent <= legitReq + 1,
                    "more sequence NAKs than gaps: " + (qv1.seqNaksSent - qv0.seqNaksSent));

            // -- the victim is alive ---------------------------------------------------------------------
            assertEquals(QpState.RTS, qpV.state(), "legit victim QP: " + qpV.errorReason());
            assertEquals(QpState.RTS, qpP.state(), "legit peer QP: " + qpP.errorReason());
            assertEquals(QpState.RTS, attackBulk.state(), "far-PSN requests must not execute: " + attackBulk.errorReason());
            legit.iteration(legit.done + 1); // a final verified exchange after the attack

            // -- memory safety ---------------------------------------------------------------------------
            for (int[] g : guards) {
                for (int i = g[0]; i < g[1]; i++) {
                    if (arena.get(i) != CANARY) fail("guard byte at arena offset " + i + " was overwritten: 0x" + Integer.toHexString(arena.get(i) & 0xFF));
                }
            }
            byte[] nowSecret = new byte[secret.length];
            vSecret.buffer().get(nowSecret);
            assertArrayEquals(secret, nowSecret, "the region without remote access was written");
            assertTrue(repliesSeen.get() > 0, "the fuzzer saw no replies at all");
            if (leak.get() != null) fail(leak.get());

            heapCheck(heapBefore);
            System.out.printf("HostileInputIT: %d hostile datagrams, %d legit iterations, %.1f s%n", sent, legit.done + 2,
                    (System.nanoTime() - t0) / 1e9);
        } finally {
            if (fuzz != null) fuzz.close();
            if (spoof != null) spoof.close();
            try {
                v.close();
            } finally {
                p.close();
            }
        }
    }

    private void heapCheck(long before) {
        long after = Verbs.usedHeapAfterGc();
        System.out.printf("heap used after GC: before %.1f MiB, after %.1f MiB%n", before / 1048576.0, after / 1048576.0);
        assertTrue(after - before < 64L << 20, "heap grew by " + (after - before) + " bytes");
    }

    // ------------------------------------------------------------------------------------------------
    // setup

    private void setUp() throws Exception {
        ProtectionDomain pdV = v.allocPd();
        int[] sizes = {64 << 10, 4 << 10, 64 << 10, 16 << 10, 16 << 10, 16 << 10};
        int total = GUARD;
        for (int s : sizes) total += s + GUARD;
        arena = ByteBuffer.allocateDirect(total + 64);
        for (int i = 0; i < arena.capacity(); i++) arena.put(i, CANARY);
        int off = GUARD;
        MemoryRegion[] mrs = new MemoryRegion[sizes.length];
        int[] access = {
            Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ,
            Access.LOCAL_WRITE | Access.REMOTE_ATOMIC,
            Access.LOCAL_WRITE,
            Access.LOCAL_WRITE,
            Access.LOCAL_WRITE,
            Access.ALL,
        };
        guards.add(new int[] {0, GUARD});
        for (int i = 0; i < sizes.length; i++) {
            ByteBuffer slice = arena.duplicate().position(off).limit(off + sizes[i]).slice();
            for (int k = 0; k < sizes[i]; k++) slice.put(k, (byte) 0);
            mrs[i] = pdV.registerMemory(slice, access[i]);
            off += sizes[i];
            guards.add(new int[] {off, off + GUARD});
            off += GUARD;
        }
        vRw = mrs[0];
        vAtomic = mrs[1];
        vRecv = mrs[2];
        vLocal = mrs[3];
        vSecret = mrs[4];
        vFuzz = mrs[5];
        assertEquals(0, vAtomic.address() & 7, "arena slices must stay 8-byte aligned");
        secret = new byte[vSecret.length()];
        new Random(seed ^ 0x5EC12E7L).nextBytes(secret);
        vSecret.buffer().put(secret);
        ByteBuffer sw = ByteBuffer.wrap(secret);
        for (int i = 0; i + 8 <= secret.length; i++) secretWords.add(sw.getLong(i));
        byte[] fz = new byte[vFuzz.length()];
        new Random(seed ^ 0xF022L).nextBytes(fz);
        vFuzz.buffer().put(fz);

        ProtectionDomain pdP = p.allocPd();
        legitP = new LegitP(pdP);
        cqP = p.createCq(256);
        cqV = v.createCq(256);
        qpP = pdP.createQp(new QpInitAttr(cqP).maxSendWr(32).maxRecvWr(32));
        qpV = pdV.createQp(new QpInitAttr(cqV).maxSendWr(32).maxRecvWr(32));
        Verbs.connect(qpP, qpV, Mtu.MTU_1024, P_PSN, V_PSN, 4);

        fuzz = new DatagramSocket(new InetSocketAddress(F_ADDR, 0));
        fuzz.setSoTimeout(200);
        fuzz.setReceiveBufferSize(4 << 20);
        spoof = new DatagramSocket(new InetSocketAddress(P_ADDR, 0));
        victim = new InetSocketAddress(V_ADDR, v.port());

        CompletionQueue cqA = v.createCq(64);
        attackBulk = pdV.createQp(new QpInitAttr(cqA).maxSendWr(8).maxRecvWr(8));
        attackBulkRqPsn = rnd.nextInt() & Psn.MASK;
        attackBulkSqPsn = rnd.nextInt() & Psn.MASK;
        Verbs.bringUp(attackBulk, F_ADDR, fuzz.getLocalPort(), FAKE_QPN_BULK, Mtu.MTU_1024, attackBulkRqPsn, attackBulkSqPsn, 4);
        attackSync = pdV.createQp(new QpInitAttr(v.createCq(64)).maxSendWr(8).maxRecvWr(8));
        for (Kind k : Kind.values()) sentBy.put(k, 0L);
    }

    LegitP legitP;

    /** The peer's buffers. */
    static final class LegitP {
        final MemoryRegion src;
        final MemoryRegion dst;
        final MemoryRegion result;
        final MemoryRegion remote; // the victim's requester WRITEs into and READs from this

        LegitP(ProtectionDomain pd) {
            src = pd.allocateAndRegister(64 << 10, Access.LOCAL_WRITE);
            dst = pd.allocateAndRegister(64 << 10, Access.LOCAL_WRITE);
            result = pd.allocateAndRegister(64, Access.LOCAL_WRITE);
            remote = pd.allocateAndRegister(64 << 10, Access.ALL);
        }
    }

    // ------------------------------------------------------------------------------------------------
    // legit traffic: WRITE, READ, SEND, FETCH_ADD, CMP_SWAP from the peer; WRITE and READ from the victim

    final class Legit implements Runnable {
        volatile boolean stop;
        volatile int done;
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final Random data = new Random(seed ^ 0x1E617L);
        long fetchAddExpect;
        long casExpect;

        @Override
        public void run() {
            try {
                int i = 1;
                while (!stop) {
                    iteration(i++);
                    done = i - 1;
                }
            } catch (Throwable t) {
                failure.set(t);
            }
        }

        void iteration(int i) {
            int slot = (i % 8) * 4096;
            byte[] w = new byte[4096];
            data.nextBytes(w);
            legitP.src.buffer().put(w);
            post(qpP, new SendWorkRequest(i, WrOpcode.RDMA_WRITE, Sge.of(legitP.src, 0, 4096))
                    .remote(vRw.address() + slot, vRw.rkey()).signaled());
            ok(cqP, WcOpcode.RDMA_WRITE);
            byte[] landed = new byte[4096];
            vRw.buffer().position(slot).get(landed);
            assertArrayEquals(w, landed, "WRITE " + i + " landed wrong");

            post(qpP, new SendWorkRequest(i, WrOpcode.RDMA_READ, Sge.of(legitP.dst, 0, 4096))
                    .remote(vRw.address() + slot, vRw.rkey()).signaled());
            ok(cqP, WcOpcode.RDMA_READ);
            byte[] back = new byte[4096];
            legitP.dst.buffer().get(back);
            assertArrayEquals(w, back, "READ " + i + " returned wrong bytes");

            byte[] msg = new byte[1000];
            data.nextBytes(msg);
            legitP.src.buffer().position(8192).put(msg);
            int rslot = (i % 16) * 4096;
            qpV.postRecv(new ReceiveWorkRequest(i, Sge.of(vRecv, rslot, 4096)));
            post(qpP, new SendWorkRequest(i, WrOpcode.SEND, Sge.of(legitP.src, 8192, 1000)).signaled());
            ok(cqP, WcOpcode.SEND);
            WorkCompletion r = ok(cqV, WcOpcode.RECV);
            assertEquals(1000, r.byteLen());
            byte[] got = new byte[1000];
            vRecv.buffer().position(rslot).get(got);
            assertArrayEquals(msg, got, "SEND " + i + " delivered wrong bytes");

            post(qpP, new SendWorkRequest(i, WrOpcode.ATOMIC_FETCH_AND_ADD, Sge.of(legitP.result, 0, 8))
                    .remote(vAtomic.address(), vAtomic.rkey()).compareAdd(3).signaled());
            ok(cqP, WcOpcode.FETCH_ADD);
            assertEquals(fetchAddExpect, legitP.result.getLong(0), "FETCH_ADD original");
            fetchAddExpect += 3;
            post(qpP, new SendWorkRequest(i, WrOpcode.ATOMIC_CMP_AND_SWP, Sge.of(legitP.result, 8, 8))
                    .remote(vAtomic.address() + 8, vAtomic.rkey()).compareAdd(casExpect).swap(casExpect + 1).signaled());
            ok(cqP, WcOpcode.COMP_SWAP);
            assertEquals(casExpect, legitP.result.getLong(8), "CMP_SWAP original");
            casExpect++;
            assertEquals(fetchAddExpect, vAtomic.getLong(0));
            assertEquals(casExpect, vAtomic.getLong(8));

            // the victim as requester
            byte[] vw = new byte[2048];
            data.nextBytes(vw);
            vLocal.buffer().put(vw);
            post(qpV, new SendWorkRequest(i, WrOpcode.RDMA_WRITE, Sge.of(vLocal, 0, 2048))
                    .remote(legitP.remote.address() + slot, legitP.remote.rkey()).signaled());
            ok(cqV, WcOpcode.RDMA_WRITE);
            post(qpV, new SendWorkRequest(i, WrOpcode.RDMA_READ, Sge.of(vLocal, 8192, 2048))
                    .remote(legitP.remote.address() + slot, legitP.remote.rkey()).signaled());
            ok(cqV, WcOpcode.RDMA_READ);
            byte[] vr = new byte[2048];
            vLocal.buffer().position(8192).get(vr);
            assertArrayEquals(vw, vr, "victim's WRITE+READ " + i + " round trip");
        }

        private void post(QueuePair qp, SendWorkRequest wr) {
            qp.postSend(wr);
        }

        private WorkCompletion ok(CompletionQueue cq, WcOpcode op) {
            WorkCompletion wc = Verbs.await(cq, 1, 20_000).get(0);
            if (wc.status() != WcStatus.SUCCESS || wc.opcode() != op) {
                throw new AssertionError("expected successful " + op + ", got " + wc + " (peer QP " + qpP.state() + " "
                        + qpP.errorReason() + ", victim QP " + qpV.state() + " " + qpV.errorReason() + ")");
            }
            return wc;
        }
    }

    // ------------------------------------------------------------------------------------------------
    // the fuzzer's receive side: every datagram the victim sends to 127.0.11.3 is scanned for leaked bytes

    private void receiveReplies() {
        byte[] buf = new byte[65536];
        DatagramPacket dp = new DatagramPacket(buf, buf.length);
        while (!fuzz.isClosed()) {
            try {
                fuzz.receive(dp);
            } catch (SocketTimeoutException e) {
                continue;
            } catch (Exception e) {
                return;
            }
            byte[] b = Arrays.copyOf(dp.getData(), dp.getLength());
            repliesSeen.incrementAndGet();
            scanForLeak(b);
            replies.add(b);
        }
    }

    private void scanForLeak(byte[] b) {
        ByteBuffer bb = ByteBuffer.wrap(b);
        int run = 0;
        for (int i = 0; i < b.length; i++) {
            run = b[i] == CANARY ? run + 1 : 0;
            if (run >= 8) {
                leak.compareAndSet(null, "a datagram to the fuzzer contains guard (canary) bytes at offset " + i);
                return;
            }
            if (i + 8 <= b.length && secretWords.contains(bb.getLong(i))) {
                leak.compareAndSet(null, "a datagram to the fuzzer contains 8 bytes of the no-remote-access region at offset " + i);
                return;
            }
        }
    }

    // ------------------------------------------------------------------------------------------------
    // sending

    private void sendRaw(DatagramSocket s, int len, Kind kind) throws Exception {
        s.send(new DatagramPacket(out, 0, len, victim));
        sent++;
        sentBy.merge(kind, 1L, Long::sum);
        if (++paceSent % 128 == 0) pace();
    }

    /** Keeps the victim's socket buffer from overflowing: waits until it has read what was sent (plus the peer's traffic). */
    private void pace() {
        long want = sent;
        Verbs.waitFor(() -> v.counters().packetsIn - paceBaseVIn >= want + (p.counters().packetsOut - paceBasePOut) - 64, 2_000);
    }

    private void waitQuiet() {
        Verbs.waitFor(() -> v.counters().packetsIn - paceBaseVIn >= sent + (p.counters().packetsOut - paceBasePOut), 5_000);
    }

    /** Writes a header for {@code opcode} into {@code out}; returns the header length. */
    private int header(int opcode, int destQp, int psn, boolean ackReq, int pad) {
        Opcode op = Opcode.of(opcode);
        int hl = op != null ? op.headerLength() : 12 + 4 * rnd.nextInt(8);
        for (int i = 12; i < hl; i++) out[i] = (byte) rnd.nextInt();
        bth.wrap(outBuf, 0).write(opcode, rnd.nextBoolean(), false, pad, RoceV2.DEFAULT_PKEY, destQp, ackReq, psn);
        return hl;
    }

    /** Appends payload + pad + ICRC after {@code hl} header bytes; returns the datagram length (ICRC valid). */
    private int finish(int hl, int payload, int pad, InetAddress src, int srcPort) {
        for (int i = 0; i < payload; i++) out[hl + i] = (byte) rnd.nextInt();
        for (int i = 0; i < pad; i++) out[hl + payload + i] = 0;
        int len = hl + payload + pad + 4;
        icrc.writeIpv4(Verbs.ipv4(src), Verbs.ipv4(V_ADDR), 0, Icrc.IPV4_DF, srcPort, RoceV2.UDP_PORT, outBuf, 0, len);
        return len;
    }

    private int fuzzPort() {
        return fuzz.getLocalPort();
    }

    private static final int[] REQUESTS = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x13, 0x14, 0x16, 0x17};
    private static final int[] RESPONSES = {0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12};

    /** A plausible request: header fields from the hostile menu, payload length legal for the opcode at MTU 1024. */
    private int request(int opcode, int destQp, int psn, InetAddress src, int srcPort) {
        Opcode op = Opcode.of(opcode);
        int hl = header(opcode, destQp, psn, rnd.nextBoolean(), 0);
        if (op.hasReth()) hostileReth(reth.wrap(outBuf, op.rethOffset()));
        if (op.hasAtomicEth()) hostileAtomic(atomicEth.wrap(outBuf, op.atomicEthOffset()));
        int payload = switch (op.position()) {
            case FIRST, MIDDLE -> ATTACK_MTU;
            case LAST -> 1 + rnd.nextInt(ATTACK_MTU);
            case ONLY -> op.hasPayload() ? rnd.nextInt(ATTACK_MTU + 1) : 0;
        };
        int pad = RoceV2.padFor(payload);
        bth.padCount(pad);
        return finish(hl, payload, pad, src, srcPort);
    }

    private void hostileReth(RethView r) {
        switch (rnd.nextInt(6)) {
            case 0 -> r.write(vSecret.address() + rnd.nextInt(vSecret.length()), vSecret.rkey(), 1 + rnd.nextInt(4096)); // no remote access
            case 1 -> r.write(vFuzz.address() + vFuzz.length() - rnd.nextInt(64), vFuzz.rkey(), 64 + rnd.nextInt(4096)); // past the end
            case 2 -> r.write(vFuzz.address() - 1 - rnd.nextInt(GUARD), vFuzz.rkey(), 1 + rnd.nextInt(128)); // before the start
            case 3 -> r.write(vFuzz.address(), vFuzz.rkey(), (int) (0xFFFFFFFFL - rnd.nextInt(1 << 20))); // DMA length up to 2^32-1
            case 4 -> r.write(rnd.nextLong(), rnd.nextInt(), rnd.nextInt()); // wrong rkey, wild VA
            default -> r.write(-1L - rnd.nextInt(4096), vFuzz.rkey(), 1 << 20); // VA + length overflows 2^64
        }
    }

    private void hostileAtomic(AtomicEthView a) {
        switch (rnd.nextInt(4)) {
            case 0 -> a.write(vAtomic.address() + 1 + rnd.nextInt(7), vAtomic.rkey(), rnd.nextLong(), rnd.nextLong()); // misaligned
            case 1 -> a.write(vAtomic.address() + vAtomic.length() + 8L * rnd.nextInt(8), vAtomic.rkey(), rnd.nextLong(), rnd.nextLong()); // past the end
            case 2 -> a.write(vSecret.address() + 8L * rnd.nextInt(64), vSecret.rkey(), rnd.nextLong(), rnd.nextLong()); // no atomic access
            default -> a.write(vAtomic.address() - 8, vAtomic.rkey(), rnd.nextLong(), rnd.nextLong()); // into the guard
        }
    }

    /** A PSN at least 2^21 away from {@code base} (and never within 2^21 of it on the other side either). */
    private int far(int base, boolean ahead) {
        int d = (1 << 21) + rnd.nextInt(1 << 21);
        return Psn.add(base, ahead ? d : -d);
    }

    // ------------------------------------------------------------------------------------------------
    // phase 1: junk from 127.0.11.3

    private void bulk(int n) throws Exception {
        int sweep = 0;
        for (int i = 0; i < n; i++) {
            Kind k = Kind.values()[rnd.nextInt(10)];
            int len;
            switch (k) {
                case RANDOM_BYTES -> {
                    len = rnd.nextInt(10) == 0 ? rnd.nextInt(16) : rnd.nextInt(1300);
                    for (int j = 0; j < len; j++) out[j] = (byte) rnd.nextInt();
                }
                case TRUNCATED -> {
                    int op = REQUESTS[rnd.nextInt(REQUESTS.length)];
                    int full = request(op, attackBulk.qpNum(), far(attackBulkRqPsn, true), F_ADDR, fuzzPort());
                    int hl = Opcode.of(op).headerLength();
                    len = Math.min(full - 1, rnd.nextInt(hl + 4)); // ends inside BTH, extension headers or ICRC
                }
                case OPCODE_SWEEP -> {
                    int op = sweep++ & 0xFF;
                    int hl = header(op, 0xABC000 | rnd.nextInt(0x1000), rnd.nextInt(), rnd.nextBoolean(), 0);
                    len = finish(hl, 4 * rnd.nextInt(64), 0, F_ADDR, fuzzPort());
                }
                case BAD_TVER -> {
                    len = request(REQUESTS[rnd.nextInt(REQUESTS.length)], attackBulk.qpNum(), attackBulkRqPsn, F_ADDR, fuzzPort());
                    bth.wrap(outBuf, 0).tver(1 + rnd.nextInt(15));
                    icrc.writeIpv4(Verbs.ipv4(F_ADDR), Verbs.ipv4(V_ADDR), 0, Icrc.IPV4_DF, fuzzPort(), RoceV2.UDP_PORT, outBuf, 0, len);
                }
                case BAD_PAD -> {
                    int op = new int[] {0x04, 0x0A, 0x0C, 0x11, 0x13}[rnd.nextInt(5)];
                    int hl = header(op, attackBulk.qpNum(), attackBulkRqPsn, true, 0);
                    int payload = rnd.nextInt(3);
                    bth.padCount(payload + 1 + rnd.nextInt(3 - payload));
                    len = finish(hl, payload, 0, F_ADDR, fuzzPort());
                }
                case UNKNOWN_QPN -> len = request(REQUESTS[rnd.nextInt(REQUESTS.length)], unknownQpn(), rnd.nextInt(),
                        F_ADDR, fuzzPort());
                case WRONG_SOURCE -> len = rnd.nextBoolean()
                        ? request(REQUESTS[rnd.nextInt(REQUESTS.length)], qpV.qpNum(), P_PSN + rnd.nextInt(64), F_ADDR, fuzzPort())
                        : response(RESPONSES[rnd.nextInt(RESPONSES.length)], qpV.qpNum(), V_PSN + rnd.nextInt(64), F_ADDR, fuzzPort());
                case BAD_ICRC -> {
                    len = request(REQUESTS[rnd.nextInt(REQUESTS.length)], attackBulk.qpNum(), attackBulkRqPsn, F_ADDR, fuzzPort());
                    out[len - 1 - rnd.nextInt(4)] ^= (byte) (1 << rnd.nextInt(8));
                }
                case FAR_PSN_REQUEST -> len = request(REQUESTS[rnd.nextInt(REQUESTS.length)], attackBulk.qpNum(),
                        far(attackBulkRqPsn, rnd.nextBoolean()), F_ADDR, fuzzPort());
                default -> len = response(RESPONSES[rnd.nextInt(RESPONSES.length)], attackBulk.qpNum(),
                        far(attackBulkSqPsn, rnd.nextBoolean()), F_ADDR, fuzzPort());
            }
            sendRaw(fuzz, len, k);
        }
    }

    /** An unsolicited response: ACK, NAK (any code), READ response (any position), atomic ACK. */
    private int response(int opcode, int destQp, int psn, InetAddress src, int srcPort) {
        Opcode op = Opcode.of(opcode);
        int hl = header(opcode, destQp, psn, false, 0);
        if (op.hasAeth()) {
            int syn = switch (rnd.nextInt(4)) {
                case 0 -> Aeth.ACK_UNLIMITED;
                case 1 -> Aeth.nak(Aeth.NakCode.values()[rnd.nextInt(5)]);
                case 2 -> Aeth.rnrNak(rnd.nextInt(32));
                default -> rnd.nextInt(256);
            };
            aeth.wrap(outBuf, op.aethOffset()).write(syn, rnd.nextInt() & Aeth.MSN_MASK);
        }
        int payload = switch (op.position()) {
            case FIRST, MIDDLE -> ATTACK_MTU;
            case LAST -> 1 + rnd.nextInt(ATTACK_MTU);
            case ONLY -> op.hasPayload() ? rnd.nextInt(ATTACK_MTU + 1) : 0;
        };
        int pad = RoceV2.padFor(payload);
        bth.padCount(pad);
        return finish(hl, payload, pad, src, srcPort);
    }

    // ------------------------------------------------------------------------------------------------
    // phase 2: in-sequence hostile requests on a QP connected to the fuzzer, each answered and checked

    private int inSequenceAttacks(int n) throws Exception {
        int answered = 0;
        Map<String, Integer> outcomes = new java.util.TreeMap<>();
        for (int i = 0; i < n; i++) {
            int psn = rnd.nextInt() & Psn.MASK;
            attackSync.modify(new QpAttr().state(QpState.RESET));
            Verbs.bringUp(attackSync, F_ADDR, fuzzPort(), FAKE_QPN_SYNC, Mtu.MTU_1024, psn, rnd.nextInt() & Psn.MASK, 4);
            replies.clear();
            int c = rnd.nextInt(9);
            int len;
            String expect; // "NAK:<code>", "RNR", "READ:<n>" (response bytes must equal vFuzz[off, off+n))
            long readOff = 0;
            switch (c) {
                case 0, 1, 2 -> {
                    int op = new int[] {0x06, 0x0A, 0x0B, 0x0C}[rnd.nextInt(4)];
                    int hl = header(op, attackSync.qpNum(), psn, true, 0);
                    hostileReth(reth.wrap(outBuf, Opcode.of(op).rethOffset()));
                    int payload = op == 0x0C ? 0 : op == 0x06 ? ATTACK_MTU : rnd.nextInt(ATTACK_MTU + 1);
                    if (reth.dmaLengthUnsigned() == 0) reth.dmaLength(1);
                    int pad = RoceV2.padFor(payload);
                    bth.padCount(pad);
                    len = finish(hl, payload, pad, F_ADDR, fuzzPort());
                    expect = "NAK:" + Aeth.NakCode.REMOTE_ACCESS_ERROR;
                }
                case 3 -> { // READ larger than the region, starting inside it
                    int hl = header(0x0C, attackSync.qpNum(), psn, true, 0);
                    reth.wrap(outBuf, Opcode.RC_RDMA_READ_REQUEST.rethOffset()).write(vFuzz.address() + rnd.nextInt(64), vFuzz.rkey(),
                            vFuzz.length() + 1 + rnd.nextInt(1 << 20));
                    len = finish(hl, 0, 0, F_ADDR, fuzzPort());
                    expect = "NAK:" + Aeth.NakCode.REMOTE_ACCESS_ERROR;
                }
                case 4 -> { // atomics: misaligned is an invalid request, the rest access errors
                    int op = rnd.nextBoolean() ? 0x13 : 0x14;
                    int hl = header(op, attackSync.qpNum(), psn, true, 0);
                    hostileAtomic(atomicEth.wrap(outBuf, Opcode.of(op).atomicEthOffset()));
                    len = finish(hl, 0, 0, F_ADDR, fuzzPort());
                    expect = (atomicEth.va() & 7) != 0 ? "NAK:" + Aeth.NakCode.INVALID_REQUEST : "NAK:" + Aeth.NakCode.REMOTE_ACCESS_ERROR;
                }
                case 5 -> { // opcode out of sequence (MIDDLE/LAST without FIRST) or payload not legal for the MTU
                    int op = new int[] {0x01, 0x02, 0x07, 0x08, 0x04}[rnd.nextInt(5)];
                    int hl = header(op, attackSync.qpNum(), psn, true, 0);
                    int payload = op == 0x04 ? ATTACK_MTU + 1 + rnd.nextInt(2000) : ATTACK_MTU;
                    len = finish(hl, payload, RoceV2.padFor(payload), F_ADDR, fuzzPort());
                    bth.padCount(RoceV2.padFor(payload));
                    icrc.writeIpv4(Verbs.ipv4(F_ADDR), Verbs.ipv4(V_ADDR), 0, Icrc.IPV4_DF, fuzzPort(), RoceV2.UDP_PORT, outBuf, 0, len);
                    expect = "NAK:" + Aeth.NakCode.INVALID_REQUEST;
                }
                case 6 -> { // WRITE whose payload does not match its DMA length (inside a writable region)
                    int hl = header(0x0A, attackSync.qpNum(), psn, true, 0);
                    int payload = 1 + rnd.nextInt(512);
                    reth.wrap(outBuf, Opcode.RC_RDMA_WRITE_ONLY.rethOffset()).write(vFuzz.address(), vFuzz.rkey(), payload + 1 + rnd.nextInt(512));
                    len = finish(hl, payload, RoceV2.padFor(payload), F_ADDR, fuzzPort());
                    bth.padCount(RoceV2.padFor(payload));
                    icrc.writeIpv4(Verbs.ipv4(F_ADDR), Verbs.ipv4(V_ADDR), 0, Icrc.IPV4_DF, fuzzPort(), RoceV2.UDP_PORT, outBuf, 0, len);
                    expect = "NAK:" + Aeth.NakCode.INVALID_REQUEST;
                }
                case 7 -> { // SEND with no receive posted: RNR NAK, QP survives
                    int hl = header(0x04, attackSync.qpNum(), psn, true, 0);
                    int payload = rnd.nextInt(256);
                    bth.padCount(RoceV2.padFor(payload));
                    len = finish(hl, payload, RoceV2.padFor(payload), F_ADDR, fuzzPort());
                    expect = "RNR";
                }
                default -> { // a legitimate READ of the region the attack QP may read: must return exactly its bytes
                    int hl = header(0x0C, attackSync.qpNum(), psn, true, 0);
                    readOff = rnd.nextInt(vFuzz.length() - ATTACK_MTU);
                    int rl = 1 + rnd.nextInt(ATTACK_MTU);
                    reth.wrap(outBuf, Opcode.RC_RDMA_READ_REQUEST.rethOffset()).write(vFuzz.address() + readOff, vFuzz.rkey(), rl);
                    len = finish(hl, 0, 0, F_ADDR, fuzzPort());
                    expect = "READ:" + rl;
                }
            }
            sendRaw(fuzz, len, Kind.HOSTILE_IN_SEQUENCE);
            byte[] reply = awaitReply(psn);
            assertNotNull(reply, "no reply to hostile request " + i + " (" + expect + ", seed " + seed + ")");
            answered++;
            String got = describeReply(reply);
            outcomes.merge(expect.replaceAll("READ:\\d+$", "READ") + " -> " + got.replaceAll("READ:\\d+$", "READ"), 1, Integer::sum);
            if (expect.startsWith("READ:")) {
                int rl = Integer.parseInt(expect.substring(5));
                assertEquals(expect, got, "attack " + i);
                byte[] want = new byte[rl];
                vFuzz.buffer().position((int) readOff).get(want);
                assertArrayEquals(want, Arrays.copyOfRange(reply, 16, 16 + rl), "READ response bytes");
            } else {
                assertEquals(expect, got, "attack " + i + " (seed " + seed + ")");
            }
        }
        System.out.println("in-sequence hostile requests (expected -> reply): " + outcomes);
        return answered;
    }

    private byte[] awaitReply(int psn) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (true) {
            long left = deadline - System.nanoTime();
            if (left <= 0) return null;
            byte[] b = replies.poll(left, TimeUnit.NANOSECONDS);
            if (b == null) return null;
            if (b.length < 16) continue;
            ByteBuf bb = Unpooled.wrappedBuffer(b);
            BthView h = new BthView().wrap(bb, 0);
            if (h.destQp() == FAKE_QPN_SYNC && h.psn() == psn) return b;
        }
    }

    private static String describeReply(byte[] b) {
        ByteBuf bb = Unpooled.wrappedBuffer(b);
        int op = new BthView().wrap(bb, 0).opcode();
        if (op == 0x11) {
            int syn = new AethView().wrap(bb, 12).syndrome();
            return switch (Aeth.kind(syn)) {
                case ACK -> "ACK";
                case RNR_NAK -> "RNR";
                case NAK -> "NAK:" + Aeth.NakCode.of(Aeth.value(syn));
                default -> "AETH?" + syn;
            };
        }
        if (op == 0x10) {
            int pad = new BthView().wrap(bb, 0).padCount();
            return "READ:" + (b.length - 16 - pad - 4);
        }
        return "opcode 0x" + Integer.toHexString(op);
    }

    // ------------------------------------------------------------------------------------------------
    // phase 3: spoofing the peer (source 127.0.11.1, another UDP port) on the live QP, PSNs far from the window

    private void spoofing(int n) throws Exception {
        int port = spoof.getLocalPort();
        for (int i = 0; i < n; i++) {
            int len;
            Kind k;
            switch (rnd.nextInt(3)) {
                case 0 -> { // responses for PSNs the victim never sent
                    k = Kind.SPOOF_RESPONSE_AHEAD;
                    len = response(RESPONSES[rnd.nextInt(RESPONSES.length)], qpV.qpNum(), far(V_PSN, true), P_ADDR, port);
                }
                case 1 -> {
                    k = Kind.SPOOF_REQUEST_AHEAD;
                    len = request(REQUESTS[rnd.nextInt(REQUESTS.length)], qpV.qpNum(), far(P_PSN, true), P_ADDR, port);
                }
                default -> {
                    k = Kind.SPOOF_REQUEST_BEHIND;
                    len = request(REQUESTS[rnd.nextInt(REQUESTS.length)], qpV.qpNum(), far(P_PSN, false), P_ADDR, port);
                }
            }
            sendRaw(spoof, len, k);
        }
    }

    // ------------------------------------------------------------------------------------------------

    private void printTable(DeviceCounters v0, DeviceCounters v1, DeviceCounters p0, DeviceCounters p1, QpCounters qv0, QpCounters qv1,
                            QpCounters qb0, QpCounters qb1, int iterations) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format("%nhostile datagrams sent by kind (seed %d):%n", seed));
        for (Map.Entry<Kind, Long> e : sentBy.entrySet()) sb.append(String.format("  %-24s %8d%n", e.getKey(), e.getValue()));
        sb.append(String.format("  %-24s %8d%n", "TOTAL", sent));
        sb.append("victim device counters (delta during the attack):\n");
        Map<String, Long> a = v0.asMap();
        for (Map.Entry<String, Long> e : v1.asMap().entrySet()) {
            sb.append(String.format("  %-24s %8d%n", e.getKey(), e.getValue() - a.get(e.getKey())));
        }
        sb.append(String.format("peer packets_out delta %d, retransmits %d; legit iterations %d%n",
                p1.packetsOut - p0.packetsOut, p1.retransmits - p0.retransmits, iterations));
        sb.append("victim legit QP delta: ").append(delta(qv0.asMap(), qv1.asMap())).append('\n');
        sb.append("victim bulk attack QP delta: ").append(delta(qb0.asMap(), qb1.asMap())).append('\n');
        System.out.print(sb);
    }

    private static Map<String, Long> delta(Map<String, Long> a, Map<String, Long> b) {
        Map<String, Long> m = new java.util.LinkedHashMap<>();
        for (Map.Entry<String, Long> e : b.entrySet()) {
            long d = e.getValue() - a.get(e.getKey());
            if (d != 0) m.put(e.getKey(), d);
        }
        return m;
    }

}
