package io.jroce.endpoint.cm;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QpType;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WcStatus;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;
import io.jroce.wire.mad.CmAttribute;
import io.jroce.wire.mad.CmRej;
import io.jroce.wire.mad.CmReq;
import io.jroce.wire.mad.SidrRep;
import io.jroce.wire.mad.SidrReq;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** rdma_cm's UDP port space over SIDR between two agents: what udaddy does. */
class CmUdpTest {
    static final Duration T = Duration.ofSeconds(10);
    static final int PORT = 7174;

    private static CmId udListener(CmNet n) {
        CmId l = CmId.create(n.cmB, n.chB, "ud listener", CmPortSpace.UDP);
        l.bind(PORT);
        l.listen(8);
        return l;
    }

    private static CmId udClient(CmNet n, int port, byte[] data) {
        CmId c = CmId.create(n.cmA, n.chA, "ud client", CmPortSpace.UDP);
        c.createQp(n.pdA, new QpInitAttr(n.cqA).qpType(QpType.UD));
        c.connect(CmNet.B, port, CmConnParam.defaults().privateData(data));
        return c;
    }

    @Test
    void sidrResolvesTheListenersQpAndUdSendsReachIt() throws Exception {
        try (CmNet n = new CmNet()) {
            udListener(n);
            CmId client = udClient(n, PORT, "hello".getBytes(StandardCharsets.US_ASCII));
            assertEquals(QpState.RTS, client.qp().state(), "rdma_create_qp takes a UD QP to RTS");
            assertEquals(CmPortSpace.UDP_QKEY, client.qkey());

            // the SIDR_REQ as cma.c writes it
            SidrReq sreq = new SidrReq().wrap(Unpooled.wrappedBuffer(n.mads.lastSent(SidrReq.ATTRIBUTE_ID)), 0);
            assertEquals(0x0000000001110000L | PORT, sreq.serviceId());
            assertEquals(0xFFFF, sreq.pkey());

            CmEvent req = n.chB.expect(CmEventType.CONNECT_REQUEST, T);
            CmId server = req.id();
            assertEquals(CmPortSpace.UDP, server.portSpace());
            assertEquals(CmNet.A, server.remoteAddress());
            assertEquals(client.localPort(), server.remotePort());
            assertEquals(180, req.privateData().length, "216 bytes minus rdma_cm's header");
            assertEquals("hello", new String(req.privateData(), 0, 5, StandardCharsets.US_ASCII));
            server.createQp(n.pdB, new QpInitAttr(n.cqB).qpType(QpType.UD));
            MemoryRegion in = n.pdB.allocateAndRegister(4096, Access.LOCAL_WRITE);
            for (int i = 0; i < 3; i++) server.qp().postRecv(new ReceiveWorkRequest(i, Sge.of(in, i * 1024L, 1024)));
            server.accept(CmConnParam.defaults().privateData(new byte[] {7}));

            SidrRep srep = new SidrRep().wrap(Unpooled.wrappedBuffer(n.mads.lastSent(SidrRep.ATTRIBUTE_ID)), 0);
            assertEquals(SidrRep.SUCCESS, srep.status());
            assertEquals(server.qp().qpNum(), srep.qpn());
            assertEquals(CmPortSpace.UDP_QKEY, srep.qkey());
            assertEquals(sreq.requestId(), srep.requestId());
            assertEquals(sreq.serviceId(), srep.serviceId());

            CmEvent est = n.chA.expect(CmEventType.ESTABLISHED, T);
            CmUdParam ud = est.ud();
            assertNotNull(ud);
            assertEquals(server.qp().qpNum(), ud.qpNum());
            assertEquals(CmPortSpace.UDP_QKEY, ud.qkey());
            assertEquals(7, est.privateData()[0]);
            assertEquals(ud, client.udParam());

            // several messages over what SIDR gave
            MemoryRegion out = n.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            WorkCompletion[] wc = new WorkCompletion[1];
            for (int i = 0; i < 3; i++) {
                out.buffer().put(0, ("msg " + i).getBytes(StandardCharsets.US_ASCII));
                client.qp().postSend(new SendWorkRequest(10 + i, WrOpcode.SEND, Sge.of(out, 0, 5))
                        .ud(ud.ah(), ud.qpNum(), ud.qkey()).signaled());
                assertEquals(1, n.cqA.poll(wc, 5, TimeUnit.SECONDS));
                assertEquals(WcStatus.SUCCESS, wc[0].status(), wc[0].toString());
                assertEquals(1, n.cqB.poll(wc, 5, TimeUnit.SECONDS));
                assertEquals(WcStatus.SUCCESS, wc[0].status(), wc[0].toString());
                assertEquals(client.qp().qpNum(), wc[0].srcQp());
                byte[] got = new byte[5];
                in.buffer().get((int) wc[0].wrId() * 1024 + 40, got); // after the 40-byte GRH area
                assertEquals("msg " + i, new String(got, StandardCharsets.US_ASCII));
            }
            assertEquals(0, n.cmB.pendingCount());
        }
    }

