package io.jroce.cli.conform;

import io.jroce.cli.Cli;
import io.jroce.endpoint.Gid;
import io.jroce.wire.mad.CmMra;
import io.jroce.wire.mad.CmRej;
import io.jroce.wire.mad.CmaHeader;
import io.jroce.wire.mad.MadHeader;
import io.jroce.wire.mad.SidrRep;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The CM MADs conform builds, byte by byte where the tables put each field, and how it reads the answers. */
class CmMadsTest {
    static final InetAddress US = addr("127.0.61.1");
    static final InetAddress PEER = addr("127.0.61.2");

    static InetAddress addr(String s) {
        try {
            return InetAddress.getByName(s);
        } catch (java.net.UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    private static int u8(byte[] m, int at) {
        return m[at] & 0xFF;
    }

    private static int u16(byte[] m, int at) {
        return u8(m, at) << 8 | u8(m, at + 1);
    }

    private static int u24(byte[] m, int at) {
        return u8(m, at) << 16 | u16(m, at + 1);
    }

    @Test
    void theReqHasEachFieldWhereIbtaTable106AndCmaHdrPutIt() {
        CmMads.Req r = new CmMads.Req(0x0102030405060708L, 0x11223344, 0x0A0B0C0D0E0F1011L, CmaHeader.serviceId(CmaHeader.PS_TCP, 7174),
                0xABCDEF, 0x123456, 3, 255, 0, Gid.of(US), Gid.of(PEER), 40000, US, PEER);
        byte[] m = CmMads.req(r);
        assertEquals(256, m.length);
        // MAD header: base version 1, class 7 (CM), class version 2, Send; attribute REQ 0x0010
        assertEquals(List.of(1, 7, 2, 3), List.of(u8(m, 0), u8(m, 1), u8(m, 2), u8(m, 3)));
        assertEquals(0x0102030405060708L, Unpooled.wrappedBuffer(m).getLong(8));
        assertEquals(0x0010, u16(m, 16));
        assertEquals(0x11223344, Unpooled.wrappedBuffer(m).getInt(24));
        assertEquals(0x0000000001061C06L, Unpooled.wrappedBuffer(m).getLong(32)); // (0x0106 << 16) + 7174
        assertEquals(0x0A0B0C0D0E0F1011L, Unpooled.wrappedBuffer(m).getLong(40));
        assertEquals(0xABCDEF, u24(m, 56));
        assertEquals(255, u8(m, 59)); // responder resources
        assertEquals(0, u8(m, 63)); // initiator depth
        assertEquals(20 << 3 | 0 << 1 | 1, u8(m, 67)); // remote CM response timeout 20, RC, end-to-end flow control
        assertEquals(0x123456, u24(m, 68));
        assertEquals(15 << 3 | 7, u8(m, 71)); // local CM response timeout 15, retry count 7
        assertEquals(0xFFFF, u16(m, 72));
        assertEquals(3 << 4 | 7, u8(m, 74)); // path MTU 1024, RNR retry 7
        assertEquals(15 << 4, u8(m, 75)); // max CM retries 15
        // primary path at 76: permissive LIDs, our GID, the peer's, hop limit 64, ACK timeout 19
        assertEquals(0xFFFF, u16(m, 76));
        assertEquals(0xFFFF, u16(m, 78));
        assertEquals(List.of(0xFF, 0xFF, 127, 0, 61, 1), List.of(u8(m, 90), u8(m, 91), u8(m, 92), u8(m, 93), u8(m, 94), u8(m, 95)));
        assertEquals(2, u8(m, 111));
        assertEquals(64, u8(m, 117));
        assertEquals(19 << 3, u8(m, 119));
        // rdma_cm header at 164: version 0, IPv4, our port, the addresses in the last 4 bytes of each field
        assertEquals(0, u8(m, 164));
        assertEquals(0x40, u8(m, 165));
        assertEquals(40000, u16(m, 166));
        assertEquals(List.of(127, 0, 61, 1), List.of(u8(m, 180), u8(m, 181), u8(m, 182), u8(m, 183)));
        assertEquals(List.of(127, 0, 61, 2), List.of(u8(m, 196), u8(m, 197), u8(m, 198), u8(m, 199)));
    }

    @Test
    void dreqAndRtuNameBothCommIds() {
        byte[] d = CmMads.dreq(5, 0x01020304, 0x0A0B0C0D, 0x000123);
        assertEquals(0x0015, u16(d, 16));
        assertEquals(0x01020304, Unpooled.wrappedBuffer(d).getInt(24));
        assertEquals(0x0A0B0C0D, Unpooled.wrappedBuffer(d).getInt(28));
        assertEquals(0x000123, u24(d, 32));
        byte[] t = CmMads.rtu(6, 0x01020304, 0x0A0B0C0D);
        assertEquals(0x0014, u16(t, 16));
        assertEquals(0x0A0B0C0D, Unpooled.wrappedBuffer(t).getInt(28));
    }

    @Test
    void answersReadAsWords() {
        byte[] rej = new byte[256];
        new CmRej().wrap(Unpooled.wrappedBuffer(rej), 0).init(1).reason(12).ari(new byte[16], 0, 16);
        assertEquals("REJ-12; ari=16", CmMads.word(rej, null));
        byte[] rej28 = new byte[256];
        new CmRej().wrap(Unpooled.wrappedBuffer(rej28), 0).init(1).reason(28);
        assertEquals("REJ-28", CmMads.word(rej28, null));
        byte[] mra = new byte[256];
        new CmMra().wrap(Unpooled.wrappedBuffer(mra), 0).init(1).messageMraed(CmMra.MRAED_REQ);
        assertEquals("MRA-req", CmMads.word(mra, null));
        byte[] sidr = new byte[256];
        new SidrRep().wrap(Unpooled.wrappedBuffer(sidr), 0).init(1).status(SidrRep.REJECT);
        assertEquals("SIDR_REP-2; qpn=0", CmMads.word(sidr, null));
        new SidrRep().wrap(Unpooled.wrappedBuffer(sidr), 0).qpn(0x42).status(SidrRep.SUCCESS);
        assertEquals("SIDR_REP-0; qpn=set", CmMads.word(sidr, null));
        byte[] get = CmMads.get(9, 0x30, 1, MadHeader.METHOD_GET, 0x1234);
        byte[] resp = get.clone();
        new MadHeader().wrap(Unpooled.wrappedBuffer(resp), 0).method(MadHeader.METHOD_GET_RESP).status(0x000C);
        assertEquals("GETRESP-0x000c; echo=ok", CmMads.word(resp, get));
        new MadHeader().wrap(Unpooled.wrappedBuffer(resp), 0).attributeId(0x4321);
        assertEquals("GETRESP-0x000c; echo=differs", CmMads.word(resp, get));
        byte[] other = CmMads.get(9, 0x07, 2, MadHeader.METHOD_SEND, 0x007F);
        assertEquals("CM-0x007f", CmMads.word(other, null));
        assertEquals("MAD-0x30/0x01/0x1234", CmMads.word(get, null));
        assertEquals("none", CmMads.words(List.of(), null));
        assertEquals("REJ-28 MRA-req", CmMads.words(List.of(rej28, mra), null));
    }

    @Test
    void aForeignAddressIsOfTheDocumentationRangesInTheSameFamily() {
        assertEquals("192.0.2.77", CmCases.foreign(US).getHostAddress());
        assertEquals("2001:db8:0:0:0:0:0:4d", CmCases.foreign(addr("::1")).getHostAddress());
    }

    @Test
    void theCmModesAreNamedInUsageErrors() {
        Cli.Result r = Cli.run("conform", "--via", "rping-cm", "127.0.61.2");
        assertEquals(2, r.exit());
        assertEquals(1, r.errLines().size(), r.err());
        assertTrue(r.err().contains("rping, perftest-write-cm, perftest-read-cm, perftest-send-cm, perftest-atomic-cm"), r.err());
        Cli.Result port = Cli.run("conform", "--via", "rping", "--port", "70000", "127.0.61.2");
        assertEquals(2, port.exit());
        assertTrue(port.err().contains("--port must be 1..65535"), port.err());
        Cli.Result len = Cli.run("conform", "--via", "rping", "--region-length", "4k", "127.0.61.2");
        assertEquals(2, len.exit());
        assertTrue(len.err().contains("--region-length is for --via perftest-*"), len.err());
    }
}
