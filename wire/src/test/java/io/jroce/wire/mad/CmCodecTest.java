package io.jroce.wire.mad;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

class CmCodecTest {
    private static final int AT = 5; // the MAD does not start at index 0

    private static ByteBuf mad() {
        ByteBuf b = Unpooled.buffer(AT + 256 + 3, AT + 256 + 3);
        b.writerIndex(b.capacity());
        b.setBytes(0, new byte[] {(byte) 0xEE, (byte) 0xEE, (byte) 0xEE, (byte) 0xEE, (byte) 0xEE});
        b.setBytes(AT + 256, new byte[] {(byte) 0xEE, (byte) 0xEE, (byte) 0xEE});
        return b;
    }

    /** The MAD bytes [from, to) as hex. */
    private static String hex(ByteBuf b, int from, int to) {
        return ByteBufUtil.hexDump(b, AT + from, to - from);
    }

    private static void assertOutsideUntouched(ByteBuf b) {
        assertEquals("eeeeeeeeee", ByteBufUtil.hexDump(b, 0, AT));
        assertEquals("eeeeee", ByteBufUtil.hexDump(b, AT + 256, 3));
    }

    @Test
    void headerIsTheCmSendHeader() {
        ByteBuf b = mad();
        new CmRtu().wrap(b, AT).init(0x0123456789ABCDEFL);
        assertEquals("01070203" + "0000" + "0000" + "0123456789abcdef" + "0014" + "0000" + "00000000", hex(b, 0, 24));
        MadHeader h = new MadHeader().wrap(b, AT);
        h.status(0xBEEF).classSpecific(0x1234).attributeModifier(0xCAFEF00D).method(0x83).baseVersion(2)
                .mgmtClass(0x81).classVersion(3).attributeId(0x0099).transactionId(-2);
        assertEquals(2, h.baseVersion());
        assertEquals(0x81, h.mgmtClass());
        assertEquals(3, h.classVersion());
        assertEquals(0x83, h.method());
        assertEquals(0xBEEF, h.status());
        assertEquals(0x1234, h.classSpecific());
        assertEquals(-2, h.transactionId());
        assertEquals(0x0099, h.attributeId());
        assertEquals(0xCAFEF00D, h.attributeModifier());
        assertEquals(false, h.isCmSend());
        assertOutsideUntouched(b);
    }

    /** Every field at its maximum: the ones land exactly where IBTA Table 106 puts them, reserved bits stay 0. */
    @Test
    void reqFieldsAtMaximumFillExactlyTheirBits() {
        ByteBuf b = mad();
        CmReq r = new CmReq().wrap(b, AT).init(0);
        r.localCommId(-1).vendorId(0xFFFFFF).serviceId(-1).localCaGuid(-1).localQkey(-1).localQpn(0xFFFFFF)
                .responderResources(0xFF).localEecn(0xFFFFFF).initiatorDepth(0xFF).remoteEecn(0xFFFFFF)
                .remoteCmResponseTimeout(31).transportServiceType(3).endToEndFlowControl(true)
                .startingPsn(0xFFFFFF).localCmResponseTimeout(31).retryCount(7).pkey(0xFFFF).pathMtu(15)
                .rdcExists(true).rnrRetryCount(7).maxCmRetries(15).srq(true).extendedTransportType(7)
                .sapSupported(true);
        byte[] ones = new byte[16];
        Arrays.fill(ones, (byte) 0xFF);
        for (CmPath p : new CmPath[] {r.primaryPath(), r.alternatePath()}) {
            p.localLid(0xFFFF).remoteLid(0xFFFF).localGid(ones).remoteGid(ones).flowLabel(0xFFFFF).packetRate(63)
                    .trafficClass(255).hopLimit(255).sl(15).subnetLocal(true).localAckTimeout(31);
        }
        assertEquals("ffffffff" + "00ffffff" + "ff".repeat(16) + "00000000" + "ff".repeat(24), hex(b, 24, 76));
        String path = "ff".repeat(36) + "fffff03f" + "ffff" + "f8" + "f8";
        assertEquals(path, hex(b, 76, 120));
        assertEquals(path.substring(0, path.length() - 2) + "fc", hex(b, 120, 164)); // + SAP Supported
        assertEquals("00".repeat(92), hex(b, 164, 256));
        assertOutsideUntouched(b);
    }

