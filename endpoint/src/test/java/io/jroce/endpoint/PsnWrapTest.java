package io.jroce.endpoint;

import io.jroce.wire.Psn;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;

import static io.jroce.endpoint.Bytes.CANARY;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * 24-bit PSNs wrap from 0xFFFFFF to 0 (IBA 9.7.1; rxe.h psn_compare). Connections start just below the wrap in both
 * directions and run mixed traffic across it; the live PSNs from query() follow the packets exactly.
 */
class PsnWrapTest {

    @Test
    void singlePacketMessagesStepOverTheWrap() throws Exception {
        try (Pair p = new Pair()) {
            Pair.Conn c = p.connect(Mtu.MTU_1024, 0xFFFFFF, 0xFFFFFE);
            MemoryRegion src = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
            for (int i = 0; i < 3; i++) {
                c.qpA.postSend(new SendWorkRequest(i, WrOpcode.RDMA_WRITE, Sge.of(src, 0, 8)).remote(dst.address(), dst.rkey()).signaled());
                Pair.awaitOne(c.cqA);
                assertEquals(Psn.add(0xFFFFFF, i + 1), c.qpA.query().sqPsn());
                assertEquals(Psn.add(0xFFFFFF, i + 1), c.qpB.query().rqPsn());
            }
            assertEquals(2, c.qpA.query().sqPsn());
            // B's direction: a 2-packet READ from 0xFFFFFE uses PSNs 0xFFFFFE and 0xFFFFFF
            MemoryRegion readable = p.pdA.allocateAndRegister(2048, Access.LOCAL_WRITE | Access.REMOTE_READ);
            Bytes.write(readable, 0, Bytes.random(new Random(4), 2048));
            MemoryRegion into = p.pdB.allocateAndRegister(2048, Access.LOCAL_WRITE);
            c.qpB.postSend(new SendWorkRequest(9, WrOpcode.RDMA_READ, Sge.of(into)).remote(readable.address(), readable.rkey()).signaled());
            Wcs.assertOk(Pair.awaitOne(c.cqB), 9, WcOpcode.RDMA_READ, 2048, c.qpB);
            Bytes.assertRegion("READ across the wrap", Bytes.image(readable), into, 0, 2048);
            assertEquals(0, c.qpB.query().sqPsn());
            assertEquals(0, c.qpA.query().rqPsn());
        }
    }

