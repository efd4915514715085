package io.jroce.endpoint;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Scatter/gather lists on both sides: a SEND or WRITE gathers from several SGEs in several regions, a
 * receive scatters into several SGEs, a READ scatters its response into several SGEs. SGE boundaries fall
 * inside packets, zero-length SGEs sit in the middle of lists, and the gaps between SGEs are canaries.
 */
class MultiSgeTest {
    private static final int ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;

    /** A region with its expected image; SGEs carve pieces of it and record what they should hold. */
    private static final class Region {
        final MemoryRegion mr;
        byte[] image;

        Region(ProtectionDomain pd, int len, int access, Random r) {
            mr = pd.allocateAndRegister(len, access);
            image = Bytes.fillCanary(mr, r);
        }

        /** Expect {@code bytes} at {@code off} after the operation. */
        void expect(int off, byte[] bytes) {
            image = Bytes.with(image, off, bytes);
        }

        void check(String what) {
            Bytes.assertRegion(what, image, mr, 0, 0);
        }
    }

    private static byte[] slice(byte[] b, int off, int len) {
        return java.util.Arrays.copyOfRange(b, off, off + len);
    }

    /** {@code lens[i]} bytes per SGE, each at a random offset of a random one of {@code regions}, without overlap. */
    private static List<int[]> layout(int[] lens, int regions, int regionLen, Random r) {
        List<int[]> out = new ArrayList<>(); // {region, offset, length}
        int[] cursor = new int[regions];
        for (int len : lens) {
            int reg = r.nextInt(regions);
            int gap = 1 + r.nextInt(17);
            if (cursor[reg] + gap + len > regionLen) {
                reg = 0;
                for (int k = 0; k < regions; k++) if (cursor[k] < cursor[reg]) reg = k;
            }
            int off = cursor[reg] + gap;
            if (off + len > regionLen) throw new IllegalStateException("layout does not fit");
            cursor[reg] = off + len;
            out.add(new int[] {reg, off, len});
        }
        return out;
    }

    private static Sge[] sges(List<int[]> layout, Region[] regions) {
        Sge[] s = new Sge[layout.size()];
        for (int i = 0; i < s.length; i++) {
            int[] l = layout.get(i);
            s[i] = Sge.of(regions[l[0]].mr, l[1], l[2]);
        }
        return s;
    }

    @Test
    void sendGathersFromFourSgesAndTheReceiveScattersIntoFour() throws Exception {
        Random r = new Random(31);
        try (Pair p = new Pair()) {
            Pair.Conn c = p.connect(Mtu.MTU_256, 0xFFFFFF, 0x10);
            Region[] srcs = {new Region(p.pdA, 2048, 0, r), new Region(p.pdA, 2048, 0, r)};
            Region[] dsts = {new Region(p.pdB, 2048, Access.LOCAL_WRITE, r), new Region(p.pdB, 2048, Access.LOCAL_WRITE, r)};
            // gather: 100 | 0 | 700 | 333 bytes; scatter: 7 | 512 | 0 | 700 (+ spare room in the last)
            Sge[] g = {Sge.of(srcs[0].mr, 10, 100), Sge.of(srcs[1].mr, 5, 0), Sge.of(srcs[1].mr, 50, 700), Sge.of(srcs[0].mr, 900, 333)};
            Sge[] s = {Sge.of(dsts[1].mr, 3, 7), Sge.of(dsts[0].mr, 100, 512), Sge.of(dsts[0].mr, 700, 0), Sge.of(dsts[1].mr, 20, 700)};
            ByteArrayOutputStream msg = new ByteArrayOutputStream();
            msg.write(Bytes.read(srcs[0].mr, 10, 100));
            msg.write(Bytes.read(srcs[1].mr, 50, 700));
            msg.write(Bytes.read(srcs[0].mr, 900, 333));
            byte[] m = msg.toByteArray();
            int total = m.length;
            c.qpB.postRecv(new ReceiveWorkRequest(5, s));
            c.qpA.postSend(new SendWorkRequest(6, WrOpcode.SEND_WITH_IMM, g).immData(0x600D).signaled());
            Wcs.assertOk(Pair.awaitOne(c.cqA), 6, WcOpcode.SEND, total, c.qpA);
            WorkCompletion rc = Pair.awaitOne(c.cqB);
            Wcs.assertOk(rc, 5, WcOpcode.RECV, total, c.qpB);
            Wcs.assertImm(rc, 0x600D);
            dsts[1].expect(3, slice(m, 0, 7));
            dsts[0].expect(100, slice(m, 7, 512));
            dsts[1].expect(20, slice(m, 519, total - 519)); // 614 of the 700 bytes; the rest stays canary
            dsts[0].check("scatter region 0");
            dsts[1].check("scatter region 1");
            srcs[0].check("gather region 0");
            srcs[1].check("gather region 1");
        }
    }

