package io.jroce.endpoint;

import io.jroce.wire.Icrc;
import io.jroce.wire.pcap.PcapFrame;
import io.jroce.wire.pcap.PcapReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Unreliable datagram queue pairs: UD SEND and SEND_WITH_IMM between two devices on loopback (IPv4 and IPv6),
 * the 40-byte GRH area checked byte by byte, Q_Key and missing-receive drops counted, oversize refused at post,
 * receive buffers too short completing with LOC_LEN_ERR, the QP 1 (GSI) Q_Key rules, and one golden packet
 * compared with a hand-built vector (and, when tshark is installed, decoded by Wireshark).
 */
class UdTest {
    private static final InetAddress A = Pair.addr("127.77.41.1");
    private static final InetAddress B = Pair.addr("127.77.41.2");
    private static final InetAddress LOOPBACK6 = Pair.addr("::1");
    private static final int QKEY = 0x11111111;

    private static Pair pair4() throws IOException {
        return new Pair(new DeviceConfig(A).port(0), new DeviceConfig(B).port(0));
    }

    /** A UD QP brought to RTS with the usual three modifies. */
    static QueuePair udQp(ProtectionDomain pd, CompletionQueue cq, int qkey, int sqPsn) {
        QueuePair qp = pd.createQp(new QpInitAttr(cq).qpType(QpType.UD));
        qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(qkey));
        qp.modify(new QpAttr().state(QpState.RTR));
        qp.modify(new QpAttr().state(QpState.RTS).sqPsn(sqPsn));
        return qp;
    }

    private static WorkCompletion one(CompletionQueue cq) {
        return Pair.awaitOne(cq);
    }

    /** Waits until the device counted a drop for {@code reason} (the datagram's only trace). */
    private static void awaitDrop(Device d, DropReason reason, long n) {
        Pair.until(reason + " drop counted", () -> d.counters().drops(reason) >= n);
    }

    @Test
    void sendAndSendWithImmOverIpv4WithGrh() throws Exception {
        try (Pair p = pair4()) {
            CompletionQueue cqA = p.a.createCq(16);
            CompletionQueue cqB = p.b.createCq(16);
            QueuePair qa = udQp(p.pdA, cqA, QKEY, 0x123456);
            QueuePair qb = udQp(p.pdB, cqB, QKEY, 0);
            assertEquals(QpType.UD, qa.type());
            assertEquals(QKEY, qa.query().qkey());
            MemoryRegion src = p.pdA.allocateAndRegister(1024, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(2 * 1064, Access.LOCAL_WRITE);
            byte[] data = new byte[1000];
            new Random(41).nextBytes(data);
            src.buffer().put(data);
            qb.postRecv(new ReceiveWorkRequest(1, Sge.of(dst, 0, 1064)));
            qb.postRecv(new ReceiveWorkRequest(2, Sge.of(dst, 1064, 1064)));
            AddressHandle ah = p.pdA.createAh(B, p.b.port());
            qa.postSend(new SendWorkRequest(10, WrOpcode.SEND, Sge.of(src, 0, 1000)).ud(ah, qb.qpNum(), QKEY).signaled());
            qa.postSend(new SendWorkRequest(11, WrOpcode.SEND_WITH_IMM, Sge.of(src, 0, 7)).immData(0xCAFE).ud(ah, qb.qpNum(), QKEY).signaled());
            List<WorkCompletion> sent = Pair.await(cqA, 2, 10_000);
            Wcs.assertOk(sent.get(0), 10, WcOpcode.SEND, 1000, qa);
            Wcs.assertOk(sent.get(1), 11, WcOpcode.SEND, 7, qa);

            WorkCompletion r1 = one(cqB);
            Wcs.assertOk(r1, 1, WcOpcode.RECV, 40 + 1000, qb);
            assertEquals(qa.qpNum(), r1.srcQp());
            assertEquals(WorkCompletion.WC_GRH, r1.wcFlags(), r1.toString());
            assertEquals(0, r1.pkeyIndex());
            byte[] got = new byte[1000];
            dst.buffer().position(40).get(got);
            assertArrayEquals(data, got);
            assertIpv4Grh(dst, 0, A, B, 1000, p.a.isEpoll());

            WorkCompletion r2 = one(cqB);
            Wcs.assertOk(r2, 2, WcOpcode.RECV, 40 + 7, qb);
            Wcs.assertImm(r2, 0xCAFE);
            assertEquals(WorkCompletion.WC_GRH | WorkCompletion.WC_WITH_IMM, r2.wcFlags());
            assertEquals(qa.qpNum(), r2.srcQp());
            byte[] got7 = new byte[7];
            dst.buffer().position(1064 + 40).get(got7);
            assertArrayEquals(Arrays.copyOf(data, 7), got7);
            assertIpv4Grh(dst, 1064, A, B, 7 + 4, p.a.isEpoll());

            // the answer goes back by the GRH's source address and the completion's src_qp, as ud_pingpong does
            MemoryRegion back = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            qa.postRecv(new ReceiveWorkRequest(3, Sge.of(back)));
            assertEquals(p.a.port(), r1.srcUdpPort(), "a jroce device sends from its bound port");
            AddressHandle reply = p.pdB.createAhFromWc(r1, dst.buffer(), r1.srcUdpPort());
            assertEquals(A, reply.address());
            assertEquals(4791, p.pdB.createAhFromWc(r1, dst.buffer()).udpPort());
            assertThrows(IllegalArgumentException.class, () -> p.pdB.createAhFromWc(sent.get(0), dst.buffer()), "a send completion has no GRH");
            qb.postSend(new SendWorkRequest(12, WrOpcode.SEND, Sge.of(dst, 40, 5)).ud(reply, r1.srcQp(), QKEY));
            WorkCompletion r3 = one(cqA);
            Wcs.assertOk(r3, 3, WcOpcode.RECV, 45, qa);
            assertEquals(qb.qpNum(), r3.srcQp());
            Pair.assertEmpty(cqB); // the unsignaled send left no completion
            assertEquals(0, p.a.counters().totalDrops(), p.a.counters().toString());
            assertEquals(0, p.b.counters().totalDrops(), p.b.counters().toString());
            // PSN advanced one per packet from the RTS value
            assertEquals(0x123458, qa.query().sqPsn());
        }
    }

    private static byte[] bytes(MemoryRegion mr, int off, int len) {
        byte[] b = new byte[len];
        mr.buffer().position(off).get(b);
        return b;
    }

    /** The GRH area of an IPv4 UD receive: 20 zero bytes, then the IPv4 header as rebuilt. */
    private static void assertIpv4Grh(MemoryRegion mr, int off, InetAddress src, InetAddress dst, int payloadAndImm, boolean epoll) {
        byte[] g = bytes(mr, off, 40);
        for (int i = 0; i < 20; i++) assertEquals(0, g[i], "GRH byte " + i + " (reserved for IPv4)");
        assertEquals(0x45, g[20] & 0xFF, "version 4, IHL 5");
        assertEquals(0, g[21], "TOS");
        int udpPayload = 12 + 8 + payloadAndImm + ((4 - payloadAndImm % 4) % 4) + 4; // BTH DETH [imm] payload pad ICRC
        assertEquals(20 + 8 + udpPayload, u16(g, 22), "IPv4 total length");
        if (epoll) assertEquals(0, u16(g, 24), "IPv4 ID: jroce sends 0 with epoll, and the ICRC solve recovers it");
        assertEquals(0x4000, u16(g, 26), "DF, offset 0");
        assertEquals(64, g[28] & 0xFF, "TTL");
        assertEquals(17, g[29] & 0xFF, "protocol UDP");
        int sum = 0;
        for (int i = 20; i < 40; i += 2) sum += u16(g, i);
        while ((sum >>> 16) != 0) sum = (sum & 0xFFFF) + (sum >>> 16);
        assertEquals(0xFFFF, sum, "IPv4 header checksum valid");
        assertNotEquals(0, u16(g, 30), "a checksum was written");
        assertArrayEquals(src.getAddress(), Arrays.copyOfRange(g, 32, 36), "source address");
        assertArrayEquals(dst.getAddress(), Arrays.copyOfRange(g, 36, 40), "destination address");
    }

    private static int u16(byte[] b, int i) {
        return (b[i] & 0xFF) << 8 | (b[i + 1] & 0xFF);
    }

    @Test
    void sendOverIpv6WithGrh() throws Exception {
        try (Pair p = new Pair(new DeviceConfig(LOOPBACK6).port(0), new DeviceConfig(LOOPBACK6).port(0))) {
            CompletionQueue cqA = p.a.createCq(4);
            CompletionQueue cqB = p.b.createCq(4);
            QueuePair qa = udQp(p.pdA, cqA, QKEY, 0);
            QueuePair qb = udQp(p.pdB, cqB, QKEY, 0);
            MemoryRegion src = p.pdA.allocateAndRegister(300, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(340, Access.LOCAL_WRITE);
            for (int i = 0; i < 300; i++) src.buffer().put(i, (byte) (i * 7));
            qb.postRecv(new ReceiveWorkRequest(1, Sge.of(dst)));
            qa.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(src)).ud(p.pdA.createAh(LOOPBACK6, p.b.port()), qb.qpNum(), QKEY).signaled());
            Wcs.assertOk(one(cqA), 1, WcOpcode.SEND, 300, qa);
            WorkCompletion r = one(cqB);
            Wcs.assertOk(r, 1, WcOpcode.RECV, 340, qb);
            assertEquals(qa.qpNum(), r.srcQp());
            assertTrue(r.hasGrh());
            byte[] g = bytes(dst, 0, 40);
            assertEquals(0x60, g[0] & 0xFF, "version 6, traffic class 0");
            assertEquals(0, g[1] | g[2] | g[3], "traffic class / flow label 0");
            assertEquals(8 + 12 + 8 + 300 + 4, u16(g, 4), "IPv6 payload length: UDP header + RoCE packet");
            assertEquals(17, g[6] & 0xFF, "next header UDP");
            assertEquals(64, g[7] & 0xFF, "hop limit");
            assertArrayEquals(LOOPBACK6.getAddress(), Arrays.copyOfRange(g, 8, 24), "source");
            assertArrayEquals(LOOPBACK6.getAddress(), Arrays.copyOfRange(g, 24, 40), "destination");
            for (int i = 0; i < 300; i++) assertEquals((byte) (i * 7), dst.buffer().get(40 + i), "payload byte " + i);
            // an IPv4 address handle on an IPv6 device is refused
            assertThrows(VerbsException.class, () -> p.pdA.createAh(A, 4791));
        }
    }

    @Test
    void qkeyMismatchAndMissingReceiveAreDroppedAndCounted() throws Exception {
        try (Pair p = pair4()) {
            CompletionQueue cqA = p.a.createCq(16);
            CompletionQueue cqB = p.b.createCq(16);
            QueuePair qa = udQp(p.pdA, cqA, QKEY, 0);
            QueuePair qb = udQp(p.pdB, cqB, QKEY, 0);
            MemoryRegion src = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(104, Access.LOCAL_WRITE);
            AddressHandle ah = p.pdA.createAh(B, p.b.port());
            // no receive posted: dropped (UD has no RNR), the send still completes
            qa.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(src)).ud(ah, qb.qpNum(), QKEY).signaled());
            Wcs.assertOk(one(cqA), 1, WcOpcode.SEND, 64, qa);
            awaitDrop(p.b, DropReason.NO_RECEIVE, 1);
            // wrong Q_Key: dropped although a receive waits
            qb.postRecv(new ReceiveWorkRequest(7, Sge.of(dst)));
            qa.postSend(new SendWorkRequest(2, WrOpcode.SEND, Sge.of(src)).ud(ah, qb.qpNum(), 0x22222222).signaled());
            Wcs.assertOk(one(cqA), 2, WcOpcode.SEND, 64, qa);
            awaitDrop(p.b, DropReason.QKEY, 1);
            assertEquals(1L, p.b.counters().asMap().get("drop_qkey"));
            assertEquals(1L, p.b.counters().asMap().get("drop_no_receive"));
            // unknown QPN
            qa.postSend(new SendWorkRequest(3, WrOpcode.SEND, Sge.of(src)).ud(ah, 0x777777, QKEY).signaled());
            Wcs.assertOk(one(cqA), 3, WcOpcode.SEND, 64, qa);
            awaitDrop(p.b, DropReason.UNKNOWN_QP, 1);
            Pair.assertEmpty(cqB);
            // the receive that waited takes the next right datagram
            qa.postSend(new SendWorkRequest(4, WrOpcode.SEND, Sge.of(src)).ud(ah, qb.qpNum(), QKEY).signaled());
            Wcs.assertOk(one(cqB), 7, WcOpcode.RECV, 104, qb);
            assertEquals(QpState.RTS, qb.state());
        }
    }

    @Test
    void receiveBufferTooShortCompletesWithLocalLengthError() throws Exception {
        try (Pair p = pair4()) {
            CompletionQueue cqA = p.a.createCq(16);
            CompletionQueue cqB = p.b.createCq(16);
            QueuePair qa = udQp(p.pdA, cqA, QKEY, 0);
            QueuePair qb = udQp(p.pdB, cqB, QKEY, 0);
            MemoryRegion src = p.pdA.allocateAndRegister(100, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(140, Access.LOCAL_WRITE);
            AddressHandle ah = p.pdA.createAh(B, p.b.port());
            // 100 bytes need 140 with the GRH: 139 is one short
            qb.postRecv(new ReceiveWorkRequest(1, Sge.of(dst, 0, 139)));
            qb.postRecv(new ReceiveWorkRequest(2, Sge.of(dst, 0, 140)));
            qa.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(src)).ud(ah, qb.qpNum(), QKEY));
            Wcs.assertFailed(one(cqB), 1, WcStatus.LOC_LEN_ERR, qb);
            assertEquals(QpState.RTS, qb.state(), "rxe class D: the UD QP stays usable");
            qa.postSend(new SendWorkRequest(2, WrOpcode.SEND, Sge.of(src)).ud(ah, qb.qpNum(), QKEY));
            Wcs.assertOk(one(cqB), 2, WcOpcode.RECV, 140, qb);
        }
    }

    @Test
    void postRefusesWhatUdCannotCarry() throws Exception {
        try (Pair p = pair4()) {
            CompletionQueue cq = p.a.createCq(16);
            QueuePair qa = udQp(p.pdA, cq, QKEY, 0);
            assertEquals(Mtu.MTU_1024, p.a.portMtu());
            MemoryRegion src = p.pdA.allocateAndRegister(2048, Access.LOCAL_WRITE);
            AddressHandle ah = p.pdA.createAh(B, p.b.port());
            VerbsException big = assertThrows(VerbsException.class,
                    () -> qa.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(src, 0, 1025)).ud(ah, 0x11, QKEY)));
            assertTrue(big.getMessage().contains("port MTU 1024"), big.getMessage());
            assertThrows(VerbsException.class, () -> qa.postSend(new SendWorkRequest(2, WrOpcode.RDMA_WRITE, Sge.of(src, 0, 8))
                    .remote(0, 0).ud(ah, 0x11, QKEY)));
            assertThrows(VerbsException.class, () -> qa.postSend(new SendWorkRequest(3, WrOpcode.SEND, Sge.of(src, 0, 8))));
            assertThrows(VerbsException.class, () -> qa.postSend(new SendWorkRequest(4, WrOpcode.SEND, Sge.of(src, 0, 8))
                    .ud(p.b.allocPd().createAh(A, p.a.port()), 0x11, QKEY)), "an AH of another device's PD");
            AddressHandle gone = p.pdA.createAh(B, p.b.port());
            gone.destroy();
            assertThrows(VerbsException.class, () -> qa.postSend(new SendWorkRequest(5, WrOpcode.SEND, Sge.of(src, 0, 8)).ud(gone, 0x11, QKEY)));
            Pair.barrier(p.a);
            Pair.assertEmpty(cq);
            assertEquals(0, p.a.counters().packetsOut, "nothing refused reached the wire");
            // exactly the port MTU is one packet and goes
            qa.postSend(new SendWorkRequest(6, WrOpcode.SEND, Sge.of(src, 0, 1024)).ud(ah, 0x11, QKEY).signaled());
            Wcs.assertOk(one(cq), 6, WcOpcode.SEND, 1024, qa);
            // a larger port MTU lets larger UD messages through
            try (Device big4k = Device.open(new DeviceConfig(Pair.addr("127.77.41.3")).port(0).portMtu(Mtu.MTU_4096))) {
                CompletionQueue cq4 = big4k.createCq(4);
                ProtectionDomain pd4 = big4k.allocPd();
                QueuePair q4 = udQp(pd4, cq4, QKEY, 0);
                MemoryRegion m4 = pd4.allocateAndRegister(4096, Access.LOCAL_WRITE);
                q4.postSend(new SendWorkRequest(7, WrOpcode.SEND, Sge.of(m4)).ud(pd4.createAh(B, p.b.port()), 0x11, QKEY).signaled());
                Wcs.assertOk(one(cq4), 7, WcOpcode.SEND, 4096, q4);
            }
        }
    }

    @Test
    void udStateTableTakesQkeyNotConnectionAttributes() throws Exception {
        try (Device d = Device.open(new DeviceConfig(A).port(0))) {
            ProtectionDomain pd = d.allocPd();
            QueuePair qp = pd.createQp(new QpInitAttr(d.createCq(4)).qpType(QpType.UD));
            VerbsException noQkey = assertThrows(VerbsException.class, () -> qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1)));
            assertTrue(noQkey.getMessage().contains("QKEY"), noQkey.getMessage());
            assertThrows(VerbsException.class, () -> qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(1).accessFlags(0)));
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(5));
            assertThrows(VerbsException.class, () -> qp.modify(new QpAttr().state(QpState.RTR).destQpNum(3)), "no DEST_QPN for UD");
            qp.modify(new QpAttr().state(QpState.RTR));
            assertThrows(VerbsException.class, () -> qp.modify(new QpAttr().state(QpState.RTS)), "RTS needs SQ_PSN");
            qp.modify(new QpAttr().state(QpState.RTS).sqPsn(9).qkey(6));
            assertEquals(6, qp.query().qkey());
            assertEquals(QpState.RTS, qp.state());
            // RC keeps its table: an RC QP does not take a Q_Key
            QueuePair rc = pd.createQp(new QpInitAttr(d.createCq(4)));
            assertEquals(QpType.RC, rc.type());
            assertThrows(VerbsException.class, () -> rc.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(0).qkey(1)));
        }
    }

    /** The UD table has the RC table's cells (IBA 10.3.1 is one state diagram) and never takes a connection attribute. */
    @Test
    void udTableHasTheSameCellsWithUdAttributes() {
        java.util.EnumSet<QpAttr.Field> rcOnly = java.util.EnumSet.of(QpAttr.Field.AV, QpAttr.Field.PATH_MTU, QpAttr.Field.DEST_QPN,
                QpAttr.Field.RQ_PSN, QpAttr.Field.MAX_DEST_RD_ATOMIC, QpAttr.Field.MIN_RNR_TIMER, QpAttr.Field.TIMEOUT,
                QpAttr.Field.RETRY_CNT, QpAttr.Field.RNR_RETRY, QpAttr.Field.MAX_QP_RD_ATOMIC, QpAttr.Field.ACCESS_FLAGS);
        int cells = 0;
        for (QpState from : QpState.values()) {
            for (QpState to : QpState.values()) {
                QpStateTable.Transition rc = QpStateTable.lookup(QpType.RC, from, to);
                QpStateTable.Transition ud = QpStateTable.lookup(QpType.UD, from, to);
                assertEquals(rc != null, ud != null, from + " -> " + to);
                if (ud == null) continue;
                cells++;
                for (QpAttr.Field f : rcOnly) {
                    assertFalse(ud.required().contains(f) || ud.optional().contains(f), from + " -> " + to + " takes " + f);
                }
                assertFalse(rc.required().contains(QpAttr.Field.QKEY) || rc.optional().contains(QpAttr.Field.QKEY), "RC takes no Q_Key");
            }
        }
        assertTrue(cells > 10, "cells: " + cells);
        assertEquals(java.util.EnumSet.of(QpAttr.Field.PKEY_INDEX, QpAttr.Field.PORT, QpAttr.Field.QKEY),
                QpStateTable.lookup(QpType.UD, QpState.RESET, QpState.INIT).required());
        assertEquals(java.util.EnumSet.of(QpAttr.Field.SQ_PSN), QpStateTable.lookup(QpType.UD, QpState.RTR, QpState.RTS).required());
        assertTrue(QpStateTable.lookup(QpType.UD, QpState.INIT, QpState.RTR).required().isEmpty());
    }

    @Test
    void gsiQpOneUsesTheControlledQkey() throws Exception {
        try (Pair p = pair4()) {
            CompletionQueue cqA = p.a.createCq(16);
            CompletionQueue cqB = p.b.createCq(16);
            QueuePair gsiA = p.pdA.openGsi(new QpInitAttr(cqA));
            QueuePair gsiB = p.b.openGsi(p.pdB, new QpInitAttr(cqB));
            assertEquals(1, gsiA.qpNum());
            assertEquals(QpType.UD, gsiA.type());
            assertEquals(QpState.RTS, gsiA.state(), "QP 1 is handed out in RTS");
            assertEquals(Device.GSI_QKEY, gsiA.query().qkey());
            assertThrows(VerbsException.class, () -> p.pdA.openGsi(new QpInitAttr(cqA)), "one GSI QP per device");
            MemoryRegion mad = p.pdA.allocateAndRegister(256, Access.LOCAL_WRITE);
            MemoryRegion in = p.pdB.allocateAndRegister(296 * 3, Access.LOCAL_WRITE);
            for (int i = 0; i < 256; i++) mad.buffer().put(i, (byte) i);
            gsiB.postRecv(Pair.chain(new ReceiveWorkRequest(1, Sge.of(in, 0, 296)), new ReceiveWorkRequest(2, Sge.of(in, 296, 296)),
                    new ReceiveWorkRequest(3, Sge.of(in, 592, 296))));
            AddressHandle toB = p.pdA.createAh(B, p.b.port());
            // QP 1 sends 0x80010000 whatever the WR says (rxe_req.c), and QP 1 accepts it
            gsiA.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(mad)).ud(toB, 1, 0).signaled());
            Wcs.assertOk(one(cqA), 1, WcOpcode.SEND, 256, gsiA);
            WorkCompletion r = one(cqB);
            Wcs.assertOk(r, 1, WcOpcode.RECV, 296, gsiB);
            assertEquals(1, r.srcQp());
            for (int i = 0; i < 256; i++) assertEquals((byte) i, in.buffer().get(40 + i));
            // an ordinary QP cannot forge the controlled Q_Key: its high bit means "my own Q_Key", which QP 1 drops
            QueuePair plain = udQp(p.pdA, cqA, QKEY, 0);
            plain.postSend(new SendWorkRequest(2, WrOpcode.SEND, Sge.of(mad)).ud(toB, 1, Device.GSI_QKEY).signaled());
            Wcs.assertOk(one(cqA), 2, WcOpcode.SEND, 256, plain);
            awaitDrop(p.b, DropReason.QKEY, 1);
            // and to an ordinary QP, a high-bit WR Q_Key sends the sender's own Q_Key, which matches
            QueuePair udB = udQp(p.pdB, cqB, QKEY, 0);
            udB.postRecv(new ReceiveWorkRequest(4, Sge.of(in, 0, 296)));
            plain.postSend(new SendWorkRequest(3, WrOpcode.SEND, Sge.of(mad)).ud(toB, udB.qpNum(), 0x80000000));
            Wcs.assertOk(one(cqB), 4, WcOpcode.RECV, 296, udB);
            // QP 1 can be opened again once destroyed
            gsiA.destroy();
            QueuePair again = p.pdA.openGsi(new QpInitAttr(cqA));
            assertEquals(1, again.qpNum());
        }
    }

    /**
     * One UD SEND_WITH_IMM as jroce records it, against a vector built here byte by byte: BTH (opcode 0x65,
     * pad 3, P_Key 0xFFFF, dest QP, AckReq clear, PSN), DETH (Q_Key, source QP), ImmDt, payload, pad, and the
     * ICRC computed here with java.util.zip.CRC32 over the masked pseudo-header (IBA A17.4.1).
     */
    @Test
    void goldenUdPacket(@TempDir Path dir) throws Exception {
        Path pcap = dir.resolve("ud.pcap");
        int bPort;
        int aPort;
        int qpnA;
        int qpnB;
        try (Pair p = new Pair(new DeviceConfig(A).port(0).pcap(pcap), new DeviceConfig(B).port(0))) {
            CompletionQueue cqA = p.a.createCq(4);
            CompletionQueue cqB = p.b.createCq(4);
            QueuePair qa = udQp(p.pdA, cqA, QKEY, 0xABCDEF);
            QueuePair qb = udQp(p.pdB, cqB, QKEY, 0);
            qpnA = qa.qpNum();
            qpnB = qb.qpNum();
            aPort = p.a.port();
            bPort = p.b.port();
            MemoryRegion src = p.pdA.allocateAndRegister(5, Access.LOCAL_WRITE);
            src.buffer().put("hello".getBytes(StandardCharsets.US_ASCII));
            MemoryRegion dst = p.pdB.allocateAndRegister(64, Access.LOCAL_WRITE);
            qb.postRecv(new ReceiveWorkRequest(1, Sge.of(dst)));
            qa.postSend(new SendWorkRequest(1, WrOpcode.SEND_WITH_IMM, Sge.of(src)).immData(0x01020304)
                    .ud(p.pdA.createAh(B, bPort), qpnB, QKEY).signaled());
            one(cqA);
            one(cqB);
            assumeTrue(p.a.isEpoll(), "the vector has IPv4 ID 0, what the epoll transport sends");
        }
        byte[] expected = {
            0x65, 0x30, (byte) 0xFF, (byte) 0xFF,                                   // opcode, SE0 M0 pad3 TVer0, P_Key
            0x00, (byte) (qpnB >>> 16), (byte) (qpnB >>> 8), (byte) qpnB,           // resv8, dest QP
            0x00, (byte) 0xAB, (byte) 0xCD, (byte) 0xEF,                            // AckReq 0, PSN
            0x11, 0x11, 0x11, 0x11, 0x00, (byte) (qpnA >>> 16), (byte) (qpnA >>> 8), (byte) qpnA, // DETH
            0x01, 0x02, 0x03, 0x04,                                                  // ImmDt
            'h', 'e', 'l', 'l', 'o', 0, 0, 0,                                        // payload + pad
            0, 0, 0, 0                                                               // ICRC, filled below
        };
        // the masked pseudo-header: 8 x FF, IPv4 header (TOS, TTL, checksum all ones; ID 0, DF), UDP (checksum FFFF),
        // BTH with byte 4 all ones
        int udpLen = 8 + expected.length;
        byte[] a = A.getAddress();
        byte[] b = B.getAddress();
        byte[] pseudo = {
            -1, -1, -1, -1, -1, -1, -1, -1,
            0x45, -1, (byte) ((20 + udpLen) >>> 8), (byte) (20 + udpLen), 0, 0, 0x40, 0, -1, 17, -1, -1,
            a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3],
            (byte) (aPort >>> 8), (byte) aPort, (byte) (bPort >>> 8), (byte) bPort, (byte) (udpLen >>> 8), (byte) udpLen, -1, -1
        };
        CRC32 crc = new CRC32();
        crc.update(pseudo);
        byte[] masked = expected.clone();
        masked[4] = -1;
        crc.update(masked, 0, masked.length - 4);
        long v = crc.getValue();
        for (int i = 0; i < 4; i++) expected[expected.length - 4 + i] = (byte) (v >>> (8 * i));

        List<PcapFrame> frames = PcapReader.readAll(pcap);
        assertEquals(1, frames.size(), "one datagram recorded: " + frames);
        PcapFrame f = frames.get(0);
        byte[] udp = Arrays.copyOfRange(f.data(), f.udpPayloadOffset(), f.udpPayloadOffset() + f.udpPayloadLength());
        assertArrayEquals(expected, udp, "UD SEND_WITH_IMM bytes");
        assertTrue(new Icrc().verifyIpPacket(f.asByteBuf(), f.ipOffset(), f.ipLength()));

        // Wireshark's reading of it, where tshark is installed
        assumeTrue(onPath("tshark"), "tshark not installed");
        Process t = new ProcessBuilder("tshark", "-r", pcap.toString(), "-d", "udp.port==" + bPort + ",infiniband",
                "--disable-protocol", "rpcordma", "-T", "fields", "-E", "separator=|",
                "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn",
                "-e", "infiniband.deth.q_key", "-e", "infiniband.deth.srcqp", "-e", "infiniband.immdt",
                "-e", "_ws.malformed", "-e", "_ws.expert.severity", "-e", "_ws.expert.message")
                .redirectErrorStream(true).start();
        String out = new String(t.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertTrue(t.waitFor(60, TimeUnit.SECONDS));
        String[] fld = out.lines().filter(l -> l.contains("|")).findFirst().orElseThrow(() -> new AssertionError("tshark: " + out)).split("\\|", -1);
        assertEquals("101", fld[0], "opcode 0x65 (UD SEND Only with Immediate): " + out);
        assertEquals(qpnB, Long.decode(fld[1]), out);
        assertEquals(0xABCDEF, Long.decode(fld[2]), out);
        assertEquals(QKEY, Long.decode(fld[3]), out);
        assertEquals(qpnA, Long.decode(fld[4]), out);
        assertTrue(fld[5].startsWith("01020304"), "immediate data: " + out);
        assertEquals("", fld[6], "malformed: " + out);
        // no expert info but Wireshark's note on a port: its UDP dissector (packet-udp.c) calls a datagram whose
        // source or destination port lies in 33435-33464 "Possible traceroute" (a Chat item about the port, not the
        // bytes), and both ports here are ephemeral
        List<String> expectedNotes = new ArrayList<>();
        for (int port : new int[] {aPort, bPort}) {
            if (port > 32768 + 666 && port <= 32768 + 666 + 30) {
                int n = port - 32768 - 666 - 1;
                expectedNotes.add("Possible traceroute: hop #" + (n / 3 + 1) + ", attempt #" + (n % 3 + 1));
            }
        }
        // tshark joins a field's occurrences with ',', and the note itself has one ("hop #5, attempt #2"): compare joined
        assertEquals(String.join(",", expectedNotes), fld[8], "expert info (ports " + aPort + " -> " + bPort + "): " + out);
    }

    static boolean onPath(String tool) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, tool))) return true;
        }
        return false;
    }
}
