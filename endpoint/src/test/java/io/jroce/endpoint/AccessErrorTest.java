package io.jroce.endpoint;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.List;
import java.util.Random;

import static io.jroce.endpoint.Bytes.CANARY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * Remote access violations (rxe_resp.c check_rkey and check_op_valid, NAK codes of rxe_hdr.h enum aeth_syndrome): an R_Key or range failure is NAKed with remote
 * access error and completes as REM_ACCESS_ERR; a missing QP access flag or a misaligned atomic is NAKed
 * as invalid request and completes as REM_INV_REQ_ERR. Both QPs go to the error state: the requester
 * flushes the rest of its send queue (unsignaled WRs too), the responder flushes its posted receives, and
 * no byte of any region changes.
 */
class AccessErrorTest {
    private static final int MR_ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
    private static final int REGION = 1024;

    enum Violation {
        WRITE_BAD_RKEY(WcStatus.REM_ACCESS_ERR),
        WRITE_WITH_IMM_BAD_RKEY(WcStatus.REM_ACCESS_ERR),
        READ_BAD_RKEY(WcStatus.REM_ACCESS_ERR),
        CMP_SWAP_BAD_RKEY(WcStatus.REM_ACCESS_ERR),
        FETCH_ADD_BAD_RKEY(WcStatus.REM_ACCESS_ERR),
        WRITE_PAST_END(WcStatus.REM_ACCESS_ERR),
        MULTI_PACKET_WRITE_PAST_END(WcStatus.REM_ACCESS_ERR),
        WRITE_BEFORE_START(WcStatus.REM_ACCESS_ERR),
        READ_PAST_END(WcStatus.REM_ACCESS_ERR),
        MULTI_PACKET_READ_BEFORE_START(WcStatus.REM_ACCESS_ERR),
        ATOMIC_PAST_END(WcStatus.REM_ACCESS_ERR),
        WRITE_MR_WITHOUT_REMOTE_WRITE(WcStatus.REM_ACCESS_ERR),
        READ_MR_WITHOUT_REMOTE_READ(WcStatus.REM_ACCESS_ERR),
        ATOMIC_MR_WITHOUT_REMOTE_ATOMIC(WcStatus.REM_ACCESS_ERR),
        WRITE_MR_OF_ANOTHER_PD(WcStatus.REM_ACCESS_ERR),
        WRITE_DEREGISTERED_MR(WcStatus.REM_ACCESS_ERR),
        WRITE_QP_WITHOUT_REMOTE_WRITE(WcStatus.REM_INV_REQ_ERR),
        WRITE_WITH_IMM_QP_WITHOUT_REMOTE_WRITE(WcStatus.REM_INV_REQ_ERR),
        READ_QP_WITHOUT_REMOTE_READ(WcStatus.REM_INV_REQ_ERR),
        CMP_SWAP_QP_WITHOUT_REMOTE_ATOMIC(WcStatus.REM_INV_REQ_ERR),
        FETCH_ADD_QP_WITHOUT_REMOTE_ATOMIC(WcStatus.REM_INV_REQ_ERR),
        MISALIGNED_CMP_SWAP(WcStatus.REM_INV_REQ_ERR),
        MISALIGNED_FETCH_ADD(WcStatus.REM_INV_REQ_ERR);

        final WcStatus status;

        Violation(WcStatus status) {
            this.status = status;
        }

        int responderQpAccess() {
            return switch (this) {
                case WRITE_QP_WITHOUT_REMOTE_WRITE, WRITE_WITH_IMM_QP_WITHOUT_REMOTE_WRITE -> Pair.QP_ACCESS & ~Access.REMOTE_WRITE;
                case READ_QP_WITHOUT_REMOTE_READ -> Pair.QP_ACCESS & ~Access.REMOTE_READ;
                case CMP_SWAP_QP_WITHOUT_REMOTE_ATOMIC, FETCH_ADD_QP_WITHOUT_REMOTE_ATOMIC -> Pair.QP_ACCESS & ~Access.REMOTE_ATOMIC;
                default -> Pair.QP_ACCESS;
            };
        }
    }