    @Test
    void writeGathersAndReadScatters() throws Exception {
        Random r = new Random(32);
        try (Pair p = new Pair()) {
            Pair.Conn c = p.connect(Mtu.MTU_1024, 0xFFFFF8, 0x10);
            Region[] locals = {new Region(p.pdA, 8192, Access.LOCAL_WRITE, r), new Region(p.pdA, 8192, Access.LOCAL_WRITE, r)};
            Region remote = new Region(p.pdB, 8192, ALL, r);
            // WRITE 4 SGEs (1, 1500, 0, 2600 bytes) into one remote range
            Sge[] g = {Sge.of(locals[0].mr, 1, 1), Sge.of(locals[1].mr, 100, 1500), Sge.of(locals[0].mr, 50, 0), Sge.of(locals[0].mr, 3000, 2600)};
            ByteArrayOutputStream msg = new ByteArrayOutputStream();
            msg.write(Bytes.read(locals[0].mr, 1, 1));
            msg.write(Bytes.read(locals[1].mr, 100, 1500));
            msg.write(Bytes.read(locals[0].mr, 3000, 2600));
            byte[] m = msg.toByteArray();
            c.qpA.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, g).remote(remote.mr.address() + 77, remote.mr.rkey()).signaled());
            Wcs.assertOk(Pair.awaitOne(c.cqA), 1, WcOpcode.RDMA_WRITE, m.length, c.qpA);
            remote.expect(77, m);
            remote.check("WRITE target");

