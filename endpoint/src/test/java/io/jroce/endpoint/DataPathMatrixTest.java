package io.jroce.endpoint;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static io.jroce.endpoint.Bytes.CANARY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * Every opcode × sizes 0, 1, MTU-1, MTU, MTU+1, 64 KiB, 1 MiB × path MTUs 256 and 4096 (atomics: 8 bytes),
 * between two devices over real UDP sockets. Both starting PSNs sit just below 0xFFFFFF, so every
 * multi-packet message crosses the PSN wrap. Each case checks every byte of the target range, canaries
 * on both sides of it, untouched sources, and every defined field of both sides' completions.
 */
class DataPathMatrixTest {
    private static final int PSN_A = 0xFFFFFD;
    private static final int PSN_B = 0xFFFFFE;
    private static final int IMM = 0xC0FFEE01;
    private static final long SEND_WR = 0x5E17D_0001L;
    private static final long RECV_WR = 0x2EC7_0002L;
    private static long seed;

    @BeforeAll
    static void seed() {
        seed = Bytes.seed("DataPathMatrixTest");
    }

    @AfterAll
    static void done() {
        System.out.println("DataPathMatrixTest: seed was " + seed);
    }

    static Stream<Arguments> matrix() {
        List<Arguments> cases = new ArrayList<>();
        for (Mtu mtu : new Mtu[] {Mtu.MTU_256, Mtu.MTU_4096}) {
            int m = mtu.bytes();
            int[] sizes = {0, 1, m - 1, m, m + 1, 64 << 10, 1 << 20};
            for (WrOpcode op : WrOpcode.values()) {
                if (op.isAtomic()) {
                    cases.add(Arguments.of(op, mtu.bytes(), 8));
                } else {
                    for (int s : sizes) cases.add(Arguments.of(op, mtu.bytes(), s));
                }
            }
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "{0} of {2} bytes at MTU {1}")
    @MethodSource("matrix")
    void everyByteArrivesAndNothingElseIsTouched(WrOpcode op, int mtuBytes, int size) throws Exception {
        Random r = new Random(seed ^ (op.ordinal() * 1_000_003L) ^ ((long) mtuBytes << 32) ^ size);
        try (Pair p = new Pair()) {
            Pair.Conn c = p.connect(Mtu.ofBytes(mtuBytes), PSN_A, PSN_B);
            switch (op) {
                case SEND, SEND_WITH_IMM, SEND_WITH_INV -> send(p, c, op, size, r);
                case RDMA_WRITE, RDMA_WRITE_WITH_IMM -> write(p, c, op, size, r);
                case RDMA_READ -> read(p, c, size, r);
                case ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD -> atomic(p, c, op, r);
            }
            Pair.assertEmpty(c.cqA);
            Pair.assertEmpty(c.cqB);
            assertEquals(QpState.RTS, c.qpA.state());
            assertEquals(QpState.RTS, c.qpB.state());
            assertEquals(0, p.a.counters().drops(DropReason.ICRC));
            assertEquals(0, p.b.counters().drops(DropReason.ICRC));
        }
    }

    private void send(Pair p, Pair.Conn c, WrOpcode op, int size, Random r) {
        byte[] data = Bytes.random(r, size);
        MemoryRegion src = p.pdA.allocateAndRegister(size + 2 * CANARY, 0);
        byte[] srcImage = Bytes.with(Bytes.fillCanary(src, r), CANARY, data);
        Bytes.write(src, CANARY, data);
        MemoryRegion dst = p.pdB.allocateAndRegister(size + 2 * CANARY, Access.LOCAL_WRITE);
        byte[] dstImage = Bytes.fillCanary(dst, r);
        // the region whose rkey a SEND_WITH_INV invalidates
        MemoryRegion victim = p.pdB.allocateAndRegister(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);

        c.qpB.postRecv(new ReceiveWorkRequest(RECV_WR, Sge.of(dst, CANARY, size)));
        SendWorkRequest wr = new SendWorkRequest(SEND_WR, op, Sge.of(src, CANARY, size)).signaled();
        if (op == WrOpcode.SEND_WITH_IMM) wr.immData(IMM);
        if (op == WrOpcode.SEND_WITH_INV) wr.invalidateRkey(victim.rkey());
        c.qpA.postSend(wr);

        WorkCompletion s = Pair.await(c.cqA, 1, 20_000).get(0);
        Wcs.assertOk(s, SEND_WR, WcOpcode.SEND, size, c.qpA);
        Wcs.assertNoImmNoInv(s); // immediate data and invalidation are reported to the receiver only
        WorkCompletion rc = Pair.await(c.cqB, 1, 20_000).get(0);
        Wcs.assertOk(rc, RECV_WR, WcOpcode.RECV, size, c.qpB);
        switch (op) {
            case SEND_WITH_IMM -> Wcs.assertImm(rc, IMM);
            case SEND_WITH_INV -> {
                Wcs.assertInv(rc, victim.rkey());
                assertFalse(victim.rkeyUsable(), "SEND_WITH_INV must invalidate the named rkey");
            }
            default -> Wcs.assertNoImmNoInv(rc);
        }
        Bytes.assertRegion("receive buffer", Bytes.with(dstImage, CANARY, data), dst, CANARY, size);
        Bytes.assertRegion("send buffer", srcImage, src, CANARY, size);
    }

    private void write(Pair p, Pair.Conn c, WrOpcode op, int size, Random r) {
        byte[] data = Bytes.random(r, size);
        MemoryRegion src = p.pdA.allocateAndRegister(size + 2 * CANARY, 0);
        byte[] srcImage = Bytes.with(Bytes.fillCanary(src, r), CANARY, data);
        Bytes.write(src, CANARY, data);
        MemoryRegion dst = p.pdB.allocateAndRegister(size + 2 * CANARY, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        byte[] dstImage = Bytes.fillCanary(dst, r);
        // WRITE_WITH_IMM consumes a receive WQE but places nothing in its buffer
        MemoryRegion rbuf = p.pdB.allocateAndRegister(64 + 2 * CANARY, Access.LOCAL_WRITE);
        byte[] rbufImage = Bytes.fillCanary(rbuf, r);
        boolean imm = op == WrOpcode.RDMA_WRITE_WITH_IMM;
        if (imm) c.qpB.postRecv(new ReceiveWorkRequest(RECV_WR, Sge.of(rbuf, CANARY, 64)));

        SendWorkRequest wr = new SendWorkRequest(SEND_WR, op, Sge.of(src, CANARY, size))
                .remote(dst.address() + CANARY, dst.rkey()).signaled();
        if (imm) wr.immData(IMM);
        c.qpA.postSend(wr);

        WorkCompletion s = Pair.await(c.cqA, 1, 20_000).get(0);
        Wcs.assertOk(s, SEND_WR, WcOpcode.RDMA_WRITE, size, c.qpA);
        Wcs.assertNoImmNoInv(s);
        if (imm) {
            WorkCompletion rc = Pair.await(c.cqB, 1, 20_000).get(0);
            Wcs.assertOk(rc, RECV_WR, WcOpcode.RECV_RDMA_WITH_IMM, size, c.qpB);
            Wcs.assertImm(rc, IMM);
        }
        Bytes.assertRegion("WRITE target", Bytes.with(dstImage, CANARY, data), dst, CANARY, size);
        Bytes.assertRegion("WRITE source", srcImage, src, CANARY, size);
        Bytes.assertRegion("receive buffer of a WRITE_WITH_IMM", rbufImage, rbuf, CANARY, 64);
    }

    private void read(Pair p, Pair.Conn c, int size, Random r) {
        byte[] data = Bytes.random(r, size);
        MemoryRegion src = p.pdB.allocateAndRegister(size + 2 * CANARY, Access.REMOTE_READ);
        byte[] srcImage = Bytes.with(Bytes.fillCanary(src, r), CANARY, data);
        Bytes.write(src, CANARY, data);
        MemoryRegion dst = p.pdA.allocateAndRegister(size + 2 * CANARY, Access.LOCAL_WRITE);
        byte[] dstImage = Bytes.fillCanary(dst, r);

        c.qpA.postSend(new SendWorkRequest(SEND_WR, WrOpcode.RDMA_READ, Sge.of(dst, CANARY, size))
                .remote(src.address() + CANARY, src.rkey()).signaled());
        WorkCompletion s = Pair.await(c.cqA, 1, 20_000).get(0);
        Wcs.assertOk(s, SEND_WR, WcOpcode.RDMA_READ, size, c.qpA);
        Bytes.assertRegion("READ destination", Bytes.with(dstImage, CANARY, data), dst, CANARY, size);
        Bytes.assertRegion("READ source", srcImage, src, CANARY, size);
    }

    private void atomic(Pair p, Pair.Conn c, WrOpcode op, Random r) {
        MemoryRegion target = p.pdB.allocateAndRegister(8 + 2 * CANARY + 8, Access.LOCAL_WRITE | Access.REMOTE_ATOMIC);
        int off = Bytes.alignedOffset(target, CANARY);
        Bytes.fillCanary(target, r);
        MemoryRegion result = p.pdA.allocateAndRegister(8 + 2 * CANARY, Access.LOCAL_WRITE);
        long initial = r.nextLong();
        long operand = r.nextLong();
        long swap = r.nextLong();
        java.nio.ByteBuffer tb = target.buffer().order(java.nio.ByteOrder.nativeOrder());
        tb.putLong(off, initial);
        byte[] targetImage = Bytes.image(target);

        for (int round = 0; round < 2; round++) {
            // CMP_SWAP: round 0 compares equal and swaps, round 1 compares unequal and leaves the word alone
            long before = target.getLong(off);
            byte[] resultImage = Bytes.fillCanary(result, r);
            SendWorkRequest wr = new SendWorkRequest(SEND_WR + round, op, Sge.of(result, CANARY, 8))
                    .remote(target.address() + off, target.rkey()).signaled();
            long expectAfter;
            if (op == WrOpcode.ATOMIC_CMP_AND_SWP) {
                wr.compareAdd(round == 0 ? before : ~before).swap(swap + round);
                expectAfter = round == 0 ? swap : before;
            } else {
                wr.compareAdd(operand + round);
                expectAfter = before + operand + round;
            }
            c.qpA.postSend(wr);
            WorkCompletion s = Pair.await(c.cqA, 1, 20_000).get(0);
            Wcs.assertOk(s, SEND_WR + round, op.completionOpcode(), 8, c.qpA);
            assertEquals(before, result.getLong(CANARY), "original value returned by " + op);
            assertEquals(expectAfter, target.getLong(off), "remote word after " + op);
            java.nio.ByteBuffer rb = java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.nativeOrder()).putLong(0, before);
            Bytes.assertRegion("atomic result buffer", Bytes.with(resultImage, CANARY, rb.array()), result, CANARY, 8);
            java.nio.ByteBuffer tw = java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.nativeOrder()).putLong(0, expectAfter);
            targetImage = Bytes.with(targetImage, off, tw.array());
            Bytes.assertRegion("atomic target", targetImage, target, off, 8);
        }
    }
}