    @Test
    void acceptWithAQkeyAnnouncesIt() throws Exception {
        try (CmNet n = new CmNet()) {
            udListener(n);
            udClient(n, PORT, new byte[0]);
            CmId server = n.chB.expect(CmEventType.CONNECT_REQUEST, T).id();
            server.createQp(n.pdB, new QpInitAttr(n.cqB).qpType(QpType.UD));
            server.accept(CmConnParam.defaults().qkey(0x11111111));
            assertEquals(0x11111111, n.chA.expect(CmEventType.ESTABLISHED, T).ud().qkey());
            assertEquals(0x11111111, server.qkey());
        }
    }

    @Test
    void aRejectIsUnreachableWithStatus2AndThePrivateData() throws Exception {
        try (CmNet n = new CmNet()) {
            udListener(n);
            CmId client = udClient(n, PORT, new byte[0]);
            n.chB.expect(CmEventType.CONNECT_REQUEST, T).id().reject("no".getBytes(StandardCharsets.US_ASCII));
            CmEvent e = n.chA.expect(CmEventType.UNREACHABLE, T);
            assertEquals(SidrRep.REJECT, e.status());
            assertEquals("no", new String(e.privateData(), 0, 2, StandardCharsets.US_ASCII));
            assertEquals(CmId.State.DONE, client.state());
            assertEquals(QpState.RTS, client.qp().state(), "the UD QP is left as it is");
            assertEquals(0, n.cmB.pendingCount());
        }
    }

    @Test
    void aPortNobodyListensOnIsUnreachableWithStatus1() throws Exception {
        try (CmNet n = new CmNet()) {
            udClient(n, 9999, new byte[0]);
            assertEquals(SidrRep.UNSUPPORTED, n.chA.expect(CmEventType.UNREACHABLE, T).status());
            assertEquals(0, n.cmA.counters().retransmits());
        }
    }

    @Test
    void anUnansweredSidrReqIsResentThenUnreachable() throws Exception {
        try (CmNet n = new CmNet()) {
            n.mads.drop((to, mad) -> MadLoopback.attributeId(mad) == SidrReq.ATTRIBUTE_ID);
            udClient(n, PORT, new byte[0]);
            assertEquals(CmEvent.ETIMEDOUT, n.chA.expect(CmEventType.UNREACHABLE, T).status());
            assertEquals(4, n.cmA.counters().retransmits(), "max CM retries");
        }
    }

    @Test
    void aResentSidrReqWhileTheApplicationDecidesIsDropped() throws Exception {
        try (CmNet n = new CmNet()) {
            udListener(n);
            udClient(n, PORT, new byte[0]);
            CmEvent req = n.chB.expect(CmEventType.CONNECT_REQUEST, T);
            byte[] sreq = n.mads.lastSent(SidrReq.ATTRIBUTE_ID);
            n.mads.inject(CmNet.A, CmNet.B, sreq, sreq.length);
            n.cmB.counters();
            assertNull(n.chB.getEvent(100, TimeUnit.MILLISECONDS), "one CONNECT_REQUEST");
            assertEquals(1, n.cmB.pendingCount());
            req.id().close(); // destroyed unanswered: rejected
            assertEquals(SidrRep.REJECT, n.chA.expect(CmEventType.UNREACHABLE, T).status());
        }
    }

    @Test
    void tcpAndUdpPortsAreSeparateAndTheirRequestsDoNotCross() throws Exception {
        try (CmNet n = new CmNet()) {
            udListener(n);
            CmId tcp = CmId.create(n.cmB, n.chB, "tcp", CmPortSpace.TCP);
            tcp.bind(PORT); // the same number in the other port space is free
            CmId udp = CmId.create(n.cmB, n.chB, "udp", CmPortSpace.UDP);
            assertThrows(IllegalStateException.class, () -> udp.bind(PORT), "EADDRINUSE in its own port space");
            // an RC REQ for the UDP listener's service ID: ib_cm matches it, rdma_cm refuses it (REJ 28)
            byte[] req = CmFidelityTest.req(0x31, 0x300, 1, 1);
            new CmReq().wrap(Unpooled.wrappedBuffer(req), 0).serviceId(CmPortSpace.UDP.serviceId(PORT));
            CmFidelityTest.toB(n, req);
            CmRej rej = new CmRej().wrap(Unpooled.wrappedBuffer(n.mads.lastSent(CmAttribute.REJ.id())), 0);
            assertEquals(28, rej.reason());
            assertEquals(0x31, rej.remoteCommId());
            assertNull(n.chB.getEvent(50, TimeUnit.MILLISECONDS), "no CONNECT_REQUEST");
            // a UD id needs a UD QP
            CmId wrong = CmId.create(n.cmA, n.chA, null, CmPortSpace.UDP);
            assertThrows(IllegalArgumentException.class, () -> wrong.createQp(n.pdA, new QpInitAttr(n.cqA)));
        }
    }
}