    @Test
    void repMraRejDreqFieldsAtMaximumFillExactlyTheirBits() {
        ByteBuf b = mad();
        new CmRep().wrap(b, AT).init(0).localCommId(-1).remoteCommId(-1).localQkey(-1).localQpn(0xFFFFFF)
                .vendorId(0xFFFFFF).localEecn(0xFFFFFF).startingPsn(0xFFFFFF).responderResources(255)
                .initiatorDepth(255).targetAckDelay(31).failoverAccepted(3).endToEndFlowControl(true)
                .rnrRetryCount(7).srq(true).localCaGuid(-1);
        assertEquals("ff".repeat(27) + "f0" + "ff".repeat(8) + "00".repeat(196), hex(b, 24, 256));

        new CmMra().wrap(b, AT).init(0).localCommId(-1).remoteCommId(-1).messageMraed(3).serviceTimeout(31);
        assertEquals("ff".repeat(8) + "c0f8" + "00".repeat(222), hex(b, 24, 256));

        byte[] ari = new byte[72];
        Arrays.fill(ari, (byte) 0xFF);
        new CmRej().wrap(b, AT).init(0).localCommId(-1).remoteCommId(-1).messageRejected(3).reason(0xFFFF)
                .ari(ari, 0, 72);
        assertEquals("ff".repeat(8) + "c0" + "90" + "ffff" + "ff".repeat(72) + "00".repeat(148), hex(b, 24, 256));
        new CmRej().wrap(b, AT).rejectInfoLength(127);
        assertEquals("c0fe", hex(b, 32, 34));

        new CmDreq().wrap(b, AT).init(0).localCommId(-1).remoteCommId(-1).remoteQpn(0xFFFFFF);
        assertEquals("ff".repeat(11) + "00" + "00".repeat(220), hex(b, 24, 256));
        assertOutsideUntouched(b);
    }

