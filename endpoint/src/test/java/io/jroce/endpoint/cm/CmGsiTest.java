package io.jroce.endpoint.cm;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.AddressHandle;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.DeviceConfig;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpAttr;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QpType;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WcStatus;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;
import io.jroce.endpoint.fault.FaultInjector;
import io.jroce.endpoint.fault.FaultRule;
import io.jroce.wire.mad.MadHeader;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The CM over the devices' real QP 1 (UD over UDP on loopback), with MADs lost by the devices' fault injectors. */
class CmGsiTest {
    static final Duration T = Duration.ofSeconds(10);
    static final InetAddress A = CmNet.addr("127.77.42.1");
    static final InetAddress B = CmNet.addr("127.77.42.2");
    static final int PORT = 18515;

    /** Two devices, their agents on QP 1, a listener on B; fault injectors on both (rules added by the tests). */
    static final class Net implements AutoCloseable {
        final FaultInjector faultA = FaultInjector.builder().seed(1).build();
        final FaultInjector faultB = FaultInjector.builder().seed(2).build();
        final Device a;
        final Device b;
        final CmAgent cmA;
        final CmAgent cmB;
        final CmEventChannel chA = new CmEventChannel();
        final CmEventChannel chB = new CmEventChannel();
        final ProtectionDomain pdA;
        final ProtectionDomain pdB;
        final CompletionQueue cqA;
        final CompletionQueue cqB;
        final CmId listener;

        Net() throws Exception {
            a = Device.open(new DeviceConfig(A).port(0).filter(faultA));
            b = Device.open(new DeviceConfig(B).port(0).filter(faultB));
            cmA = CmAgent.open(a, CmNet.testConfig(1).peerUdpPort(b.port()));
            cmB = CmAgent.open(b, CmNet.testConfig(2).peerUdpPort(a.port()));
            pdA = a.allocPd();
            pdB = b.allocPd();
            cqA = a.createCq(64);
            cqB = b.createCq(64);
            listener = CmId.create(cmB, chB);
            listener.bind(PORT);
            listener.listen(8);
        }

        CmId[] connect() throws Exception {
            CmId client = CmId.create(cmA, chA);
            client.createQp(pdA, new QpInitAttr(cqA));
            client.connect(B, PORT, CmConnParam.defaults().privateData("req".getBytes(StandardCharsets.US_ASCII)));
            CmEvent req = chB.expect(CmEventType.CONNECT_REQUEST, T);
            assertEquals("req", new String(req.privateData(), 0, 3, StandardCharsets.US_ASCII));
            assertEquals(A, req.id().remoteAddress());
            CmId server = req.id();
            server.createQp(pdB, new QpInitAttr(cqB));
            server.accept(null);
            chA.expect(CmEventType.ESTABLISHED, T);
            chB.expect(CmEventType.ESTABLISHED, T);
            return new CmId[] {client, server};
        }

        @Override
        public void close() {
            cmA.close();
            cmB.close();
            a.close();
            b.close();
        }
    }

