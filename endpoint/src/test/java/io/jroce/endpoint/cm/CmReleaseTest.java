package io.jroce.endpoint.cm;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WcStatus;
import io.jroce.endpoint.WrOpcode;
import io.jroce.wire.mad.CmAttribute;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The paths real stacks take past the happy one: the RTU lost (COMM_EST), and the DREQ_RCVD state. */
class CmReleaseTest {
    static final Duration T = Duration.ofSeconds(10);
    static final int PORT = 7471;

    /** A connection whose RTUs are all lost: {active, passive}, the passive one still in REP_SENT. */
    private static CmId[] withoutRtu(CmNet n) throws Exception {
        n.mads.drop((to, mad) -> MadLoopback.attributeId(mad) == CmAttribute.RTU.id());
        CmId listener = CmId.create(n.cmB, n.chB);
        listener.bind(PORT);
        listener.listen(4);
        CmId client = CmId.create(n.cmA, n.chA);
        client.createQp(n.pdA, new QpInitAttr(n.cqA));
        client.connect(CmNet.B, PORT, null);
        CmEvent req = n.chB.expect(CmEventType.CONNECT_REQUEST, T);
        req.id().createQp(n.pdB, new QpInitAttr(n.cqB));
        req.id().accept(null);
        n.chA.expect(CmEventType.ESTABLISHED, T);
        assertEquals(CmId.State.REP_SENT, req.id().state());
        return new CmId[] {client, req.id()};
    }

    @Test
    void theFirstPacketEstablishesAPassiveConnectionWhoseRtuWasLost() throws Exception {
        try (CmNet n = new CmNet(c -> c.cmResponseTimeout(18))) { // REP resent each second: the test outruns it
            CmId[] ids = withoutRtu(n);
            n.cmB.onFirstPacket(ids[1].qp().qpNum() + 1); // another QP: nothing
            n.cmB.onFirstPacket(ids[1].qp().qpNum());     // what the responder calls on its first packet in RTR
            assertEquals(ids[1], n.chB.expect(CmEventType.ESTABLISHED, T).id());
            assertEquals(CmId.State.ESTABLISHED, ids[1].state());
            assertEquals(QpState.RTS, ids[1].qp().state());
            CmCounters c = n.cmB.counters();
            assertEquals(1, c.commEstablished());
            assertEquals(1, c.connected());
            long retransmits = c.retransmits();
            n.cmB.onFirstPacket(ids[1].qp().qpNum()); // again: once only
            assertNull(n.chB.getEvent(100, TimeUnit.MILLISECONDS), "one ESTABLISHED");
            assertEquals(retransmits, n.cmB.counters().retransmits(), "the REP is no longer resent");
            // the connection is an ordinary one: it is released as any other
            ids[0].disconnect();
            assertEquals(ids[1], n.chB.expect(CmEventType.DISCONNECTED, T).id());
        }
    }

    @Test
    void theRequestersFirstWriteEstablishesThePassiveSideThroughTheDevice() throws Exception {
        try (CmNet n = new CmNet(c -> c.cmResponseTimeout(18))) {
            CmId[] ids = withoutRtu(n);
            MemoryRegion src = n.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
            MemoryRegion dst = n.pdB.allocateAndRegister(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            // the active side has the REP and sends: B's responder accepts the WRITE, and the device tells B's CM
            ids[0].qp().postSend(new io.jroce.endpoint.SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(src, 0, 8))
                    .remote(dst.address(), dst.rkey()).signaled());
            assertEquals(WcStatus.SUCCESS, n.cqA.poll(1, T.toMillis(), TimeUnit.MILLISECONDS).get(0).status());
            assertEquals(ids[1], n.chB.expect(CmEventType.ESTABLISHED, T).id());
            assertEquals(CmId.State.ESTABLISHED, ids[1].state());
            assertEquals(1, n.cmB.counters().commEstablished());
        }
    }

    @Test
    void theFirstPacketHookMayBeCalledFromAnyThread() throws Exception {
        try (CmNet n = new CmNet(c -> c.cmResponseTimeout(18))) {
            CmId[] ids = withoutRtu(n);
            Thread t = new Thread(() -> n.cmB.onFirstPacket(ids[1].qp().qpNum()), "a device event loop");
            t.start();
            t.join(T.toMillis());
            assertEquals(ids[1], n.chB.expect(CmEventType.ESTABLISHED, T).id());
        }
    }

    @Test
    void aReceivedDreqIsAnsweredWhenTheApplicationDisconnects() throws Exception {
        try (CmNet n = new CmNet(c -> c.cmResponseTimeout(20))) { // the agent's own timer: 4 s away
            CmId[] ids = CmAgentTest.connect(n, new byte[0], new byte[0]);
            ids[0].disconnect();
            assertEquals(ids[1], n.chB.expect(CmEventType.DISCONNECTED, T).id());
            assertEquals(CmId.State.DREQ_RCVD, ids[1].state());
            assertNull(n.mads.lastSent(CmAttribute.DREP.id()), "no DREP before the application disconnects");
            assertNull(n.chA.getEvent(100, TimeUnit.MILLISECONDS), "the active side waits for the DREP");
            ids[1].disconnect();
            assertNotNull(n.mads.lastSent(CmAttribute.DREP.id()));
            assertEquals(ids[0], n.chA.expect(CmEventType.DISCONNECTED, T).id());
            assertEquals(CmId.State.TIMEWAIT, ids[1].state());
            assertEquals(0, n.cmA.counters().retransmits(), "the DREQ was answered before its timeout");
        }
    }

