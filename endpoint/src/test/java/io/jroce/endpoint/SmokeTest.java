package io.jroce.endpoint;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

class SmokeTest {
    @Test
    void sendWriteReadAtomicsBetweenTwoDevices() throws Exception {
        try (Pair p = new Pair()) {
            assertTrue(p.a.isEpoll(), "epoll transport expected on Linux");
            Pair.Conn c = p.connect(Mtu.MTU_1024, 0xFFFFF0, 0x000010);
            int n = 100_000;
            MemoryRegion srcA = p.pdA.allocateAndRegister(n, Access.LOCAL_WRITE);
            MemoryRegion dstB = p.pdB.allocateAndRegister(n, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
            byte[] data = new byte[n];
            new Random(1).nextBytes(data);
            srcA.buffer().put(data);

            // SEND
            c.qpB.postRecv(new ReceiveWorkRequest(7, Sge.of(dstB)));
            c.qpA.postSend(new SendWorkRequest(1, WrOpcode.SEND_WITH_IMM, Sge.of(srcA, 0, 5000)).immData(0x1234).signaled());
            WorkCompletion s = Pair.awaitOne(c.cqA);
            assertEquals(WcStatus.SUCCESS, s.status(), s.toString());
            WorkCompletion r = Pair.awaitOne(c.cqB);
            assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
            assertEquals(WcOpcode.RECV, r.opcode());
            assertEquals(5000, r.byteLen());
            assertEquals(0x1234, r.immData());
            byte[] got = new byte[5000];
            dstB.buffer().get(got);
            assertArrayEquals(Arrays.copyOf(data, 5000), got);

            // WRITE
            c.qpA.postSend(new SendWorkRequest(2, WrOpcode.RDMA_WRITE, Sge.of(srcA)).remote(dstB.address(), dstB.rkey()).signaled());
            WorkCompletion w = Pair.awaitOne(c.cqA);
            assertEquals(WcStatus.SUCCESS, w.status(), w.toString());
            got = new byte[n];
            dstB.buffer().get(got);
            assertArrayEquals(data, got);

            // READ back into a fresh buffer
            MemoryRegion back = p.pdA.allocateAndRegister(n, Access.LOCAL_WRITE);
            c.qpA.postSend(new SendWorkRequest(3, WrOpcode.RDMA_READ, Sge.of(back)).remote(dstB.address(), dstB.rkey()).signaled());
            WorkCompletion rd = Pair.awaitOne(c.cqA);
            assertEquals(WcStatus.SUCCESS, rd.status(), rd.toString());
            assertEquals(WcOpcode.RDMA_READ, rd.opcode());
            got = new byte[n];
            back.buffer().get(got);
            assertArrayEquals(data, got);

            // FETCH_ADD and CMP_SWAP on word 0 of dstB
            MemoryRegion res = p.pdA.allocateAndRegister(8, Access.LOCAL_WRITE);
            long before = dstB.getLong(0);
            c.qpA.postSend(new SendWorkRequest(4, WrOpcode.ATOMIC_FETCH_AND_ADD, Sge.of(res)).remote(dstB.address(), dstB.rkey()).compareAdd(5).signaled());
            WorkCompletion fa = Pair.awaitOne(c.cqA);
            assertEquals(WcStatus.SUCCESS, fa.status(), fa.toString());
            assertEquals(before, res.getLong(0));
            assertEquals(before + 5, dstB.getLong(0));
            c.qpA.postSend(new SendWorkRequest(5, WrOpcode.ATOMIC_CMP_AND_SWP, Sge.of(res)).remote(dstB.address(), dstB.rkey())
                    .compareAdd(before + 5).swap(42).signaled());
            WorkCompletion cs = Pair.awaitOne(c.cqA);
            assertEquals(WcStatus.SUCCESS, cs.status(), cs.toString());
            assertEquals(before + 5, res.getLong(0));
            assertEquals(42, dstB.getLong(0));
            assertEquals(0, p.a.counters().drops(DropReason.ICRC));
            assertEquals(0, p.b.counters().drops(DropReason.ICRC));
        }
    }
}
