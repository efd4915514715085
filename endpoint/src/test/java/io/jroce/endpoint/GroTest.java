package io.jroce.endpoint;

import io.jroce.wire.pcap.CaptureReader;
import io.jroce.wire.pcap.PcapFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * UDP GRO on receive between two loopback devices. On {@code lo} the kernel coalesces nothing by itself (no NAPI
 * GRO on loopback); a UDP GSO send reaches a GRO socket whole, so the sender has GSO on: the receiver then reads
 * coalesced datagrams ({@code gro_datagrams}), every segment is processed as its own RoCE packet (the data
 * arrives, nothing is dropped) and the receiver's capture, which records the IPv4 ID the ICRC solve found per
 * packet, holds IDs 1..14 (segment k of a GSO send leaves with ID k), each ICRC confirmed by hand for that ID.
 */
class GroTest {
    private static final int SIZE = 1 << 20;

    @Test
    void coalescedWritesAndReadResponsesArriveSegmentBySegment(@TempDir Path dir) throws Exception {
        Path pcapB = dir.resolve("gro-b.pcap");
        long seed = System.nanoTime();
        System.out.println("GroTest seed " + seed);
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.63.1")).port(0).gso(true).gro(true),
                new DeviceConfig(Pair.addr("127.77.63.2")).port(0).pcap(pcapB).gso(true).gro(true))) {
            assertTrue(p.a.transport().isEpoll(), "GRO needs the epoll transport");
            assertTrue(p.a.transport().isGro() && p.b.transport().isGro(), "UDP_GRO accepted by the kernel");
            exchange(p, seed, 4);
            DeviceCounters ca = p.a.counters();
            DeviceCounters cb = p.b.counters();
            System.out.println("GroTest writer " + ca + "\nGroTest target " + cb);
            assertTrue(cb.groDatagrams > 0 && cb.groSegments > 2 * cb.groDatagrams, "WRITEs read as coalesced datagrams: " + cb);
            assertTrue(ca.groDatagrams > 0, "READ responses read as coalesced datagrams: " + ca);
            // a segment cut at the wrong place or checked for the wrong ID would be dropped as one of these; a
            // cold, loaded JVM may still miss an ACK timeout now and then (retransmits), which is no fault of GRO
            for (DropReason r : new DropReason[] {DropReason.ICRC, DropReason.MALFORMED, DropReason.OVERSIZE, DropReason.UNSUPPORTED_OPCODE}) {
                assertEquals(0, cb.drops(r), r + " at the target: " + cb);
                assertEquals(0, ca.drops(r), r + " at the writer: " + ca);
            }
        }
        List<Integer> ids = new ArrayList<>();
        for (PcapFrame f : CaptureReader.readAll(pcapB)) {
            if (!f.srcAddress().getHostAddress().equals("127.77.63.1")) continue;
            assertTrue(GsoTest.icrcMatches(f), "ICRC of received frame " + f.frameNumber() + " for ID " + f.ipId());
            ids.add(f.ipId());
        }
        assertTrue(ids.size() > 4 * 256, "received frames recorded: " + ids.size());
        assertEquals(14, ids.stream().mapToInt(Integer::intValue).max().orElse(-1),
                "a 4124-byte WRITE middle run of 15 segments arrives with the IDs 0..14, each solved per packet");
    }

    @Test
    void plainDatagramsToAGroSocket() throws Exception {
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.63.3")).port(0).gso(false).gro(true),
                new DeviceConfig(Pair.addr("127.77.63.4")).port(0).gso(false).gro(true))) {
            exchange(p, 5, 2);
            DeviceCounters cb = p.b.counters();
            System.out.println("GroTest plain sender, GRO receiver: " + cb);
            assertTrue(cb.packetsIn > 2 * 256, cb.toString());
            assertEquals(0, cb.totalDrops(), cb.toString());
            assertEquals(0, p.a.counters().totalDrops(), p.a.counters().toString());
            // loopback has no NAPI GRO: plain datagrams are not coalesced, one recvmsg each
            assertEquals(0, cb.groDatagrams, cb.toString());
        }
    }

    @Test
    void ipv6CoalescedDatagramsArriveIntact() throws Exception {
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("::1")).port(0).gso(true).gro(true),
                new DeviceConfig(Pair.addr("::1")).port(0).gso(true).gro(true))) {
            exchange(p, 7, 2);
            assertTrue(p.b.counters().groDatagrams > 0, p.b.counters().toString());
            assertEquals(0, p.a.counters().totalDrops(), p.a.counters().toString());
            assertEquals(0, p.b.counters().totalDrops(), p.b.counters().toString());
        }
    }

    @Test
    void offByDefaultReadsWithRecvmmsg() throws Exception {
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.63.5")).port(0).gso(true),
                new DeviceConfig(Pair.addr("127.77.63.6")).port(0).gso(true))) {
            assertFalse(p.b.transport().isGro());
            exchange(p, 9, 1);
            assertEquals(0, p.b.counters().groDatagrams, p.b.counters().toString());
            assertEquals(0, p.b.counters().totalDrops(), p.b.counters().toString());
        }
    }

    /** {@code rounds} 1 MiB RDMA WRITEs of random data from a to b, each read back with an RDMA READ. */
    private static void exchange(Pair p, long seed, int rounds) {
        Pair.Conn c = p.connect(Mtu.MTU_4096, 100, 200);
        MemoryRegion src = p.pdA.allocateAndRegister(SIZE, Access.LOCAL_WRITE);
        MemoryRegion dst = p.pdB.allocateAndRegister(SIZE, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
        MemoryRegion back = p.pdA.allocateAndRegister(SIZE, Access.LOCAL_WRITE);
        Random random = new Random(seed);
        byte[] data = new byte[SIZE];
        byte[] got = new byte[SIZE];
        for (int i = 0; i < rounds; i++) {
            random.nextBytes(data);
            src.buffer().clear().put(data);
            c.qpA.postSend(new SendWorkRequest(2 * i, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
            WorkCompletion w = Pair.awaitOne(c.cqA);
            assertEquals(WcStatus.SUCCESS, w.status(), w.toString());
            dst.buffer().clear().get(got);
            assertArrayEquals(data, got, "WRITE " + i);
            c.qpA.postSend(new SendWorkRequest(2 * i + 1, WrOpcode.RDMA_READ, Sge.of(back)).remote(dst.address(), dst.rkey()).signaled());
            WorkCompletion r = Pair.awaitOne(c.cqA);
            assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
            back.buffer().clear().get(got);
            assertArrayEquals(data, got, "READ " + i);
        }
    }
}