    @Test
    void randomTrafficAcrossTheWrap() throws Exception {
        long seed = Bytes.seed("PsnWrapTest.randomTrafficAcrossTheWrap");
        Random r = new Random(seed);
        Mtu mtu = r.nextBoolean() ? Mtu.MTU_256 : Mtu.MTU_512;
        int m = mtu.bytes();
        int psnA = Psn.add(0xFFFFFF, -r.nextInt(40));
        int psnB = Psn.add(0xFFFFFF, -r.nextInt(40));
        int len = 16 << 10;
        try (Pair p = new Pair()) {
            Pair.Conn c = p.connect(mtu, psnA, psnB, 2, 2, 64);
            MemoryRegion aMem = p.pdA.allocateAndRegister(len, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
            MemoryRegion bMem = p.pdB.allocateAndRegister(len, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
            MemoryRegion bRecv = p.pdB.allocateAndRegister(len, Access.LOCAL_WRITE);
            int word = Bytes.alignedOffset(bMem, len - 64);
            int sqA = psnA;
            int rqB = psnA;
            for (int iter = 0; iter < 60; iter++) {
                String what = "iteration " + iter + " (seed " + seed + ")";
                int size = r.nextInt(4) == 0 ? r.nextInt(8) : r.nextInt(6 * m + 1);
                int off = CANARY + r.nextInt(len / 2 - size - 2 * CANARY);
                byte[] data = Bytes.random(r, size);
                int kind = r.nextInt(5);
                int pkts = Math.max(1, (size + m - 1) / m);
                switch (kind) {
                    case 0 -> { // SEND
                        Bytes.write(aMem, off, data);
                        byte[] image = Bytes.fillCanary(bRecv, r);
                        c.qpB.postRecv(new ReceiveWorkRequest(iter, Sge.of(bRecv, off, size)));
                        c.qpA.postSend(new SendWorkRequest(iter, WrOpcode.SEND, Sge.of(aMem, off, size)).signaled());
                        Wcs.assertOk(Pair.awaitOne(c.cqA), iter, WcOpcode.SEND, size, c.qpA);
                        Wcs.assertOk(Pair.awaitOne(c.cqB), iter, WcOpcode.RECV, size, c.qpB);
                        Bytes.assertRegion(what + " SEND", Bytes.with(image, off, data), bRecv, off, size);
                    }
                    case 1, 2 -> { // WRITE, WRITE_WITH_IMM
                        boolean imm = kind == 2;
                        Bytes.write(aMem, off, data);
                        byte[] image = Bytes.fillCanary(bMem, r);
                        if (imm) c.qpB.postRecv(new ReceiveWorkRequest(iter));
                        c.qpA.postSend(new SendWorkRequest(iter, imm ? WrOpcode.RDMA_WRITE_WITH_IMM : WrOpcode.RDMA_WRITE, Sge.of(aMem, off, size))
                                .remote(bMem.address() + off, bMem.rkey()).immData(iter).signaled());
                        Wcs.assertOk(Pair.awaitOne(c.cqA), iter, WcOpcode.RDMA_WRITE, size, c.qpA);
                        if (imm) {
                            WorkCompletion rc = Pair.awaitOne(c.cqB);
                            Wcs.assertOk(rc, iter, WcOpcode.RECV_RDMA_WITH_IMM, size, c.qpB);
                            Wcs.assertImm(rc, iter);
                        }
                        Bytes.assertRegion(what + " WRITE", Bytes.with(image, off, data), bMem, off, size);
                    }
                    case 3 -> { // READ
                        Bytes.write(bMem, off, data);
                        byte[] image = Bytes.fillCanary(aMem, r);
                        c.qpA.postSend(new SendWorkRequest(iter, WrOpcode.RDMA_READ, Sge.of(aMem, off, size))
                                .remote(bMem.address() + off, bMem.rkey()).signaled());
                        Wcs.assertOk(Pair.awaitOne(c.cqA), iter, WcOpcode.RDMA_READ, size, c.qpA);
                        Bytes.assertRegion(what + " READ", Bytes.with(image, off, data), aMem, off, size);
                    }
                    default -> { // FETCH_ADD: one PSN
                        pkts = 1;
                        ByteBuffer bb = bMem.buffer().order(ByteOrder.nativeOrder());
                        long before = r.nextLong();
                        bb.putLong(word, before);
                        c.qpA.postSend(new SendWorkRequest(iter, WrOpcode.ATOMIC_FETCH_AND_ADD, Sge.of(aMem, off, 8))
                                .remote(bMem.address() + word, bMem.rkey()).compareAdd(iter).signaled());
                        Wcs.assertOk(Pair.awaitOne(c.cqA), iter, WcOpcode.FETCH_ADD, 8, c.qpA);
                        assertEquals(before, aMem.buffer().order(ByteOrder.nativeOrder()).getLong(off), what);
                        assertEquals(before + iter, bMem.getLong(word), what);
                    }
                }
                sqA = Psn.add(sqA, pkts);
                rqB = Psn.add(rqB, pkts);
                assertEquals(sqA, c.qpA.query().sqPsn(), what + ": A's send PSN");
                assertEquals(rqB, c.qpB.query().rqPsn(), what + ": B's expected PSN");
            }
            // B's own direction crosses the wrap too
            int sqB = psnB;
            MemoryRegion aRecv = p.pdA.allocateAndRegister(8 * m, Access.LOCAL_WRITE);
            for (int i = 0; i < 10; i++) {
                c.qpA.postRecv(new ReceiveWorkRequest(500 + i, Sge.of(aRecv)));
                int size = r.nextInt(8 * m + 1);
                c.qpB.postSend(new SendWorkRequest(500 + i, WrOpcode.SEND, Sge.of(bMem, 0, size)).signaled());
                Wcs.assertOk(Pair.awaitOne(c.cqB), 500 + i, WcOpcode.SEND, size, c.qpB);
                Wcs.assertOk(Pair.awaitOne(c.cqA), 500 + i, WcOpcode.RECV, size, c.qpA);
                assertEquals(java.util.Arrays.toString(Bytes.read(bMem, 0, size)), java.util.Arrays.toString(Bytes.read(aRecv, 0, size)));
                sqB = Psn.add(sqB, Math.max(1, (size + m - 1) / m));
                assertEquals(sqB, c.qpB.query().sqPsn());
                assertEquals(sqB, c.qpA.query().rqPsn());
            }
            assertEquals(QpState.RTS, c.qpA.state());
            assertEquals(QpState.RTS, c.qpB.state());
        }
    }
}
