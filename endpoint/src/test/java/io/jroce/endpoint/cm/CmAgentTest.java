package io.jroce.endpoint.cm;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WcStatus;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;
import io.jroce.wire.mad.CmAttribute;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Two CM agents over an in-memory QP 1: connection set-up, refusal, loss, release. */
class CmAgentTest {
    static final Duration T = Duration.ofSeconds(10);
    static final int PORT = 7471;

    /** A listener on B and a connected pair: returns {active id, passive id}. */
    static CmId[] connect(CmNet n, byte[] reqData, byte[] repData) throws Exception {
        CmId listener = CmId.create(n.cmB, n.chB, "listener");
        listener.bind(PORT);
        listener.listen(8);
        CmId client = CmId.create(n.cmA, n.chA, "client");
        client.resolveAddr(CmNet.B, PORT, T);
        assertEquals(CmEventType.ADDR_RESOLVED, n.chA.expect(CmEventType.ADDR_RESOLVED, T).type());
        client.resolveRoute(T);
        n.chA.expect(CmEventType.ROUTE_RESOLVED, T);
        client.createQp(n.pdA, new QpInitAttr(n.cqA));
        client.connect(CmConnParam.defaults().privateData(reqData).responderResources(2).initiatorDepth(3));

        CmEvent req = n.chB.expect(CmEventType.CONNECT_REQUEST, T);
        assertEquals(listener, req.listenId());
        assertEquals("listener", req.id().context());
        assertEquals(CmNet.A, req.id().remoteAddress());
        assertEquals(client.localPort(), req.id().remotePort());
        assertEquals(56, req.privateData().length);
        assertArrayEquals(reqData, Arrays.copyOf(req.privateData(), reqData.length));
        assertEquals(3, req.param().responderResources(), "the requester's initiator depth, seen from here");
        assertEquals(2, req.param().initiatorDepth());
        CmId server = req.id();
        server.createQp(n.pdB, new QpInitAttr(n.cqB));
        server.accept(CmConnParam.defaults().privateData(repData).responderResources(4).initiatorDepth(4));

        CmEvent est = n.chA.expect(CmEventType.ESTABLISHED, T);
        assertEquals(client, est.id());
        assertArrayEquals(repData, Arrays.copyOf(est.privateData(), repData.length));
        assertEquals(server, n.chB.expect(CmEventType.ESTABLISHED, T).id());
        assertEquals(QpState.RTS, client.qp().state());
        assertEquals(QpState.RTS, server.qp().state());
        return new CmId[] {client, server};
    }

