package io.jroce.endpoint;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.channel.socket.DatagramPacket;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static io.jroce.endpoint.Bytes.CANARY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The requester's max_rd_atomic limit (rxe_req.c check_init_depth: extra READs and atomics wait) and atomicity of
 * FETCH_ADD across connections. A filter on the requester's socket counts the READ and atomic requests
 * in flight on the wire: a request is in flight from the datagram that carries it until the datagram that
 * ends its response.
 */
class RdAtomicLimitTest {

    /** Counts READ/atomic requests in flight, keyed by the last PSN of their response (stable across resends). */
    static final class InFlight extends ChannelDuplexHandler implements DatagramFilter {
        private final int mtu;
        private final Set<Integer> open = new HashSet<>(); // event loop only
        volatile int max;
        volatile int requests;

        InFlight(int mtu) {
            this.mtu = mtu;
        }

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) throws Exception {
            if (msg instanceof DatagramPacket d) {
                ByteBuf b = d.content();
                int at = b.readerIndex();
                int op = b.getUnsignedByte(at);
                int psn = b.getInt(at + 8) & 0xFFFFFF;
                if (op == 0x0C) { // RDMA_READ_REQUEST: RETH DMA length at BTH+12
                    long len = b.getUnsignedInt(at + 12 + 12);
                    int n = (int) Math.max(1, (len + mtu - 1) / mtu);
                    opened((psn + n - 1) & 0xFFFFFF);
                } else if (op == 0x13 || op == 0x14) { // COMPARE_SWAP, FETCH_ADD
                    opened(psn);
                }
            }
            super.write(ctx, msg, promise);
        }