    /** Regions on B (the responder) and A (the requester), all canary-filled, with their expected images. */
    private static final class Fixture {
        final Pair p;
        final Pair.Conn c;
        final Random r = new Random(7);
        final MemoryRegion good;
        final MemoryRegion noWrite;
        final MemoryRegion noRead;
        final MemoryRegion noAtomic;
        final MemoryRegion otherPd;
        final MemoryRegion gone;
        final MemoryRegion recvBuf;
        final MemoryRegion local;
        final List<MemoryRegion> all;
        final List<byte[]> images;

        Fixture(Pair p, Mtu mtu, int accessB) {
            this.p = p;
            this.c = p.connect(mtu, 0x100, 0x200, 4, 4, 64, Pair.QP_ACCESS, accessB);
            good = p.pdB.allocateAndRegister(REGION, MR_ALL);
            noWrite = p.pdB.allocateAndRegister(REGION, MR_ALL & ~Access.REMOTE_WRITE);
            noRead = p.pdB.allocateAndRegister(REGION, MR_ALL & ~Access.REMOTE_READ);
            noAtomic = p.pdB.allocateAndRegister(REGION, MR_ALL & ~Access.REMOTE_ATOMIC);
            otherPd = p.b.allocPd().allocateAndRegister(REGION, MR_ALL);
            gone = p.pdB.allocateAndRegister(REGION, MR_ALL);
            recvBuf = p.pdB.allocateAndRegister(REGION, Access.LOCAL_WRITE);
            local = p.pdA.allocateAndRegister(REGION, Access.LOCAL_WRITE);
            all = List.of(good, noWrite, noRead, noAtomic, otherPd, gone, recvBuf, local);
            images = all.stream().map(mr -> Bytes.fillCanary(mr, r)).toList();
        }

        int badRkey() {
            int k = good.rkey() ^ 0x5A5A5A5A;
            while (p.b.keys().byRkey(k) != null) k++;
            return k;
        }

        void assertNothingChanged() {
            for (int i = 0; i < all.size(); i++) {
                Bytes.assertRegion("region " + all.get(i), images.get(i), all.get(i), 0, 0);
            }
        }
    }

