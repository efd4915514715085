package io.jroce.endpoint;

import io.jroce.endpoint.fault.FaultInjector;
import io.jroce.endpoint.fault.FaultRule;
import io.jroce.wire.Opcode;
import io.jroce.wire.pcap.PcapFrame;
import io.jroce.wire.pcap.PcapReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Extensions are per QP and off unless set: a QP without them is plain IBA Go-Back-N (a sequence NAK, no SACK),
 * and without loss a selective-repeat QP sends exactly the packets a plain one sends, so the extension changes
 * nothing on the wire until a packet is lost.
 */
class NegotiationTest {
    @TempDir
    Path dir;

    @Test
    void withoutLossTheWireIsTheSameWithOrWithoutSelectiveRepeat() throws Exception {
        List<String> plain = exchange(0, dir.resolve("plain.pcap"), "127.77.41.7", "127.77.41.8");
        // selective repeat alone: congestion control changes when packets leave (and so the AckReq bits) by design
        List<String> sr = exchange(JroceExtensions.SELECTIVE_REPEAT, dir.resolve("sr.pcap"), "127.77.41.7", "127.77.41.8");
        assertTrue(plain.size() > 10, "the exchange was captured: " + plain.size() + " datagrams");
        assertEquals(plain, sr);
    }

    @Test
    void aQpWithoutExtensionsGoesBackNAndOneWithThemSacks() throws Exception {
        QpCounters[] gbn = lossyWrite(0, "127.77.41.9", "127.77.41.10");
        assertEquals(1, gbn[1].seqNaksSent, "Go-Back-N: one sequence NAK for the gap: " + gbn[1]);
        assertEquals(0, gbn[1].sacksSent, gbn[1].toString());
        assertEquals(1, gbn[0].retries, "one Go-Back-N rewind: " + gbn[0]);
        assertEquals(0, gbn[0].selectiveRetransmits, gbn[0].toString());
        QpCounters[] sr = lossyWrite(JroceExtensions.SELECTIVE_REPEAT, "127.77.41.11", "127.77.41.12");
        assertEquals(0, sr[1].seqNaksSent, sr[1].toString());
        assertTrue(sr[1].sacksSent > 0, sr[1].toString());
        assertEquals(0, sr[0].retries, "no rewind: " + sr[0]);
        assertEquals(1, sr[0].selectiveRetransmits, sr[0].toString());
    }