        private void opened(int lastPsn) {
            requests++;
            open.add(lastPsn);
            max = Math.max(max, open.size());
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
            if (msg instanceof DatagramPacket d) {
                ByteBuf b = d.content();
                int at = b.readerIndex();
                int op = b.getUnsignedByte(at);
                int psn = b.getInt(at + 8) & 0xFFFFFF;
                if (op == 0x0F || op == 0x10 || op == 0x12) open.remove(psn); // READ_RESPONSE_LAST/ONLY, ATOMIC_ACK
            }
            super.channelRead(ctx, msg);
        }
    }

    @Test
    void eightReadsAgainstMaxRdAtomicTwoCompleteInOrder() throws Exception {
        int mtu = 1024;
        InFlight wire = new InFlight(mtu);
        int[] sizes = {5000, 1, 64 << 10, 0, 3000, 1024, 20_000, 1025};
        Random r = new Random(21);
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.0.0.1")).filter(wire), new DeviceConfig(Pair.addr("127.0.0.2")))) {
            Pair.Conn c = p.connect(Mtu.MTU_1024, 0xFFFFF0, 0x40, 2, 2, 64);
            List<MemoryRegion> srcs = new ArrayList<>();
            List<MemoryRegion> dsts = new ArrayList<>();
            List<byte[]> dstImages = new ArrayList<>();
            List<byte[]> data = new ArrayList<>();
            List<SendWorkRequest> wrs = new ArrayList<>();
            for (int i = 0; i < sizes.length; i++) {
                MemoryRegion src = p.pdB.allocateAndRegister(sizes[i] + 2 * CANARY, Access.REMOTE_READ);
                MemoryRegion dst = p.pdA.allocateAndRegister(sizes[i] + 2 * CANARY, Access.LOCAL_WRITE);
                byte[] d = Bytes.random(r, sizes[i]);
                Bytes.write(src, CANARY, d);
                dstImages.add(Bytes.fillCanary(dst, r));
                srcs.add(src);
                dsts.add(dst);
                data.add(d);
                wrs.add(new SendWorkRequest(i, WrOpcode.RDMA_READ, Sge.of(dst, CANARY, sizes[i]))
                        .remote(src.address() + CANARY, src.rkey()).signaled());
            }
            c.qpA.postSend(Pair.chain(wrs.toArray(new SendWorkRequest[0])));
            List<WorkCompletion> wcs = Pair.await(c.cqA, sizes.length, 20_000);
            for (int i = 0; i < sizes.length; i++) {
                Wcs.assertOk(wcs.get(i), i, WcOpcode.RDMA_READ, sizes[i], c.qpA);
                Bytes.assertRegion("READ " + i, Bytes.with(dstImages.get(i), CANARY, data.get(i)), dsts.get(i), CANARY, sizes[i]);
            }
            Pair.barrier(p.a);
            assertTrue(wire.requests >= sizes.length, "every READ went out");
            assertEquals(2, wire.max, "READs in flight on the wire never exceed max_rd_atomic = 2 (and do reach it)");
            assertEquals(QpState.RTS, c.qpB.state(), "the responder (max_dest_rd_atomic 2) saw no excess");
        }
    }

    @Test
    void readsAndAtomicsShareTheLimitAndCompleteInOrder() throws Exception {
        InFlight wire = new InFlight(256);
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.0.0.1")).filter(wire), new DeviceConfig(Pair.addr("127.0.0.2")))) {
            Pair.Conn c = p.connect(Mtu.MTU_256, 0x10, 0x20, 1, 1, 64);
            MemoryRegion remote = p.pdB.allocateAndRegister(4096, Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC | Access.REMOTE_WRITE);
            MemoryRegion local = p.pdA.allocateAndRegister(8 * 1024, Access.LOCAL_WRITE);
            int word = Bytes.alignedOffset(remote, 2048);
            ByteBuffer rb = remote.buffer().order(ByteOrder.nativeOrder());
            for (int i = 0; i < 1000; i++) rb.put(i, (byte) i);
            rb.putLong(word, 1000);
            List<SendWorkRequest> wrs = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                if (i % 2 == 0) {
                    // each READ sees the word as the FETCH_ADDs before it left it
                    wrs.add(new SendWorkRequest(i, WrOpcode.RDMA_READ, Sge.of(local, i * 1024L, 600), Sge.of(local, i * 1024L + 600, 8))
                            .remote(remote.address(), remote.rkey()).signaled());
                    // the 8 bytes after the first 600 come from offset 600 of the region
                } else {
                    wrs.add(new SendWorkRequest(i, WrOpcode.ATOMIC_FETCH_AND_ADD, Sge.of(local, i * 1024L, 8))
                            .remote(remote.address() + word, remote.rkey()).compareAdd(i).signaled());
                }
            }
            c.qpA.postSend(Pair.chain(wrs.toArray(new SendWorkRequest[0])));
            List<WorkCompletion> wcs = Pair.await(c.cqA, 8, 20_000);
            long expect = 1000;
            ByteBuffer lb = local.buffer().order(ByteOrder.nativeOrder());
            for (int i = 0; i < 8; i++) {
                if (i % 2 == 0) {
                    Wcs.assertOk(wcs.get(i), i, WcOpcode.RDMA_READ, 608, c.qpA);
                    for (int k = 0; k < 608; k++) assertEquals((byte) k, lb.get(i * 1024 + k), "READ " + i + " byte " + k);
                } else {
                    Wcs.assertOk(wcs.get(i), i, WcOpcode.FETCH_ADD, 8, c.qpA);
                    assertEquals(expect, lb.getLong(i * 1024), "FETCH_ADD " + i + " original");
                    expect += i;
                }
            }
            assertEquals(expect, remote.getLong(word));
            Pair.barrier(p.a);
            assertEquals(1, wire.max, "one READ or atomic in flight at a time with max_rd_atomic = 1");
        }
    }

    @Test
    void fetchAddFromTwoConnectionsOnOneWordSumsExactly() throws Exception {
        int perQp = 400;
        int window = 64;
        long[] adds = {1, 1L << 32};
        try (Pair p = new Pair()) {
            Pair.Conn c1 = p.connect(Mtu.MTU_1024, 0x100, 0x200, 4, 4, 128);
            Pair.Conn c2 = p.connect(Mtu.MTU_4096, 0xFFFFF0, 0x300, 4, 4, 128);
            MemoryRegion target = p.pdB.allocateAndRegister(64, Access.LOCAL_WRITE | Access.REMOTE_ATOMIC);
            int word = Bytes.alignedOffset(target, 16);
            long initial = 0x5000_0000L;
            target.buffer().order(ByteOrder.nativeOrder()).putLong(word, initial);
            byte[] image = Bytes.image(target);

            Pair.Conn[] conns = {c1, c2};
            MemoryRegion[] results = {p.pdA.allocateAndRegister(perQp * 8, Access.LOCAL_WRITE),
                    p.pdA.allocateAndRegister(perQp * 8, Access.LOCAL_WRITE)};
            ExecutorService pool = Executors.newFixedThreadPool(2);
            try {
                List<Future<?>> fs = new ArrayList<>();
                for (int q = 0; q < 2; q++) {
                    int qq = q;
                    fs.add(pool.submit((Callable<Void>) () -> {
                        Pair.Conn c = conns[qq];
                        for (int base = 0; base < perQp; base += window) {
                            int k = Math.min(window, perQp - base);
                            SendWorkRequest[] wrs = new SendWorkRequest[k];
                            for (int i = 0; i < k; i++) {
                                wrs[i] = new SendWorkRequest(base + i, WrOpcode.ATOMIC_FETCH_AND_ADD, Sge.of(results[qq], (base + i) * 8L, 8))
                                        .remote(target.address() + word, target.rkey()).compareAdd(adds[qq]).signaled();
                            }
                            c.qpA.postSend(Pair.chain(wrs));
                            List<WorkCompletion> wcs = Pair.await(c.cqA, k, 20_000);
                            for (int i = 0; i < k; i++) Wcs.assertOk(wcs.get(i), base + i, WcOpcode.FETCH_ADD, 8, c.qpA);
                        }
                        return null;
                    }));
                }
                for (Future<?> f : fs) f.get(60, TimeUnit.SECONDS);
            } finally {
                pool.shutdownNow();
            }
            long expectFinal = initial + perQp * adds[0] + perQp * adds[1];
            assertEquals(expectFinal, target.getLong(word), "the word holds the exact sum");
            // every FETCH_ADD saw a distinct value, and the values chain: each one's original plus its add is the next
            List<long[]> seen = new ArrayList<>();
            for (int q = 0; q < 2; q++) {
                ByteBuffer b = results[q].buffer().order(ByteOrder.nativeOrder());
                for (int i = 0; i < perQp; i++) seen.add(new long[] {b.getLong(i * 8), adds[q]});
            }
            seen.sort((x, y) -> Long.compare(x[0], y[0]));
            long v = initial;
            for (long[] s : seen) {
                assertEquals(v, s[0], "the originals form one chain of additions");
                v += s[1];
            }
            assertEquals(expectFinal, v);
            Bytes.assertRegion("around the word", Bytes.with(image, word, longBytes(expectFinal)), target, word, 8);
        }
    }

    private static byte[] longBytes(long v) {
        return ByteBuffer.allocate(8).order(ByteOrder.nativeOrder()).putLong(0, v).array();
    }
}