            // READ the same range back into 4 SGEs (1023, 0, 1025, rest) spread over both regions
            Sge[] s = {Sge.of(locals[1].mr, 4000, 1023), Sge.of(locals[1].mr, 4000, 0), Sge.of(locals[0].mr, 6000, 1025),
                    Sge.of(locals[1].mr, 5100, m.length - 2048)};
            c.qpA.postSend(new SendWorkRequest(2, WrOpcode.RDMA_READ, s).remote(remote.mr.address() + 77, remote.mr.rkey()).signaled());
            Wcs.assertOk(Pair.awaitOne(c.cqA), 2, WcOpcode.RDMA_READ, m.length, c.qpA);
            locals[1].expect(4000, slice(m, 0, 1023));
            locals[0].expect(6000, slice(m, 1023, 1025));
            locals[1].expect(5100, slice(m, 2048, m.length - 2048));
            locals[0].check("READ scatter region 0");
            locals[1].check("READ scatter region 1");
            remote.check("READ source");
        }
    }

    @Test
    void randomScatterGatherLists() throws Exception {
        long seed = Bytes.seed("MultiSgeTest.randomScatterGatherLists");
        Random r = new Random(seed);
        try (Pair p = new Pair()) {
            Mtu mtu = r.nextBoolean() ? Mtu.MTU_256 : Mtu.MTU_1024;
            Pair.Conn c = p.connect(mtu, 0xFFFFFF - r.nextInt(64), r.nextInt(1 << 24));
            int regionLen = 64 << 10;
            Region[] a = {new Region(p.pdA, regionLen, Access.LOCAL_WRITE, r), new Region(p.pdA, regionLen, Access.LOCAL_WRITE, r),
                    new Region(p.pdA, regionLen, Access.LOCAL_WRITE, r)};
            Region[] b = {new Region(p.pdB, regionLen, ALL, r), new Region(p.pdB, regionLen, ALL, r), new Region(p.pdB, regionLen, ALL, r)};
            for (int iter = 0; iter < 30; iter++) {
                String what = "iteration " + iter + " (seed " + seed + ")";
                WrOpcode op = new WrOpcode[] {WrOpcode.SEND, WrOpcode.RDMA_WRITE, WrOpcode.RDMA_READ}[r.nextInt(3)];
                int nLocal = 1 + r.nextInt(4);
                int[] lens = new int[nLocal];
                for (int i = 0; i < nLocal; i++) lens[i] = r.nextInt(4) == 0 ? 0 : r.nextInt(3 * mtu.bytes());
                List<int[]> lay = layout(lens, a.length, regionLen / 2, r);
                int total = 0;
                for (int l : lens) total += l;
                // fresh canaries for this round
                for (Region x : a) x.image = Bytes.fillCanary(x.mr, r);
                for (Region x : b) x.image = Bytes.fillCanary(x.mr, r);
                Sge[] local = sges(lay, a);
                switch (op) {
                    case SEND -> {
                        int nRemote = 1 + r.nextInt(4);
                        int[] rl = split(total + r.nextInt(50), nRemote, r);
                        List<int[]> rlay = layout(rl, b.length, regionLen / 2, r);
                        c.qpB.postRecv(new ReceiveWorkRequest(iter, sges(rlay, b)));
                        c.qpA.postSend(new SendWorkRequest(iter, op, local).signaled());
                        Wcs.assertOk(Pair.awaitOne(c.cqA), iter, WcOpcode.SEND, total, c.qpA);
                        Wcs.assertOk(Pair.awaitOne(c.cqB), iter, WcOpcode.RECV, total, c.qpB);
                        byte[] m = gathered(lay, a);
                        int at = 0;
                        for (int[] l : rlay) {
                            int n = Math.min(l[2], total - at);
                            b[l[0]].expect(l[1], slice(m, at, n));
                            at += n;
                        }
                    }
                    case RDMA_WRITE -> {
                        int reg = r.nextInt(b.length);
                        int off = regionLen / 2 + r.nextInt(regionLen / 2 - total);
                        c.qpA.postSend(new SendWorkRequest(iter, op, local).remote(b[reg].mr.address() + off, b[reg].mr.rkey()).signaled());
                        Wcs.assertOk(Pair.awaitOne(c.cqA), iter, WcOpcode.RDMA_WRITE, total, c.qpA);
                        b[reg].expect(off, gathered(lay, a));
                    }
                    case RDMA_READ -> {
                        int reg = r.nextInt(b.length);
                        int off = regionLen / 2 + r.nextInt(regionLen / 2 - total);
                        byte[] m = Bytes.read(b[reg].mr, off, total);
                        c.qpA.postSend(new SendWorkRequest(iter, op, local).remote(b[reg].mr.address() + off, b[reg].mr.rkey()).signaled());
                        Wcs.assertOk(Pair.awaitOne(c.cqA), iter, WcOpcode.RDMA_READ, total, c.qpA);
                        int at = 0;
                        for (int[] l : lay) {
                            a[l[0]].expect(l[1], slice(m, at, l[2]));
                            at += l[2];
                        }
                    }
                    default -> throw new IllegalStateException();
                }
                for (int i = 0; i < a.length; i++) a[i].check(what + ": " + op + " local region " + i);
                for (int i = 0; i < b.length; i++) b[i].check(what + ": " + op + " remote region " + i);
            }
            assertEquals(QpState.RTS, c.qpA.state());
        }
    }

    private static int[] split(int total, int n, Random r) {
        int[] out = new int[n];
        int left = total;
        for (int i = 0; i < n - 1; i++) {
            out[i] = r.nextInt(left + 1);
            left -= out[i];
        }
        out[n - 1] = left;
        return out;
    }

    private static byte[] gathered(List<int[]> lay, Region[] regions) {
        ByteArrayOutputStream m = new ByteArrayOutputStream();
        for (int[] l : lay) m.writeBytes(Bytes.read(regions[l[0]].mr, l[1], l[2]));
        return m.toByteArray();
    }
}