    @Test
    void aReceivedDreqIsAnsweredWhenTheApplicationDestroysTheId() throws Exception {
        try (CmNet n = new CmNet(c -> c.cmResponseTimeout(20))) {
            CmId[] ids = CmAgentTest.connect(n, new byte[0], new byte[0]);
            ids[1].disconnect(); // the passive side first, this time
            n.chA.expect(CmEventType.DISCONNECTED, T);
            assertEquals(CmId.State.DREQ_RCVD, ids[0].state());
            ids[0].close();
            assertEquals(ids[1], n.chB.expect(CmEventType.DISCONNECTED, T).id());
        }
    }

    @Test
    void aReceivedDreqTheApplicationIgnoresIsAnsweredAfterThePeersDreqTimeout() throws Exception {
        try (CmNet n = new CmNet()) { // DREQ timeout 66 ms, 4 retries
            CmId[] ids = CmAgentTest.connect(n, new byte[0], new byte[0]);
            long t0 = System.nanoTime();
            ids[0].disconnect();
            n.chB.expect(CmEventType.DISCONNECTED, T);
            assertEquals(ids[0], n.chA.expect(CmEventType.DISCONNECTED, T).id());
            assertTrue(System.nanoTime() - t0 >= TimeUnit.MILLISECONDS.toNanos(60), "not before the peer's timeout");
            assertNotNull(n.mads.lastSent(CmAttribute.DREP.id()), "B's agent answered by itself");
            assertTrue(n.cmA.counters().retransmits() <= 1, "answered at the peer's first resend at the latest");
            assertEquals(0, n.cmA.counters().timedOut(), "the DREQ did not time out");
        }
    }

    @Test
    void awaitReleasedReturnsWhenTimewaitEnds() throws Exception {
        try (CmNet n = new CmNet(c -> c.caAckDelay(20))) { // timewait 2^(21-8) ms, about 8 s
            CmId[] ids = CmAgentTest.connect(n, new byte[0], new byte[0]);
            ids[0].disconnect();
            n.chB.expect(CmEventType.DISCONNECTED, T);
            ids[1].disconnect();
            n.chA.expect(CmEventType.DISCONNECTED, T);
            assertTrue(!n.cmA.awaitReleased(Duration.ofMillis(20)), "still in timewait");
            assertEquals(CmId.State.TIMEWAIT, ids[0].state());
        }
        try (CmNet n = new CmNet()) { // timewait 2^(16-8) ms
            CmId[] ids = CmAgentTest.connect(n, new byte[0], new byte[0]);
            ids[0].disconnect();
            n.chB.expect(CmEventType.DISCONNECTED, T);
            ids[1].disconnect();
            assertTrue(n.cmA.awaitReleased(T));
            assertTrue(n.cmB.awaitReleased(T));
            assertEquals(CmId.State.DONE, ids[0].state());
            assertEquals(CmId.State.DONE, ids[1].state());
        }
    }

    /** A process exiting with the id open: the kernel destroys it and sends the DREP; closing the agent does too. */
    @Test
    void closingTheAgentAnswersADreqTheApplicationLeftOpen() throws Exception {
        try (CmNet n = new CmNet(c -> c.cmResponseTimeout(20))) { // the agent's own timer: 4 s away
            CmId[] ids = CmAgentTest.connect(n, new byte[0], new byte[0]);
            ids[0].disconnect();
            n.chB.expect(CmEventType.DISCONNECTED, T);
            assertNull(n.mads.lastSent(CmAttribute.DREP.id()));
            long t0 = System.nanoTime();
            n.cmB.close();
            assertNotNull(n.mads.lastSent(CmAttribute.DREP.id()), "the DREP went as the agent closed");
            assertEquals(ids[0], n.chA.expect(CmEventType.DISCONNECTED, T).id());
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(3), "not the 4 s timer");
        }
    }

    /**
     * A process exiting with a connection open: the kernel destroys the id and the peer gets a DREQ at once
     * (cm.c cm_destroy_id in ESTABLISHED); closing the agent does the same, so the peer's application sees
     * DISCONNECTED instead of waiting for its QP's retries. An id of the peer that is still connecting gets a REJ.
     */
    @Test
    void closingTheAgentDisconnectsWhatIsStillConnected() throws Exception {
        try (CmNet n = new CmNet()) {
            CmId[] ids = CmAgentTest.connect(n, new byte[0], new byte[0]);
            assertNull(n.mads.lastSent(CmAttribute.DREQ.id()));
            n.cmA.close();
            assertNotNull(n.mads.lastSent(CmAttribute.DREQ.id()), "the DREQ went as the agent closed");
            assertEquals(ids[1], n.chB.expect(CmEventType.DISCONNECTED, T).id());
            assertEquals(CmId.State.DREQ_RCVD, ids[1].state());
        }
    }
}