    /** Random values for every field, written in one order and read back: no two fields share a bit. */
    @Test
    void randomRoundTrips() {
        Random rnd = new Random(12);
        ByteBuf b = mad();
        byte[] g1 = new byte[16];
        byte[] g2 = new byte[16];
        byte[] out = new byte[16];
        for (int i = 0; i < 500; i++) {
            int[] v = rnd.ints(40).toArray();
            long l1 = rnd.nextLong();
            long l2 = rnd.nextLong();
            long tid = rnd.nextLong();
            rnd.nextBytes(g1);
            rnd.nextBytes(g2);
            boolean f1 = rnd.nextBoolean();
            boolean f2 = rnd.nextBoolean();
            boolean f3 = rnd.nextBoolean();
            boolean f4 = rnd.nextBoolean();
            CmReq r = new CmReq().wrap(b, AT).init(tid);
            r.primaryPath().localLid(v[20] & 0xFFFF).remoteLid(v[21] & 0xFFFF).localGid(g1).remoteGid(g2)
                    .flowLabel(v[22] & 0xFFFFF).packetRate(v[23] & 63).trafficClass(v[24] & 255)
                    .hopLimit(v[25] & 255).sl(v[26] & 15).subnetLocal(f4).localAckTimeout(v[27] & 31);
            r.localCommId(v[0]).vendorId(v[1] & 0xFFFFFF).serviceId(l1).localCaGuid(l2).localQkey(v[2])
                    .localQpn(v[3] & 0xFFFFFF).responderResources(v[4] & 255).localEecn(v[5] & 0xFFFFFF)
                    .initiatorDepth(v[6] & 255).remoteEecn(v[7] & 0xFFFFFF).remoteCmResponseTimeout(v[8] & 31)
                    .transportServiceType(v[9] & 3).endToEndFlowControl(f1).startingPsn(v[10] & 0xFFFFFF)
                    .localCmResponseTimeout(v[11] & 31).retryCount(v[12] & 7).pkey(v[13] & 0xFFFF)
                    .pathMtu(v[14] & 15).rdcExists(f2).rnrRetryCount(v[15] & 7).maxCmRetries(v[16] & 15)
                    .srq(f3).extendedTransportType(v[17] & 7).sapSupported(f1);
            r.alternatePath().localAckTimeout(v[18] & 31);
            assertEquals(tid, r.header().transactionId());
            assertEquals(0x0010, r.header().attributeId());
            assertEquals(v[0], r.localCommId());
            assertEquals(v[1] & 0xFFFFFF, r.vendorId());
            assertEquals(l1, r.serviceId());
            assertEquals(l2, r.localCaGuid());
            assertEquals(v[2], r.localQkey());
            assertEquals(v[3] & 0xFFFFFF, r.localQpn());
            assertEquals(v[4] & 255, r.responderResources());
            assertEquals(v[5] & 0xFFFFFF, r.localEecn());
            assertEquals(v[6] & 255, r.initiatorDepth());
            assertEquals(v[7] & 0xFFFFFF, r.remoteEecn());
            assertEquals(v[8] & 31, r.remoteCmResponseTimeout());
            assertEquals(v[9] & 3, r.transportServiceType());
            assertEquals(f1, r.endToEndFlowControl());
            assertEquals(v[10] & 0xFFFFFF, r.startingPsn());
            assertEquals(v[11] & 31, r.localCmResponseTimeout());
            assertEquals(v[12] & 7, r.retryCount());
            assertEquals(v[13] & 0xFFFF, r.pkey());
            assertEquals(v[14] & 15, r.pathMtu());
            assertEquals(f2, r.rdcExists());
            assertEquals(v[15] & 7, r.rnrRetryCount());
            assertEquals(v[16] & 15, r.maxCmRetries());
            assertEquals(f3, r.srq());
            assertEquals(v[17] & 7, r.extendedTransportType());
            assertEquals(f1, r.sapSupported());
            assertEquals(v[18] & 31, r.alternatePath().localAckTimeout());
            CmPath p = r.primaryPath();
            assertEquals(v[20] & 0xFFFF, p.localLid());
            assertEquals(v[21] & 0xFFFF, p.remoteLid());
            p.localGid(out, 0);
            assertArrayEquals(g1, out);
            p.remoteGid(out, 0);
            assertArrayEquals(g2, out);
            assertEquals(v[22] & 0xFFFFF, p.flowLabel());
            assertEquals(v[23] & 63, p.packetRate());
            assertEquals(v[24] & 255, p.trafficClass());
            assertEquals(v[25] & 255, p.hopLimit());
            assertEquals(v[26] & 15, p.sl());
            assertEquals(f4, p.subnetLocal());
            assertEquals(v[27] & 31, p.localAckTimeout());

            CmRep rep = new CmRep().wrap(b, AT).init(tid).localCaGuid(l2).srq(f1).rnrRetryCount(v[0] & 7)
                    .endToEndFlowControl(f2).failoverAccepted(v[1] & 3).targetAckDelay(v[2] & 31)
                    .initiatorDepth(v[3] & 255).responderResources(v[4] & 255).vendorId(v[5] & 0xFFFFFF)
                    .startingPsn(v[6] & 0xFFFFFF).localEecn(v[7] & 0xFFFFFF).localQpn(v[8] & 0xFFFFFF)
                    .localQkey(v[9]).remoteCommId(v[10]).localCommId(v[11]);
            assertEquals(0x0013, rep.header().attributeId());
            assertEquals(l2, rep.localCaGuid());
            assertEquals(f1, rep.srq());
            assertEquals(v[0] & 7, rep.rnrRetryCount());
            assertEquals(f2, rep.endToEndFlowControl());
            assertEquals(v[1] & 3, rep.failoverAccepted());
            assertEquals(v[2] & 31, rep.targetAckDelay());
            assertEquals(v[3] & 255, rep.initiatorDepth());
            assertEquals(v[4] & 255, rep.responderResources());
            assertEquals(v[5] & 0xFFFFFF, rep.vendorId());
            assertEquals(v[6] & 0xFFFFFF, rep.startingPsn());
            assertEquals(v[7] & 0xFFFFFF, rep.localEecn());
            assertEquals(v[8] & 0xFFFFFF, rep.localQpn());
            assertEquals(v[9], rep.localQkey());
            assertEquals(v[10], rep.remoteCommId());
            assertEquals(v[11], rep.localCommId());

            CmMra mra = new CmMra().wrap(b, AT).init(tid).serviceTimeout(v[0] & 31).messageMraed(v[1] & 3)
                    .remoteCommId(v[2]).localCommId(v[3]);
            assertEquals(v[0] & 31, mra.serviceTimeout());
            assertEquals(v[1] & 3, mra.messageMraed());
            assertEquals(v[2], mra.remoteCommId());
            assertEquals(v[3], mra.localCommId());

            CmRej rej = new CmRej().wrap(b, AT).init(tid).reason(v[0] & 0xFFFF).rejectInfoLength(v[1] & 127)
                    .messageRejected(v[2] & 3).remoteCommId(v[3]).localCommId(v[4]);
            assertEquals(v[0] & 0xFFFF, rej.reason());
            assertEquals(v[1] & 127, rej.rejectInfoLength());
            assertEquals(v[2] & 3, rej.messageRejected());
            assertEquals(v[3], rej.remoteCommId());
            assertEquals(v[4], rej.localCommId());

            CmDreq dreq = new CmDreq().wrap(b, AT).init(tid).remoteQpn(v[0] & 0xFFFFFF).remoteCommId(v[1])
                    .localCommId(v[2]);
            assertEquals(v[0] & 0xFFFFFF, dreq.remoteQpn());
            assertEquals(v[1], dreq.remoteCommId());
            assertEquals(v[2], dreq.localCommId());
            assertEquals(0x0015, dreq.header().attributeId());

            CmRtu rtu = new CmRtu().wrap(b, AT).init(tid).remoteCommId(v[0]).localCommId(v[1]);
            assertEquals(v[0], rtu.remoteCommId());
            assertEquals(v[1], rtu.localCommId());
            CmDrep drep = new CmDrep().wrap(b, AT).init(tid).remoteCommId(v[2]).localCommId(v[3]);
            assertEquals(v[2], drep.remoteCommId());
            assertEquals(v[3], drep.localCommId());
            assertEquals(0x0016, drep.header().attributeId());
            assertOutsideUntouched(b);
        }
    }