    private static SendWorkRequest badRequest(Violation v, Fixture f) {
        MemoryRegion local = f.local;
        MemoryRegion good = f.good;
        long aligned = good.address() + Bytes.alignedOffset(good, 64);
        return switch (v) {
            case WRITE_BAD_RKEY -> new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(local, 0, 100)).remote(good.address(), f.badRkey());
            case WRITE_WITH_IMM_BAD_RKEY -> new SendWorkRequest(1, WrOpcode.RDMA_WRITE_WITH_IMM, Sge.of(local, 0, 100))
                    .remote(good.address(), f.badRkey()).immData(5);
            case READ_BAD_RKEY -> new SendWorkRequest(1, WrOpcode.RDMA_READ, Sge.of(local, 0, 100)).remote(good.address(), f.badRkey());
            case CMP_SWAP_BAD_RKEY -> new SendWorkRequest(1, WrOpcode.ATOMIC_CMP_AND_SWP, Sge.of(local, 0, 8)).remote(aligned, f.badRkey());
            case FETCH_ADD_BAD_RKEY -> new SendWorkRequest(1, WrOpcode.ATOMIC_FETCH_AND_ADD, Sge.of(local, 0, 8)).remote(aligned, f.badRkey()).compareAdd(1);
            case WRITE_PAST_END -> new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(local, 0, 100))
                    .remote(good.address() + REGION - 99, good.rkey());
            case MULTI_PACKET_WRITE_PAST_END -> new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(local, 0, REGION))
                    .remote(good.address() + 1, good.rkey());
            case WRITE_BEFORE_START -> new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(local, 0, 100)).remote(good.address() - 1, good.rkey());
            case READ_PAST_END -> new SendWorkRequest(1, WrOpcode.RDMA_READ, Sge.of(local, 0, 100))
                    .remote(good.address() + REGION - 99, good.rkey());
            case MULTI_PACKET_READ_BEFORE_START -> new SendWorkRequest(1, WrOpcode.RDMA_READ, Sge.of(local, 0, 600))
                    .remote(good.address() - 8, good.rkey());
            case ATOMIC_PAST_END -> new SendWorkRequest(1, WrOpcode.ATOMIC_FETCH_AND_ADD, Sge.of(local, 0, 8))
                    .remote(good.address() + Bytes.alignedOffset(good, REGION - 7), good.rkey()).compareAdd(1);
            case WRITE_MR_WITHOUT_REMOTE_WRITE -> new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(local, 0, 100))
                    .remote(f.noWrite.address(), f.noWrite.rkey());
            case READ_MR_WITHOUT_REMOTE_READ -> new SendWorkRequest(1, WrOpcode.RDMA_READ, Sge.of(local, 0, 100))
                    .remote(f.noRead.address(), f.noRead.rkey());
            case ATOMIC_MR_WITHOUT_REMOTE_ATOMIC -> new SendWorkRequest(1, WrOpcode.ATOMIC_CMP_AND_SWP, Sge.of(local, 0, 8))
                    .remote(f.noAtomic.address() + Bytes.alignedOffset(f.noAtomic, 64), f.noAtomic.rkey());
            case WRITE_MR_OF_ANOTHER_PD -> new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(local, 0, 100))
                    .remote(f.otherPd.address(), f.otherPd.rkey());
            case WRITE_DEREGISTERED_MR -> new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(local, 0, 100))
                    .remote(f.gone.address(), f.gone.rkey());
            case WRITE_QP_WITHOUT_REMOTE_WRITE -> new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(local, 0, 100))
                    .remote(good.address(), good.rkey());
            case WRITE_WITH_IMM_QP_WITHOUT_REMOTE_WRITE -> new SendWorkRequest(1, WrOpcode.RDMA_WRITE_WITH_IMM, Sge.of(local, 0, 100))
                    .remote(good.address(), good.rkey()).immData(9);
            case READ_QP_WITHOUT_REMOTE_READ -> new SendWorkRequest(1, WrOpcode.RDMA_READ, Sge.of(local, 0, 100))
                    .remote(good.address(), good.rkey());
            case CMP_SWAP_QP_WITHOUT_REMOTE_ATOMIC -> new SendWorkRequest(1, WrOpcode.ATOMIC_CMP_AND_SWP, Sge.of(local, 0, 8))
                    .remote(aligned, good.rkey());
            case FETCH_ADD_QP_WITHOUT_REMOTE_ATOMIC -> new SendWorkRequest(1, WrOpcode.ATOMIC_FETCH_AND_ADD, Sge.of(local, 0, 8))
                    .remote(aligned, good.rkey()).compareAdd(1);
            case MISALIGNED_CMP_SWAP -> new SendWorkRequest(1, WrOpcode.ATOMIC_CMP_AND_SWP, Sge.of(local, 0, 8))
                    .remote(aligned + 4, good.rkey());
            case MISALIGNED_FETCH_ADD -> new SendWorkRequest(1, WrOpcode.ATOMIC_FETCH_AND_ADD, Sge.of(local, 0, 8))
                    .remote(aligned + 1, good.rkey()).compareAdd(1);
        };
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(Violation.class)
    void violationFailsBothSidesAndFlushesTheRest(Violation v) throws Exception {
        try (Pair p = new Pair()) {
            Fixture f = new Fixture(p, Mtu.MTU_256, v.responderQpAccess());
            if (v == Violation.WRITE_DEREGISTERED_MR) f.gone.deregister();
            Pair.Conn c = f.c;
            c.qpB.postRecv(Pair.chain(new ReceiveWorkRequest(100, Sge.of(f.recvBuf, 0, 300)),
                    new ReceiveWorkRequest(101, Sge.of(f.recvBuf, 300, 300)),
                    new ReceiveWorkRequest(102, Sge.of(f.recvBuf, 600, 300))));

            // the violation, then valid work that must not execute: a signaled WRITE, an unsignaled WRITE, a SEND
            c.qpA.postSend(Pair.chain(badRequest(v, f).signaled(),
                    new SendWorkRequest(2, WrOpcode.RDMA_WRITE, Sge.of(f.local, 0, 50)).remote(f.good.address() + 500, f.good.rkey()).signaled(),
                    new SendWorkRequest(3, WrOpcode.RDMA_WRITE, Sge.of(f.local, 0, 50)).remote(f.good.address() + 600, f.good.rkey()),
                    new SendWorkRequest(4, WrOpcode.SEND, Sge.of(f.local, 0, 20)).signaled()));

            List<WorkCompletion> a = Pair.await(c.cqA, 4, 10_000);
            Wcs.assertFailed(a.get(0), 1, v.status, c.qpA);
            Wcs.assertFlushed(a.subList(1, 4), c.qpA, 2, 3, 4);
            assertEquals(QpState.ERR, c.qpA.state(), "requester QP after a remote error");

            List<WorkCompletion> b = Pair.await(c.cqB, 3, 10_000);
            Wcs.assertFlushed(b, c.qpB, 100, 101, 102);
            assertEquals(QpState.ERR, c.qpB.state(), "responder QP after it NAKed: " + c.qpB.errorReason());
            assertEquals(1, c.qpB.counters().naksSent, "one NAK");

            Pair.barrier(p.a);
            Pair.barrier(p.b);
            Pair.assertEmpty(c.cqA);
            Pair.assertEmpty(c.cqB);
            f.assertNothingChanged();
            // a QP in ERR takes new work requests and flushes them at once, sending nothing
            long sent = p.a.counters().packetsOut;
            c.qpA.postSend(new SendWorkRequest(5, WrOpcode.RDMA_WRITE, Sge.of(f.local, 0, 8)).remote(f.good.address(), f.good.rkey()));
            Wcs.assertFlushed(Pair.await(c.cqA, 1, 10_000), c.qpA, 5);
            c.qpB.postRecv(new ReceiveWorkRequest(103, Sge.of(f.recvBuf, 0, 8)));
            Wcs.assertFlushed(Pair.await(c.cqB, 1, 10_000), c.qpB, 103);
            assertEquals(sent, p.a.counters().packetsOut, "nothing is sent from a QP in ERR");
            f.assertNothingChanged();
        }
    }

    @Test
    void requestsBeforeTheViolationCompleteAndTheOnesAfterItFlush() throws Exception {
        try (Pair p = new Pair()) {
            Fixture f = new Fixture(p, Mtu.MTU_256, Pair.QP_ACCESS);
            Pair.Conn c = f.c;
            c.qpB.postRecv(Pair.chain(new ReceiveWorkRequest(100, Sge.of(f.recvBuf, 0, 300)),
                    new ReceiveWorkRequest(101, Sge.of(f.recvBuf, 300, 300))));
            byte[] data = Bytes.read(f.local, 0, 700);
            c.qpA.postSend(Pair.chain(
                    new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(f.local, 0, 700)).remote(f.good.address() + 10, f.good.rkey()).signaled(),
                    new SendWorkRequest(2, WrOpcode.SEND, Sge.of(f.local, 0, 300)),
                    new SendWorkRequest(3, WrOpcode.RDMA_WRITE, Sge.of(f.local, 0, 10)).remote(f.good.address(), f.badRkey()),
                    new SendWorkRequest(4, WrOpcode.RDMA_WRITE, Sge.of(f.local, 0, 10)).remote(f.good.address(), f.good.rkey())));
            List<WorkCompletion> a = Pair.await(c.cqA, 3, 10_000);
            Wcs.assertOk(a.get(0), 1, WcOpcode.RDMA_WRITE, 700, c.qpA);
            // WR 2 succeeded unsignaled: no completion. WR 3 failed (failures always complete), WR 4 flushed.
            Wcs.assertFailed(a.get(1), 3, WcStatus.REM_ACCESS_ERR, c.qpA);
            Wcs.assertFlushed(a.subList(2, 3), c.qpA, 4);
            List<WorkCompletion> b = Pair.await(c.cqB, 2, 10_000);
            Wcs.assertOk(b.get(0), 100, WcOpcode.RECV, 300, c.qpB);
            Wcs.assertFlushed(b.subList(1, 2), c.qpB, 101);
            Bytes.assertRegion("WRITE target", Bytes.with(f.images.get(0), 10, data), f.good, 10, 700);
            Bytes.assertRegion("receive buffer", Bytes.with(f.images.get(6), 0, Bytes.read(f.local, 0, 300)), f.recvBuf, 0, 300);
        }
    }

    @Test
    void sendWithInvalidateRevokesTheRkeyForLaterWrites() throws Exception {
        try (Pair p = new Pair()) {
            Fixture f = new Fixture(p, Mtu.MTU_1024, Pair.QP_ACCESS);
            Pair.Conn c = f.c;
            // the rkey works before it is invalidated
            byte[] first = Bytes.read(f.local, 0, 64);
            c.qpA.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(f.local, 0, 64)).remote(f.good.address(), f.good.rkey()).signaled());
            Wcs.assertOk(Pair.awaitOne(c.cqA), 1, WcOpcode.RDMA_WRITE, 64, c.qpA);
            byte[] goodImage = Bytes.with(f.images.get(0), 0, first);

            c.qpB.postRecv(Pair.chain(new ReceiveWorkRequest(100, Sge.of(f.recvBuf, 0, 100)),
                    new ReceiveWorkRequest(101, Sge.of(f.recvBuf, 100, 100))));
            c.qpA.postSend(new SendWorkRequest(2, WrOpcode.SEND_WITH_INV, Sge.of(f.local, 0, 100)).invalidateRkey(f.good.rkey()).signaled());
            Wcs.assertOk(Pair.awaitOne(c.cqA), 2, WcOpcode.SEND, 100, c.qpA);
            WorkCompletion rc = Pair.awaitOne(c.cqB);
            Wcs.assertOk(rc, 100, WcOpcode.RECV, 100, c.qpB);
            Wcs.assertInv(rc, f.good.rkey());

            // local access to the region goes on: its lkey still works for a receive
            c.qpB.postRecv(new ReceiveWorkRequest(102, Sge.of(f.good, 512, 100)));

            c.qpA.postSend(new SendWorkRequest(3, WrOpcode.RDMA_WRITE, Sge.of(f.local, 100, 64)).remote(f.good.address(), f.good.rkey()).signaled());
            Wcs.assertFailed(Pair.awaitOne(c.cqA), 3, WcStatus.REM_ACCESS_ERR, c.qpA);
            Wcs.assertFlushed(Pair.await(c.cqB, 2, 10_000), c.qpB, 101, 102);
            assertEquals(QpState.ERR, c.qpB.state());
            Bytes.assertRegion("invalidated region", goodImage, f.good, 0, 64);
        }
    }

    @Test
    void sendWithInvalidateOfAnUnknownRkeyIsAnInvalidRequest() throws Exception {
        try (Pair p = new Pair()) {
            Fixture f = new Fixture(p, Mtu.MTU_1024, Pair.QP_ACCESS);
            Pair.Conn c = f.c;
            c.qpB.postRecv(Pair.chain(new ReceiveWorkRequest(100, Sge.of(f.recvBuf, 0, 100)),
                    new ReceiveWorkRequest(101, Sge.of(f.recvBuf, 100, 100))));
            c.qpA.postSend(Pair.chain(
                    new SendWorkRequest(1, WrOpcode.SEND_WITH_INV, Sge.of(f.local, 0, 100)).invalidateRkey(f.badRkey()).signaled(),
                    new SendWorkRequest(2, WrOpcode.SEND, Sge.of(f.local, 0, 10))));
            List<WorkCompletion> a = Pair.await(c.cqA, 2, 10_000);
            Wcs.assertFailed(a.get(0), 1, WcStatus.REM_INV_REQ_ERR, c.qpA);
            Wcs.assertFlushed(a.subList(1, 2), c.qpA, 2);
            List<WorkCompletion> b = Pair.await(c.cqB, 2, 10_000);
            assertEquals(100, b.get(0).wrId());
            assertEquals(WcStatus.REM_INV_REQ_ERR, b.get(0).status(), b.get(0).toString());
            Wcs.assertFlushed(b.subList(1, 2), c.qpB, 101);
            assertEquals(QpState.ERR, c.qpB.state());
        }
    }

    @Test
    void sendLongerThanTheReceiveBufferFailsBothSides() throws Exception {
        try (Pair p = new Pair()) {
            Fixture f = new Fixture(p, Mtu.MTU_256, Pair.QP_ACCESS);
            Pair.Conn c = f.c;
            c.qpB.postRecv(Pair.chain(new ReceiveWorkRequest(100, Sge.of(f.recvBuf, 0, 300)),
                    new ReceiveWorkRequest(101, Sge.of(f.recvBuf, 300, 300))));
            c.qpA.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(f.local, 0, 301)).signaled());
            Wcs.assertFailed(Pair.awaitOne(c.cqA), 1, WcStatus.REM_INV_REQ_ERR, c.qpA);
            List<WorkCompletion> b = Pair.await(c.cqB, 2, 10_000);
            Wcs.assertFailed(b.get(0), 100, WcStatus.LOC_LEN_ERR, c.qpB);
            Wcs.assertFlushed(b.subList(1, 2), c.qpB, 101);
            assertEquals(QpState.ERR, c.qpA.state());
            assertEquals(QpState.ERR, c.qpB.state());
        }
    }

    /** The QP's remote access flags may be changed in RTS (RTS -> RTS), and the responder obeys the new ones. */
    @Test
    void qpAccessFlagsChangedInRtsTakeEffect() throws Exception {
        try (Pair p = new Pair()) {
            Fixture f = new Fixture(p, Mtu.MTU_1024, Pair.QP_ACCESS & ~Access.REMOTE_WRITE);
            Pair.Conn c = f.c;
            c.qpB.modify(new QpAttr().accessFlags(Pair.QP_ACCESS));
            assertEquals(Pair.QP_ACCESS, c.qpB.query().accessFlags());
            c.qpA.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(f.local, 0, 64)).remote(f.good.address(), f.good.rkey()).signaled());
            Wcs.assertOk(Pair.awaitOne(c.cqA), 1, WcOpcode.RDMA_WRITE, 64, c.qpA);
            c.qpB.modify(new QpAttr().state(QpState.RTS).accessFlags(Pair.QP_ACCESS & ~Access.REMOTE_READ));
            c.qpA.postSend(new SendWorkRequest(2, WrOpcode.RDMA_READ, Sge.of(f.local, 0, 64)).remote(f.good.address(), f.good.rkey()).signaled());
            Wcs.assertFailed(Pair.awaitOne(c.cqA), 2, WcStatus.REM_INV_REQ_ERR, c.qpA);
            assertEquals(QpState.ERR, c.qpB.state());
        }
    }

    /** IBA C9-88 (rxe check_rkey): a zero-length READ or WRITE need not carry a valid R_Key or VA. */
    @Test
    void zeroLengthReadAndWriteDoNotCheckTheRkey() throws Exception {
        try (Pair p = new Pair()) {
            Fixture f = new Fixture(p, Mtu.MTU_256, Pair.QP_ACCESS);
            Pair.Conn c = f.c;
            c.qpB.postRecv(new ReceiveWorkRequest(100, Sge.of(f.recvBuf, 0, 16)));
            c.qpA.postSend(Pair.chain(
                    new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(f.local, 0, 0)).remote(0, 0).signaled(),
                    new SendWorkRequest(2, WrOpcode.RDMA_READ, Sge.of(f.local, 0, 0)).remote(0xDEAD0000L, f.badRkey()).signaled(),
                    new SendWorkRequest(3, WrOpcode.RDMA_WRITE_WITH_IMM).remote(0, 0).immData(77).signaled()));
            List<WorkCompletion> a = Pair.await(c.cqA, 3, 10_000);
            Wcs.assertOk(a.get(0), 1, WcOpcode.RDMA_WRITE, 0, c.qpA);
            Wcs.assertOk(a.get(1), 2, WcOpcode.RDMA_READ, 0, c.qpA);
            Wcs.assertOk(a.get(2), 3, WcOpcode.RDMA_WRITE, 0, c.qpA);
            WorkCompletion rc = Pair.awaitOne(c.cqB);
            Wcs.assertOk(rc, 100, WcOpcode.RECV_RDMA_WITH_IMM, 0, c.qpB);
            Wcs.assertImm(rc, 77);
            assertEquals(QpState.RTS, c.qpB.state());
            assertNull(c.qpB.errorReason());
            f.assertNothingChanged();
        }
    }
}
