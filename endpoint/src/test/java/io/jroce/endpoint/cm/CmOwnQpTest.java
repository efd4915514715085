package io.jroce.endpoint.cm;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.QpAttr;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WcStatus;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Connections whose QPs the applications create and move themselves (librdmacm's conn_param.qp_num, rping -q): the CM
 * names them in REQ and REP, never modifies them, and hands out the attributes ({@link CmId#initQpAttr}) that connect
 * them; the active side's REP is a CONNECT_RESPONSE and {@link CmId#establish} sends the RTU. Devices on 127.0.23.40 and
 * .41 (UDP port 0).
 */
class CmOwnQpTest {
    static final Duration T = Duration.ofSeconds(10);
    static final int PORT = 23030;
    static final InetAddress A = CmNet.addr("127.0.23.40");
    static final InetAddress B = CmNet.addr("127.0.23.41");
    /** A REQ or REP resent after about a second, so that a slow test machine does not time the connection out. */
    static final java.util.function.UnaryOperator<CmConfig> SLOW = c -> c.cmResponseTimeout(18);

    /** Moves the application's QP through INIT, RTR and RTS with the id's attributes. */
    private static void connectOwn(CmId id, QueuePair qp) {
        for (QpState s : new QpState[] {QpState.INIT, QpState.RTR, QpState.RTS}) {
            QpAttr a = id.initQpAttr(s);
            assertEquals(s, a.state());
            qp.modify(a);
            assertEquals(s, qp.state());
        }
    }

    @Test
    void bothSidesConnectTheirOwnQpsAndASendArrives() throws Exception {
        try (CmNet n = new CmNet(A, B, SLOW, SLOW)) {
            CmId listener = CmId.create(n.cmB, n.chB);
            listener.bind(PORT);
            listener.listen(4);
            CmId client = CmId.create(n.cmA, n.chA);
            client.resolveAddr(B, PORT, T);
            n.chA.expect(CmEventType.ADDR_RESOLVED, T);
            client.resolveRoute(T);
            n.chA.expect(CmEventType.ROUTE_RESOLVED, T);
            // before a connection: INIT with no access (cma.c cma_ib_init_qp_attr)
            QpAttr early = client.initQpAttr(QpState.INIT);
            assertEquals(0, early.accessFlags());
            assertTrue(early.has(QpAttr.Field.PKEY_INDEX) && early.has(QpAttr.Field.PORT) && !early.has(QpAttr.Field.AV));
            client.setAckTimeout(17);

            QueuePair qpA = n.pdA.createQp(new QpInitAttr(n.cqA));
            client.ownQp(qpA.qpNum());
            client.connect(CmConnParam.defaults().responderResources(1).initiatorDepth(1));
            assertThrows(IllegalStateException.class, () -> client.initQpAttr(QpState.RTR), "RTR before the REP");

            CmEvent req = n.chB.expect(CmEventType.CONNECT_REQUEST, T);
            CmId server = req.id();
            QueuePair qpB = n.pdB.createQp(new QpInitAttr(n.cqB));
            connectOwn(server, qpB);
            assertEquals(qpA.qpNum(), qpB.query().destQpNum());
            server.ownQp(qpB.qpNum());
            server.accept(CmConnParam.defaults().responderResources(1).initiatorDepth(1));
            assertEquals(QpState.RTS, qpB.state());

            CmEvent resp = n.chA.expect(CmEventType.CONNECT_RESPONSE, T);
            assertEquals(client, resp.id());
            assertEquals(QpState.RESET, qpA.state(), "the CM never moves an application's own QP");
            assertEquals(17, client.initQpAttr(QpState.RTS).timeout(), "RDMA_OPTION_ID_ACK_TIMEOUT replaces the path's");
            connectOwn(client, qpA);
            assertEquals(qpB.qpNum(), qpA.query().destQpNum());
            assertEquals(17, qpA.query().timeout());
            assertNull(n.chB.getEvent(Duration.ofMillis(100)), "no ESTABLISHED before the RTU");
            client.establish();
            assertEquals(CmId.State.ESTABLISHED, client.state());
            n.chB.expect(CmEventType.ESTABLISHED, T);
            assertThrows(IllegalStateException.class, client::establish, "rdma_establish twice");
            IllegalStateException again = assertThrows(IllegalStateException.class, server::commEstablished);
            assertTrue(again.getMessage().contains("(EISCONN)"), again.getMessage());

            // the attributes agree: the PSNs, QPNs and path carry a SEND
            MemoryRegion src = n.pdA.allocateAndRegister(4096, Access.LOCAL_WRITE);
            MemoryRegion dst = n.pdB.allocateAndRegister(4096, Access.LOCAL_WRITE);
            src.buffer().put(0, "own QPs".getBytes(StandardCharsets.US_ASCII));
            qpB.postRecv(new ReceiveWorkRequest(7, Sge.of(dst, 0, 64)));
            qpA.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(src, 0, 7)).signaled());
            WorkCompletion[] wc = new WorkCompletion[1];
            assertEquals(1, n.cqB.poll(wc, 5, TimeUnit.SECONDS));
            assertNotNull(wc[0]);
            assertEquals(WcStatus.SUCCESS, wc[0].status(), wc[0].toString());
            byte[] got = new byte[7];
            dst.buffer().get(0, got);
            assertEquals("own QPs", new String(got, StandardCharsets.US_ASCII));
            assertEquals(1, n.cqA.poll(wc, 5, TimeUnit.SECONDS));
            assertEquals(WcStatus.SUCCESS, wc[0].status(), wc[0].toString());
        }
    }

    @Test
    void commEstablishedEstablishesAPassiveIdWaitingForItsRtu() throws Exception {
        try (CmNet n = new CmNet(A, B, SLOW, SLOW)) {
            CmId listener = CmId.create(n.cmB, n.chB);
            listener.bind(PORT);
            listener.listen(4);
            CmId client = CmId.create(n.cmA, n.chA);
            client.resolveAddr(B, PORT, T);
            n.chA.expect(CmEventType.ADDR_RESOLVED, T);
            QueuePair qpA = n.pdA.createQp(new QpInitAttr(n.cqA));
            client.ownQp(qpA.qpNum());
            client.connect(null);
            CmId server = n.chB.expect(CmEventType.CONNECT_REQUEST, T).id();
            assertThrows(IllegalStateException.class, server::commEstablished, "before the REP is sent");
            server.createQp(n.pdB, new QpInitAttr(n.cqB));
            server.accept(null);
            n.chA.expect(CmEventType.CONNECT_RESPONSE, T); // the client sends no RTU
            assertNull(n.chB.getEvent(Duration.ofMillis(100)));
            server.commEstablished();
            n.chB.expect(CmEventType.ESTABLISHED, T);
            assertEquals(CmId.State.ESTABLISHED, server.state());
        }
    }
}