    @Test
    void privateDataAreasAndSizes() {
        ByteBuf b = mad();
        CmMessage<?>[] all = {new CmReq(), new CmMra(), new CmRej(), new CmRep(), new CmRtu(), new CmDreq(),
                new CmDrep()};
        int[] sizes = {92, 222, 148, 196, 224, 220, 224};
        for (int i = 0; i < all.length; i++) {
            CmMessage<?> m = all[i].wrap(b, AT).init(1);
            CmAttribute a = m.attribute();
            assertEquals(sizes[i], a.privateDataLength(), a.name());
            assertEquals(256, a.privateDataOffset() + a.privateDataLength(), a.name()); // it ends the MAD
            assertEquals(a, CmAttribute.of(0x10 + i));
            byte[] full = new byte[a.privateDataLength()];
            Arrays.fill(full, (byte) 0x5A);
            m.privateData(full, 0, full.length);
            m.privateData(new byte[] {1, 2, 3}, 0, 3); // shorter: the rest becomes 0
            byte[] back = new byte[a.privateDataLength()];
            m.privateData(back, 0);
            byte[] expected = new byte[a.privateDataLength()];
            expected[0] = 1;
            expected[1] = 2;
            expected[2] = 3;
            assertArrayEquals(expected, back, a.name());
            assertEquals(0, b.getByte(AT + a.privateDataOffset() - 1), "private data must not spill before its area");
            assertThrows(IllegalArgumentException.class, () -> m.privateData(new byte[300], 0, a.privateDataLength() + 1));
            assertOutsideUntouched(b);
        }
        assertNull(CmAttribute.of(0x0017)); // SIDR_REQ (decoded by SidrReq, not a connection message)
        assertNull(CmAttribute.of(0x0019)); // LAP
        assertNull(CmAttribute.of(0x000F));
        assertNull(CmAttribute.of(0x0001)); // ClassPortInfo
    }