    static void sendAndWrite(Net n, QueuePair qpA, QueuePair qpB) throws Exception {
        MemoryRegion src = n.pdA.allocateAndRegister(4096, Access.LOCAL_WRITE);
        MemoryRegion dst = n.pdB.allocateAndRegister(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        src.buffer().put(0, "over QP 1 and back".getBytes(StandardCharsets.US_ASCII));
        qpB.postRecv(new ReceiveWorkRequest(5, Sge.of(dst, 1000, 100)));
        qpA.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(src, 0, 18)).remote(dst.address(), dst.rkey()));
        qpA.postSend(new SendWorkRequest(2, WrOpcode.SEND, Sge.of(src, 0, 4)).signaled());
        WorkCompletion[] wc = new WorkCompletion[1];
        assertEquals(1, n.cqA.poll(wc, 5, TimeUnit.SECONDS));
        assertEquals(WcStatus.SUCCESS, wc[0].status(), wc[0].toString());
        assertEquals(1, n.cqB.poll(wc, 5, TimeUnit.SECONDS));
        assertEquals(WcStatus.SUCCESS, wc[0].status(), wc[0].toString());
        assertEquals(4, wc[0].byteLen());
        byte[] landed = new byte[18];
        dst.buffer().get(0, landed);
        assertEquals("over QP 1 and back", new String(landed, StandardCharsets.US_ASCII));
    }

    @Test
    void connectWriteSendDisconnect() throws Exception {
        try (Net n = new Net()) {
            CmId[] ids = n.connect();
            sendAndWrite(n, ids[0].qp(), ids[1].qp());
            ids[1].disconnect();
            n.chA.expect(CmEventType.DISCONNECTED, T);
            n.chB.expect(CmEventType.DISCONNECTED, T);
        }
    }

    @Test
    void ipv6ConnectOverQp1() throws Exception {
        InetAddress six = InetAddress.getByName("::1");
        try (Device a = Device.open(new DeviceConfig(six).port(0)); Device b = Device.open(new DeviceConfig(six).port(0));
             CmAgent cmA = CmAgent.open(a, CmNet.testConfig(3).peerUdpPort(b.port()));
             CmAgent cmB = CmAgent.open(b, CmNet.testConfig(4).peerUdpPort(a.port()));
             CmEventChannel chA = new CmEventChannel(); CmEventChannel chB = new CmEventChannel()) {
            CmId listener = CmId.create(cmB, chB);
            listener.listen(4);
            CmId client = CmId.create(cmA, chA);
            client.createQp(a.allocPd(), new QpInitAttr(a.createCq(8)));
            client.connect(six, listener.localPort(), null);
            CmEvent req = chB.expect(CmEventType.CONNECT_REQUEST, T);
            assertEquals(six, req.id().remoteAddress(), "the rdma_cm header's IPv6 source");
            req.id().createQp(b.allocPd(), new QpInitAttr(b.createCq(8)));
            req.id().accept(null);
            chA.expect(CmEventType.ESTABLISHED, T);
            chB.expect(CmEventType.ESTABLISHED, T);
            client.disconnect();
            chB.expect(CmEventType.DISCONNECTED, T);
        }
    }

    @Test
    void noListenerIsRejectedWithReason8() throws Exception {
        try (Net n = new Net()) {
            CmId client = CmId.create(n.cmA, n.chA);
            client.createQp(n.pdA, new QpInitAttr(n.cqA));
            client.connect(B, PORT + 1, null);
            CmEvent e = n.chA.expect(CmEventType.REJECTED, T);
            assertEquals(8, e.status());
            assertEquals(0, n.cmA.counters().retransmits());
        }
    }

    @Test
    void reqLostOnTheWireIsResent() throws Exception {
        try (Net n = new Net()) {
            n.faultA.addRule(FaultRule.drop().outbound().destQp(1));
            CmId[] ids = n.connect();
            assertTrue(n.cmA.counters().retransmits() >= 1);
            sendAndWrite(n, ids[0].qp(), ids[1].qp());
        }
    }

    @Test
    void repLostOnTheWireIsResentAndTheDuplicateReqHandled() throws Exception {
        try (Net n = new Net()) {
            n.faultB.addRule(FaultRule.drop().outbound().destQp(1));
            CmId[] ids = n.connect();
            assertTrue(n.cmB.counters().retransmits() + n.cmA.counters().retransmits() >= 1);
            sendAndWrite(n, ids[0].qp(), ids[1].qp());
            ids[0].disconnect();
            n.chA.expect(CmEventType.DISCONNECTED, T);
            n.chB.expect(CmEventType.DISCONNECTED, T);
        }
    }

    /**
     * The MAD layer answers a Get from any QP back to that QP (mad.c agent_send_response), over the real QP 1: a UD
     * QP of A sends a Get of an unassigned class to B's QP 1 and receives B's GetResp 0x000C from QP 1.
     */
    @Test
    void aGetNoAgentTakesIsAnsweredToTheQpItCameFrom() throws Exception {
        try (Net n = new Net()) {
            QueuePair ud = n.pdA.createQp(new QpInitAttr(n.cqA).qpType(QpType.UD));
            ud.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(Device.GSI_QKEY));
            ud.modify(new QpAttr().state(QpState.RTR));
            ud.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
            MemoryRegion buf = n.pdA.allocateAndRegister(1024, Access.LOCAL_WRITE);
            ud.postRecv(new ReceiveWorkRequest(1, Sge.of(buf, 512, 40 + 256)));
            byte[] get = new byte[256];
            new MadHeader().wrap(Unpooled.wrappedBuffer(get), 0).baseVersion(1).mgmtClass(0x30)
                    .classVersion(1).method(MadHeader.METHOD_GET).transactionId(0x77).attributeId(0x20);
            buf.buffer().put(0, get);
            AddressHandle ah = n.pdA.createAh(B, n.b.port());
            ud.postSend(new SendWorkRequest(2, WrOpcode.SEND,
                    Sge.of(buf, 0, 256)).ud(ah, 1, Device.GSI_QKEY).signaled());
            WorkCompletion[] wc = new WorkCompletion[1];
            WorkCompletion recv = null;
            long deadline = System.nanoTime() + T.toNanos();
            while (recv == null && System.nanoTime() < deadline) {
                if (n.cqA.poll(wc, 1, TimeUnit.SECONDS) == 1 && wc[0].wrId() == 1) recv = wc[0];
            }
            assertNotNull(recv, "the GetResp came back to the sending QP");
            assertEquals(WcStatus.SUCCESS, recv.status(), recv.toString());
            assertEquals(1, recv.srcQp(), "from QP 1");
            byte[] resp = new byte[256];
            buf.buffer().get(512 + 40, resp);
            assertEquals(0x30, resp[1]);
            assertEquals(MadHeader.METHOD_GET_RESP, resp[3] & 0xFF);
            assertEquals(0x0C, resp[5]);
            assertEquals(0x77, resp[15]);
            assertEquals(1, n.cmB.counters().madRepliesOtherClass());
        }
    }
}