    @Test
    void connectAcceptThenWriteAndSendOverTheYieldedQp() throws Exception {
        try (CmNet n = new CmNet()) {
            CmId[] ids = connect(n, "hello".getBytes(StandardCharsets.US_ASCII), "welcome".getBytes(StandardCharsets.US_ASCII));
            QueuePair qpA = ids[0].qp();
            QueuePair qpB = ids[1].qp();
            // the REQ and REP values landed in the QPs: each other's QPN, rd_atomic capped by the other side's offer
            assertEquals(qpB.qpNum(), qpA.query().destQpNum());
            assertEquals(qpA.qpNum(), qpB.query().destQpNum());
            assertEquals(3, qpB.query().maxDestRdAtomic(), "min(accept's 4, REQ initiator depth 3)");
            assertEquals(2, qpB.query().maxRdAtomic(), "min(accept's 4, REQ responder resources 2)");
            assertEquals(3, qpA.query().maxRdAtomic(), "min(our 3, REP responder resources 3)");

            MemoryRegion src = n.pdA.allocateAndRegister(4096, Access.LOCAL_WRITE);
            MemoryRegion dst = n.pdB.allocateAndRegister(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            src.buffer().put(0, "written by RDMA".getBytes(StandardCharsets.US_ASCII));
            qpA.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(src, 0, 15)).remote(dst.address(), dst.rkey()).signaled());
            qpB.postRecv(new ReceiveWorkRequest(9, Sge.of(dst, 100, 64)));
            qpA.postSend(new SendWorkRequest(2, WrOpcode.SEND, Sge.of(src, 0, 7)).signaled());
            WorkCompletion[] wc = new WorkCompletion[2];
            int got = 0;
            while (got < 2) {
                int k = n.cqA.poll(Arrays.copyOfRange(wc, got, 2), 5, TimeUnit.SECONDS);
                assertTrue(k > 0, "no completion at the requester");
                got += k;
            }
            WorkCompletion[] one = new WorkCompletion[1];
            assertEquals(1, n.cqB.poll(one, 5, TimeUnit.SECONDS));
            assertEquals(WcStatus.SUCCESS, one[0].status(), one[0].toString());
            assertEquals(9, one[0].wrId());
            byte[] landed = new byte[15];
            dst.buffer().get(0, landed);
            assertEquals("written by RDMA", new String(landed, StandardCharsets.US_ASCII));
            byte[] sent = new byte[7];
            dst.buffer().get(100, sent);
            assertEquals("written", new String(sent, StandardCharsets.US_ASCII));
        }
    }

    @Test
    void theAgentRunsOnItsDevicesRunnerWithNoThreadOfItsOwn() throws Exception {
        for (io.jroce.endpoint.AgentMode mode : io.jroce.endpoint.AgentMode.values()) {
            try (io.jroce.endpoint.Device dev = io.jroce.endpoint.Device.open(
                    new io.jroce.endpoint.DeviceConfig(CmNet.A).port(0).agentMode(mode))) {
                java.util.Set<Thread> before = Thread.getAllStackTraces().keySet();
                try (CmAgent cm = CmAgent.open(dev)) {
                    java.util.List<String> added = Thread.getAllStackTraces().keySet().stream()
                            .filter(t -> !before.contains(t) && t.isAlive()).map(Thread::getName).toList();
                    assertEquals(java.util.List.of(), added, mode + ": threads started by opening the agent");
                    Thread agentThread = cm.call(Thread::currentThread);
                    Thread runner = dev.runner().call(Thread::currentThread);
                    assertEquals(runner, agentThread, mode + ": the agent's calls run where the device's runner runs them");
                }
            }
        }
    }

    @Test
    void thePassiveSideTakesTheRequestersPathMtu() throws Exception {
        try (CmNet n = new CmNet(c -> c.mtu(io.jroce.endpoint.Mtu.MTU_4096), c -> c.mtu(io.jroce.endpoint.Mtu.MTU_256))) {
            CmId[] ids = connect(n, new byte[0], new byte[0]);
            assertEquals(io.jroce.endpoint.Mtu.MTU_4096, ids[0].qp().query().pathMtu());
            assertEquals(io.jroce.endpoint.Mtu.MTU_4096, ids[1].qp().query().pathMtu(), "the REQ's MTU, not the local setting");
        }
    }

    @Test
    void rejectCarriesReason28AndPrivateData() throws Exception {
        try (CmNet n = new CmNet()) {
            CmId listener = CmId.create(n.cmB, n.chB);
            listener.bind(PORT);
            listener.listen(4);
            CmId client = CmId.create(n.cmA, n.chA);
            client.createQp(n.pdA, new QpInitAttr(n.cqA));
            client.connect(CmNet.B, PORT, null);
            CmEvent req = n.chB.expect(CmEventType.CONNECT_REQUEST, T);
            req.id().reject("go away".getBytes(StandardCharsets.US_ASCII));
            CmEvent rej = n.chA.expect(CmEventType.REJECTED, T);
            assertEquals(28, rej.status());
            assertEquals(148, rej.privateData().length);
            assertEquals("go away", new String(rej.privateData(), 0, 7, StandardCharsets.US_ASCII));
            assertEquals(QpState.ERR, client.qp().state());
            assertEquals(0, n.cmB.pendingCount());
            assertThrows(IllegalStateException.class, () -> req.id().accept(null));
        }
    }

    @Test
    void connectToAPortNobodyListensOnIsRejectedWithReason8AtOnce() throws Exception {
        try (CmNet n = new CmNet(c -> c.cmResponseTimeout(20))) { // a retry would take 4 s: the REJ must come first
            CmId client = CmId.create(n.cmA, n.chA);
            client.createQp(n.pdA, new QpInitAttr(n.cqA));
            long t0 = System.nanoTime();
            client.connect(CmNet.B, 9999, null);
            CmEvent e = n.chA.expect(CmEventType.REJECTED, T);
            assertEquals(8, e.status());
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(3), "REJ 8 comes without a retry");
            assertEquals(0, n.cmA.counters().retransmits());
        }
    }

    @Test
    void unansweredReqEndsUnreachableAfterTheRetries() throws Exception {
        try (CmNet n = new CmNet()) {
            n.mads.drop((to, mad) -> MadLoopback.attributeId(mad) == CmAttribute.REQ.id());
            CmId client = CmId.create(n.cmA, n.chA);
            client.createQp(n.pdA, new QpInitAttr(n.cqA));
            client.connect(CmNet.B, PORT, null);
            CmEvent e = n.chA.expect(CmEventType.UNREACHABLE, T);
            assertEquals(CmEvent.ETIMEDOUT, e.status());
            assertEquals(4, n.cmA.counters().retransmits(), "max CM retries");
        }
    }

    @Test
    void reqLostOnceIsResentAndConnects() throws Exception {
        try (CmNet n = new CmNet()) {
            AtomicInteger lost = new AtomicInteger();
            n.mads.drop((to, mad) -> MadLoopback.attributeId(mad) == CmAttribute.REQ.id() && lost.getAndIncrement() == 0);
            connect(n, new byte[] {1}, new byte[] {2});
            assertTrue(lost.get() >= 2, "one REQ lost, resent (more than once if the accept is slow)");
            assertTrue(n.cmA.counters().retransmits() >= 1);
        }
    }

    @Test
    void repLostIsResentAndTheDuplicateReqIgnored() throws Exception {
        try (CmNet n = new CmNet()) {
            AtomicInteger lost = new AtomicInteger();
            n.mads.drop((to, mad) -> MadLoopback.attributeId(mad) == CmAttribute.REP.id() && lost.getAndIncrement() == 0);
            CmId[] ids = connect(n, new byte[0], new byte[0]);
            assertTrue(lost.get() >= 2, "the REP was resent");
            assertTrue(n.cmB.counters().retransmits() >= 1);
            assertTrue(n.cmA.counters().retransmits() >= 0);
            assertEquals(CmId.State.ESTABLISHED, ids[1].state());
        }
    }

    @Test
    void rtuLostMeansRepResentAndRtuResent() throws Exception {
        try (CmNet n = new CmNet()) {
            AtomicInteger lost = new AtomicInteger();
            n.mads.drop((to, mad) -> MadLoopback.attributeId(mad) == CmAttribute.RTU.id() && lost.getAndIncrement() == 0);
            connect(n, new byte[0], new byte[0]);
            assertTrue(lost.get() >= 2, "the duplicate REP got the RTU again");
            assertTrue(n.cmA.counters().duplicates() >= 1);
        }
    }

    @Test
    void disconnectFromTheActiveSide() throws Exception {
        disconnect(0);
    }

    @Test
    void disconnectFromThePassiveSide() throws Exception {
        disconnect(1);
    }

    private void disconnect(int who) throws Exception {
        try (CmNet n = new CmNet()) {
            CmId[] ids = connect(n, new byte[0], new byte[0]);
            ids[who].disconnect();
            CmEvent a = n.chA.expect(CmEventType.DISCONNECTED, T);
            CmEvent b = n.chB.expect(CmEventType.DISCONNECTED, T);
            assertEquals(ids[0], a.id());
            assertEquals(ids[1], b.id());
            assertEquals(QpState.ERR, ids[0].qp().state());
            assertEquals(QpState.ERR, ids[1].qp().state());
            ids[1 - who].disconnect(); // after DISCONNECTED: nothing to do, no error
            assertEquals(CmEventType.TIMEWAIT_EXIT, n.chA.expect(CmEventType.TIMEWAIT_EXIT, T).type());
            assertEquals(CmEventType.TIMEWAIT_EXIT, n.chB.expect(CmEventType.TIMEWAIT_EXIT, T).type());
            ids[0].close();
            ids[1].close();
        }
    }

    @Test
    void lostDrepMeansDreqResentAndAnsweredFromTimewait() throws Exception {
        try (CmNet n = new CmNet()) {
            CmId[] ids = connect(n, new byte[0], new byte[0]);
            AtomicInteger lost = new AtomicInteger();
            n.mads.drop((to, mad) -> MadLoopback.attributeId(mad) == CmAttribute.DREP.id() && lost.getAndIncrement() == 0);
            long before = n.cmA.counters().retransmits();
            ids[0].disconnect();
            n.chB.expect(CmEventType.DISCONNECTED, T);
            n.chA.expect(CmEventType.DISCONNECTED, T);
            assertTrue(lost.get() >= 2, "the DREP was sent again");
            assertTrue(n.cmA.counters().retransmits() - before >= 1, "the DREQ was resent");
        }
    }

    @Test
    void aDuplicateReqInTimewaitGetsRej10() throws Exception {
        try (CmNet n = new CmNet(c -> c.caAckDelay(20))) { // timewait = conv(REQ ACK timeout 20) = 4 s: long enough
            CmId[] ids = connect(n, new byte[0], new byte[0]);
            byte[] req = n.mads.lastSent(CmAttribute.REQ.id());
            ids[0].disconnect();
            n.chB.expect(CmEventType.DISCONNECTED, T);
            ids[1].disconnect(); // the application answers the DREQ (DREQ_RCVD -> TIMEWAIT), as rping does
            assertEquals(CmId.State.TIMEWAIT, ids[1].state());
            long rejs = n.cmB.counters().rejSent();
            n.mads.inject(CmNet.A, CmNet.B, req, req.length);
            assertEquals(rejs + 1, n.cmB.counters().rejSent());
            byte[] rej = n.mads.lastSent(CmAttribute.REJ.id());
            assertEquals(10, (rej[34] & 0xFF) << 8 | (rej[35] & 0xFF), "REJ reason STALE_CONN");
            assertEquals(0, n.cmB.pendingCount(), "no new connection for it");
        }
    }

    /** cm.c cm_match_req: REJ 10 for the new REQ, and a DREQ that releases the old connection. */
    @Test
    void aNewReqFromAConnectedQpIsStaleAndTheOldConnectionIsReleased() throws Exception {
        try (CmNet n = new CmNet()) {
            CmId[] ids = connect(n, new byte[0], new byte[0]);
            byte[] req = n.mads.lastSent(CmAttribute.REQ.id()).clone();
            req[24] ^= 0x55; // another comm ID, same QPN and CA GUID
            long rejs = n.cmB.counters().rejSent();
            n.mads.inject(CmNet.A, CmNet.B, req, req.length);
            assertEquals(rejs + 1, n.cmB.counters().rejSent());
            byte[] rej = n.mads.lastSent(CmAttribute.REJ.id());
            assertEquals(10, (rej[34] & 0xFF) << 8 | (rej[35] & 0xFF), "REJ reason STALE_CONN");
            byte[] dreq = n.mads.lastSent(CmAttribute.DREQ.id());
            assertNotNull(dreq, "a DREQ to the old connection");
            assertEquals(ids[1].localCommId, java.nio.ByteBuffer.wrap(dreq).getInt(24));
            assertEquals(ids[1], n.chB.expect(CmEventType.DISCONNECTED, T).id());
            assertEquals(ids[0], n.chA.expect(CmEventType.DISCONNECTED, T).id());
            assertEquals(QpState.ERR, ids[1].qp().state());
        }
    }

    @Test
    void twoConnectionsThroughOneListenerAndOneChannel() throws Exception {
        try (CmNet n = new CmNet()) {
            CmId listener = CmId.create(n.cmB, n.chB);
            listener.bind(PORT);
            listener.listen(8);
            CmId[] clients = new CmId[2];
            for (int i = 0; i < 2; i++) {
                clients[i] = CmId.create(n.cmA, n.chA, i);
                clients[i].createQp(n.pdA, new QpInitAttr(n.cqA));
                clients[i].connect(CmNet.B, PORT, CmConnParam.defaults().privateData(new byte[] {(byte) i}));
            }
            java.util.Set<Integer> seen = new java.util.HashSet<>();
            for (int i = 0; i < 2; i++) {
                CmEvent req = n.chB.expect(CmEventType.CONNECT_REQUEST, T);
                seen.add((int) req.privateData()[0]);
                req.id().createQp(n.pdB, new QpInitAttr(n.cqB));
                req.id().accept(null);
            }
            assertEquals(java.util.Set.of(0, 1), seen);
            java.util.Set<CmId> established = new java.util.HashSet<>();
            for (int i = 0; i < 2; i++) established.add(n.chA.expect(CmEventType.ESTABLISHED, T).id());
            assertEquals(java.util.Set.of(clients[0], clients[1]), established);
            for (int i = 0; i < 2; i++) n.chB.expect(CmEventType.ESTABLISHED, T);
            assertNull(n.chB.getEvent(100, TimeUnit.MILLISECONDS), "no third request");
            assertEquals(2, n.cmB.counters().connected());
        }
    }

    /**
     * rdma_destroy_id of a listener (ucma_cleanup_ctx_events): the requests not yet taken from the channel are
     * rejected (REJ 28) and their CONNECT_REQUESTs are never delivered, so a new listener on the same port and
     * channel (perf -R's server listens once for the exchange QP, then again for the test QPs) does not take them
     * as its own.
     */
    @Test
    void closingAListenerRejectsTheRequestsNotYetTaken() throws Exception {
        try (CmNet n = new CmNet()) {
            CmId first = CmId.create(n.cmB, n.chB, "first");
            first.bind(PORT);
            first.listen(8);
            CmId[] clients = new CmId[2];
            for (int i = 0; i < 2; i++) {
                clients[i] = CmId.create(n.cmA, n.chA, i);
                clients[i].createQp(n.pdA, new QpInitAttr(n.cqA));
                clients[i].connect(CmNet.B, PORT, CmConnParam.defaults().privateData(new byte[] {(byte) i}));
            }
            CmEvent taken = n.chB.expect(CmEventType.CONNECT_REQUEST, T);
            taken.id().createQp(n.pdB, new QpInitAttr(n.cqB));
            taken.id().accept(null);
            // the second request is queued in the channel when the listener goes
            while (n.cmB.pendingCount() < 1) Thread.onSpinWait();
            first.close();
            CmId second = CmId.create(n.cmB, n.chB, "second");
            second.bind(PORT);
            second.listen(8);
            CmEvent e;
            while ((e = n.chB.getEvent(300, TimeUnit.MILLISECONDS)) != null) {
                assertTrue(e.type() != CmEventType.CONNECT_REQUEST, "a request of the closed listener was delivered: " + e);
            }
            int late = taken.privateData()[0] == 0 ? 1 : 0;
            java.util.Map<CmEventType, CmEvent> outcome = new java.util.EnumMap<>(CmEventType.class);
            for (int i = 0; i < 2; i++) {
                CmEvent o = n.chA.getEvent(T);
                assertNotNull(o, "the two connects end");
                outcome.put(o.type(), o);
            }
            CmEvent rej = outcome.get(CmEventType.REJECTED);
            assertNotNull(rej, "the request left in the channel is rejected: " + outcome);
            assertEquals(clients[late], rej.id());
            assertEquals(CmAgent.REJ_CONSUMER_DEFINED, rej.status());
            assertEquals(clients[1 - late], outcome.get(CmEventType.ESTABLISHED).id());
            assertEquals(0, n.cmB.pendingCount());
            // the port's new listener takes a new request
            CmId third = CmId.create(n.cmA, n.chA, 3);
            third.createQp(n.pdA, new QpInitAttr(n.cqA));
            third.connect(CmNet.B, PORT, null);
            CmEvent req = n.chB.expect(CmEventType.CONNECT_REQUEST, T);
            assertEquals(second, req.listenId());
        }
    }

    @Test
    void closingAnEstablishedIdSendsADreq() throws Exception {
        try (CmNet n = new CmNet()) {
            CmId[] ids = connect(n, new byte[0], new byte[0]);
            ids[0].close();
            assertEquals(ids[1], n.chB.expect(CmEventType.DISCONNECTED, T).id());
            assertNull(n.chA.getEvent(50, TimeUnit.MILLISECONDS), "a closed id reports nothing");
        }
    }

    @Test
    void slowAcceptGetsAnMraForTheDuplicateReq() throws Exception {
        try (CmNet n = new CmNet()) {
            CmId listener = CmId.create(n.cmB, n.chB);
            listener.bind(PORT);
            listener.listen(4);
            CmId client = CmId.create(n.cmA, n.chA);
            client.createQp(n.pdA, new QpInitAttr(n.cqA));
            client.connect(CmNet.B, PORT, null);
            CmEvent req = n.chB.expect(CmEventType.CONNECT_REQUEST, T);
            // wait (on the counters, not a sleep) until the REQ was resent and answered with an MRA
            long deadline = System.nanoTime() + T.toNanos();
            while (n.cmB.counters().duplicates() == 0 && System.nanoTime() < deadline) Thread.onSpinWait();
            assertTrue(n.cmB.counters().duplicates() >= 1);
            long retrans = n.cmA.counters().retransmits();
            // the MRA's service timeout (24: about a minute) holds the requester's retries back; accept still works
            req.id().createQp(n.pdB, new QpInitAttr(n.cqB));
            req.id().accept(null);
            n.chA.expect(CmEventType.ESTABLISHED, T);
            n.chB.expect(CmEventType.ESTABLISHED, T);
            assertTrue(n.cmA.counters().retransmits() <= retrans + 1, "the MRA held the retries back");
        }
    }

    @Test
    void unacceptedRequestTimesOutWithAReject() throws Exception {
        try (CmNet n = new CmNet(c -> c.acceptTimeoutMillis(100))) {
            CmId listener = CmId.create(n.cmB, n.chB);
            listener.bind(PORT);
            listener.listen(4);
            CmId client = CmId.create(n.cmA, n.chA);
            client.createQp(n.pdA, new QpInitAttr(n.cqA));
            client.connect(CmNet.B, PORT, null);
            CmEvent req = n.chB.expect(CmEventType.CONNECT_REQUEST, T);
            assertEquals(28, n.chA.expect(CmEventType.REJECTED, T).status());
            assertEquals(0, n.cmB.pendingCount());
            assertThrows(IllegalStateException.class, () -> req.id().accept(null));
        }
    }

    @Test
    void portInUseAndWrongStatesAreRefused() throws Exception {
        try (CmNet n = new CmNet()) {
            CmId one = CmId.create(n.cmA, n.chA);
            one.bind(PORT);
            CmId two = CmId.create(n.cmA, n.chA);
            assertThrows(IllegalStateException.class, () -> two.bind(PORT));
            assertThrows(IllegalStateException.class, () -> two.accept(null));
            assertThrows(IllegalStateException.class, () -> two.connect(null));
            CmId three = CmId.create(n.cmA, n.chA);
            three.createQp(n.pdA, new QpInitAttr(n.cqA));
            assertThrows(IllegalArgumentException.class,
                    () -> three.connect(CmNet.B, PORT, CmConnParam.defaults().privateData(new byte[57])));
            assertNotNull(three.qp());
        }
    }
}