    @Test
    void cmaHeaderIpv4AndIpv6() throws Exception {
        ByteBuf b = Unpooled.buffer(40, 40).writerIndex(40);
        b.setByte(36, 0x77);
        CmaHeader h = new CmaHeader().wrap(b, 0)
                .write(40000, InetAddress.getByName("10.77.0.12"), InetAddress.getByName("10.77.0.11"));
        assertEquals("00409c40" + "00".repeat(12) + "0a4d000c" + "00".repeat(12) + "0a4d000b" + "77",
                ByteBufUtil.hexDump(b, 0, 37));
        assertEquals(0, h.cmaVersion());
        assertEquals(4, h.ipVersion());
        assertEquals(40000, h.port());
        assertEquals(InetAddress.getByName("10.77.0.12"), h.sourceAddress());
        assertEquals(InetAddress.getByName("10.77.0.11"), h.destinationAddress());

        h.write(7174, InetAddress.getByName("2001:db8::1"), InetAddress.getByName("fe80::2"));
        assertEquals("00601c06" + "20010db8" + "00".repeat(11) + "01" + "fe80" + "00".repeat(13) + "02",
                ByteBufUtil.hexDump(b, 0, 36));
        assertEquals(6, h.ipVersion());
        assertEquals(InetAddress.getByName("2001:db8::1"), h.sourceAddress());
        assertEquals(InetAddress.getByName("fe80::2"), h.destinationAddress());
        byte[] f = new byte[16];
        h.destinationField(f, 0);
        assertEquals((byte) 0xFE, f[0]);
        assertThrows(IllegalArgumentException.class,
                () -> h.write(1, InetAddress.getByName("10.0.0.1"), InetAddress.getByName("::1")));
        b.setByte(1, 0x50);
        assertNull(h.sourceAddress());
    }

    @Test
    void rdmaCmServiceIds() {
        assertEquals(0x0000000001061C06L, CmaHeader.serviceId(CmaHeader.PS_TCP, 7174));
        assertEquals(0x000000000111FFFFL, CmaHeader.serviceId(CmaHeader.PS_UDP, 65535));
        assertEquals(CmaHeader.PS_TCP, CmaHeader.portSpace(0x0000000001064853L));
        assertEquals(18515, CmaHeader.port(0x0000000001064853L));
        assertEquals(CmaHeader.PS_IB, CmaHeader.portSpace(0x00000000013F0001L));
        assertEquals(-1, CmaHeader.portSpace(0x1000000001061C06L));
        assertEquals(-1, CmaHeader.portSpace(0x0000000001071C06L));
    }

    @Test
    void rejectReasonNames() {
        assertEquals("INVALID_SERVICE_ID", CmRej.reasonName(8));
        assertEquals("INVALID_GID", CmRej.reasonName(12));
        assertEquals("CONSUMER_DEFINED", CmRej.reasonName(28));
        assertEquals("INVALID_CLASS_VERSION", CmRej.reasonName(31));
        assertEquals("REASON_0", CmRej.reasonName(0));
        assertEquals("REASON_500", CmRej.reasonName(500));
    }
}