    @Test
    void extensionsAreSetBeforeRtrOnly() throws Exception {
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.41.13")), new DeviceConfig(Pair.addr("127.77.41.14")))) {
            Pair.Conn c = p.connect(Mtu.MTU_1024, 1, 2);
            assertEquals(0, c.qpA.extensions(), "off by default");
            assertThrows(VerbsException.class, () -> c.qpA.setExtensions(JroceExtensions.SELECTIVE_REPEAT));
            assertThrows(IllegalArgumentException.class, () -> c.qpA.setExtensions(0x80));
        }
    }

    /** A 16-packet WRITE whose 3rd packet is dropped once; returns the counters of A's and B's QP. */
    private static QpCounters[] lossyWrite(int ext, String addrA, String addrB) throws Exception {
        FaultInjector drop = FaultInjector.builder().seed(1)
                .rule(FaultRule.drop().outbound().opcode(Opcode.RC_RDMA_WRITE_MIDDLE).psn(0x102)).build();
        try (Pair p = new Pair(new DeviceConfig(Pair.addr(addrA)).filter(drop).tailProbeMicros(0), new DeviceConfig(Pair.addr(addrB)))) {
            CompletionQueue cqA = p.a.createCq(8);
            CompletionQueue cqB = p.b.createCq(8);
            QueuePair qa = p.pdA.createQp(new QpInitAttr(cqA).maxSendWr(4).maxRecvWr(4));
            QueuePair qb = p.pdB.createQp(new QpInitAttr(cqB).maxSendWr(4).maxRecvWr(4));
            RcConnect.connectPair(qa, 0x100, qb, 0x200, RcConnect.Params.defaults().mtu(Mtu.MTU_256).extensions(ext));
            int n = 16 * 256;
            MemoryRegion src = p.pdA.allocateAndRegister(n, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(n, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            byte[] data = new byte[n];
            new Random(9).nextBytes(data);
            src.buffer().put(data);
            qa.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
            assertEquals(WcStatus.SUCCESS, Pair.awaitOne(cqA).status());
            byte[] got = new byte[n];
            dst.buffer().get(got);
            assertArrayEquals(data, got);
            return new QpCounters[] {qa.counters(), qb.counters()};
        }
    }

    /** Runs Pair.exchangeEveryOperation-like traffic with a pcap on A; returns A's datagrams, sent then received. */
    private static List<String> exchange(int ext, Path pcap, String addrA, String addrB) throws Exception {
        // a tail-loss probe of 2 s, not 1 ms: on a loaded machine an ACK later than 1 ms made the plain run probe
        // (resend its head with AckReq) and the selective-repeat run not, a difference of timing, not of protocol
        long probeMicros = 2_000_000;
        try (Pair p = new Pair(new DeviceConfig(Pair.addr(addrA)).pcap(pcap).tailProbeMicros(probeMicros),
                new DeviceConfig(Pair.addr(addrB)).tailProbeMicros(probeMicros))) {
            CompletionQueue cqA = p.a.createCq(16);
            CompletionQueue cqB = p.b.createCq(16);
            QueuePair qa = p.pdA.createQp(new QpInitAttr(cqA).maxSendWr(8).maxRecvWr(8));
            QueuePair qb = p.pdB.createQp(new QpInitAttr(cqB).maxSendWr(8).maxRecvWr(8));
            RcConnect.connectPair(qa, 0x10, qb, 0x20, RcConnect.Params.defaults().mtu(Mtu.MTU_1024).rdAtomic(2).extensions(ext));
            int n = 10_000;
            int remote = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
            MemoryRegion src = p.pdA.allocateAndRegister(n, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(n, remote);
            byte[] data = new byte[n];
            new Random(5).nextBytes(data);
            src.buffer().put(data);
            qb.postRecv(new ReceiveWorkRequest(7, Sge.of(dst)));
            qa.postSend(new SendWorkRequest(1, WrOpcode.SEND_WITH_IMM, Sge.of(src)).immData(3).signaled());
            assertEquals(WcStatus.SUCCESS, Pair.awaitOne(cqA).status());
            assertEquals(WcStatus.SUCCESS, Pair.awaitOne(cqB).status());
            qa.postSend(new SendWorkRequest(2, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
            assertEquals(WcStatus.SUCCESS, Pair.awaitOne(cqA).status());
            MemoryRegion back = p.pdA.allocateAndRegister(n, Access.LOCAL_WRITE);
            qa.postSend(new SendWorkRequest(3, WrOpcode.RDMA_READ, Sge.of(back)).remote(dst.address(), dst.rkey()).signaled());
            assertEquals(WcStatus.SUCCESS, Pair.awaitOne(cqA).status());
            MemoryRegion res = p.pdA.allocateAndRegister(8, Access.LOCAL_WRITE);
            qa.postSend(new SendWorkRequest(4, WrOpcode.ATOMIC_FETCH_AND_ADD, Sge.of(res)).remote(dst.address(), dst.rkey())
                    .compareAdd(5).signaled());
            assertEquals(WcStatus.SUCCESS, Pair.awaitOne(cqA).status());
            Pair.barrier(p.a);
        }
        byte[] self = Pair.addr(addrA).getAddress();
        List<String> out = new ArrayList<>();
        List<String> in = new ArrayList<>();
        for (PcapFrame f : PcapReader.readAll(pcap)) {
            if (!f.isUdp()) continue;
            byte[] d = f.data();
            byte[] src = Arrays.copyOfRange(d, f.udpOffset() - 8, f.udpOffset() - 4); // IPv4 source (no options)
            // the BTH (opcode, flags, P_Key, AckReq, PSN), an ACK's AETH, and the length: the memory addresses and
            // keys in RETHs differ from run to run, the ICRC covers the IP ID, and the destination QPN (BTH bytes 5..7)
            // too, since each device numbers its QPs from a random start
            int off = f.udpPayloadOffset();
            int op = d[off] & 0xFF;
            int head = op == 0x11 || op == 0x12 || op == 0x0d || op == 0x0f || op == 0x10 ? 16 : 12;
            String pkt = HexFormat.of().formatHex(d, off, off + 5) + "<qpn>" + HexFormat.of().formatHex(d, off + 8, off + head)
                    + " len " + f.udpPayloadLength();
            (Arrays.equals(src, self) ? out : in).add(pkt);
        }
        List<String> all = new ArrayList<>(out);
        all.add("--- received ---");
        all.addAll(in);
        return all;
    }
}
