package io.jroce.endpoint.cm;

import io.jroce.endpoint.Gid;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.wire.mad.CmAttribute;
import io.jroce.wire.mad.CmDreq;
import io.jroce.wire.mad.CmDrep;
import io.jroce.wire.mad.CmRej;
import io.jroce.wire.mad.CmRep;
import io.jroce.wire.mad.CmReq;
import io.jroce.wire.mad.CmaHeader;
import io.jroce.wire.mad.MadHeader;
import io.jroce.wire.mad.SidrRep;
import io.jroce.wire.mad.SidrReq;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Hand-made MADs to a listening agent, answered as rdma_rxe's stack (cm.c, cma.c, mad.c) answers them: the REP's
 * values, the REJs for a foreign destination address or GID, DREQs in timewait, the MAD layer's GetResp and SIDR.
 */
class CmFidelityTest {
    static final Duration T = Duration.ofSeconds(10);
    static final InetAddress PEER = CmNet.addr("127.77.41.9");
    static final int PORT = 7471;

    /** A REQ from PEER to B's port, as rdma_cm on rxe writes it. */
    static byte[] req(int commId, int qpn, int respRes, int initDepth) {
        byte[] mad = new byte[MadHeader.MAD_SIZE];
        ByteBuf b = Unpooled.wrappedBuffer(mad);
        CmReq req = new CmReq().wrap(b, 0).init(0x1122334400000000L | commId);
        req.localCommId(commId).serviceId(CmaHeader.serviceId(CmaHeader.PS_TCP, PORT)).localCaGuid(0x0200aabbccddeeffL)
                .localQpn(qpn).responderResources(respRes).initiatorDepth(initDepth)
                .transportServiceType(CmReq.TRANSPORT_RC).startingPsn(0x123456).endToEndFlowControl(true)
                .pkey(0xFFFF).pathMtu(3).maxCmRetries(15).localCmResponseTimeout(20).remoteCmResponseTimeout(20)
                .retryCount(7).rnrRetryCount(7);
        req.primaryPath().localLid(0xFFFF).remoteLid(0xFFFF).localGid(Gid.of(PEER).raw()).remoteGid(Gid.of(CmNet.B).raw())
                .hopLimit(64).localAckTimeout(19);
        new CmaHeader().wrap(b, req.privateDataIndex()).write(40000, PEER, CmNet.B);
        return mad;
    }

    static CmId listen(CmNet n) {
        CmId listener = CmId.create(n.cmB, n.chB, "listener");
        listener.bind(PORT);
        listener.listen(8);
        return listener;
    }

    /** Delivers {@code mad} to B and returns once B's agent has handled it. */
    static void toB(CmNet n, byte[] mad) {
        n.mads.inject(PEER, CmNet.B, mad, mad.length);
        n.cmB.counters(); // runs on the agent's runner after the MAD
    }

    static int u16(byte[] m, int at) {
        return (m[at] & 0xFF) << 8 | (m[at + 1] & 0xFF);
    }

    private static CmRep accepted(CmNet n, int commId, int respRes, int initDepth) throws Exception {
        toB(n, req(commId, 0x100 + commId, respRes, initDepth));
        CmEvent e = n.chB.expect(CmEventType.CONNECT_REQUEST, T);
        e.id().createQp(n.pdB, new QpInitAttr(n.cqB));
        e.id().accept(null); // rdma_accept(id, NULL), as rping's server does
        byte[] rep = n.mads.lastSent(CmAttribute.REP.id());
        return new CmRep().wrap(Unpooled.wrappedBuffer(rep), 0);
    }

    @Test
    void theRepMirrorsTheReqClampedToTheDeviceMaximumWithoutFlowControl() throws Exception {
        try (CmNet n = new CmNet()) {
            listen(n);
            int max = n.cmB.maxRdAtomic();
            assertEquals(CmAgent.MAX_RD_ATOMIC, max);
            CmRep rep = accepted(n, 1, 255, 255);
            assertEquals(max, rep.responderResources(), "REQ initiator depth 255, clamped");
            assertEquals(max, rep.initiatorDepth(), "REQ responder resources 255, clamped");
            assertFalse(rep.endToEndFlowControl(), "librdmacm's null conn_param leaves flow control 0");
            rep = accepted(n, 2, 0, 0);
            assertEquals(0, rep.responderResources());
            assertEquals(0, rep.initiatorDepth());
            rep = accepted(n, 3, 5, 3);
            assertEquals(3, rep.responderResources(), "the REQ's initiator depth");
            assertEquals(5, rep.initiatorDepth(), "the REQ's responder resources");
        }
    }

    @Test
    void aReqForAnAddressTheListenerIsNotBoundToGetsRej28() throws Exception {
        try (CmNet n = new CmNet()) {
            listen(n);
            byte[] req = req(0x77, 0x200, 1, 1);
            new CmaHeader().wrap(Unpooled.wrappedBuffer(req), CmAttribute.REQ.privateDataOffset())
                    .write(40000, PEER, CmNet.addr("127.77.41.7"));
            toB(n, req);
            byte[] rej = n.mads.lastSent(CmAttribute.REJ.id());
            CmRej r = new CmRej().wrap(Unpooled.wrappedBuffer(rej), 0);
            assertEquals(28, r.reason());
            assertEquals(0, r.localCommId());
            assertEquals(0x77, r.remoteCommId());
            assertEquals(CmRej.REJECTED_REQ, r.messageRejected());
            assertNull(n.chB.getEvent(50, TimeUnit.MILLISECONDS), "no CONNECT_REQUEST");
            assertEquals(0, n.cmB.pendingCount());
        }
    }

    @Test
    void aReqWhosePathNamesAForeignGidGetsRej12WithTheDevicesGid() throws Exception {
        try (CmNet n = new CmNet()) {
            listen(n);
            byte[] req = req(0x78, 0x201, 1, 1);
            new CmReq().wrap(Unpooled.wrappedBuffer(req), 0).primaryPath().remoteGid(Gid.of(CmNet.addr("127.77.41.8")).raw());
            toB(n, req);
            byte[] rej = n.mads.lastSent(CmAttribute.REJ.id());
            CmRej r = new CmRej().wrap(Unpooled.wrappedBuffer(rej), 0);
            assertEquals(12, r.reason());
            assertEquals(0, r.localCommId());
            assertEquals(0x78, r.remoteCommId());
            assertEquals(16, r.rejectInfoLength());
            byte[] ari = new byte[CmRej.ARI_LENGTH];
            r.ari(ari, 0);
            assertArrayEquals(n.devB.gid(0).raw(), Arrays.copyOf(ari, 16));
            assertNull(n.chB.getEvent(50, TimeUnit.MILLISECONDS), "no CONNECT_REQUEST");
        }
    }

    @Test
    void aDreqRepeatedInTimewaitGetsADrepEachTime() throws Exception {
        // timewait of seconds; DREQ resends a second apart, so none runs into the counting below
        try (CmNet n = new CmNet(c -> c.caAckDelay(20).cmResponseTimeout(18))) {
            CmId[] ids = CmAgentTest.connect(n, new byte[0], new byte[0]);
            CmId a = ids[0];
            CmId b = ids[1];
            a.disconnect();
            n.chB.expect(CmEventType.DISCONNECTED, T);
            b.disconnect(); // B's application answers A's DREQ
            n.chA.expect(CmEventType.DISCONNECTED, T);
            while (a.state != CmId.State.TIMEWAIT) Thread.onSpinWait(); // the DREP arrived
            // the DREQ B would send: A sent its DREQ first, so A has made no DREP of its own yet
            byte[] dreq = new byte[MadHeader.MAD_SIZE];
            new CmDreq().wrap(Unpooled.wrappedBuffer(dreq), 0).init(0x55).localCommId(b.localCommId)
                    .remoteCommId(a.localCommId).remoteQpn(a.qp().qpNum());
            for (int i = 0; i < 2; i++) {
                long sent = n.mads.sent();
                n.mads.inject(CmNet.B, CmNet.A, dreq, dreq.length);
                n.cmA.counters();
                assertEquals(sent + 1, n.mads.sent(), "a DREP for DREQ " + i);
                CmDrep drep = new CmDrep().wrap(Unpooled.wrappedBuffer(n.mads.lastSent()), 0);
                assertEquals(CmAttribute.DREP.id(), drep.header().attributeId());
                assertEquals(a.localCommId, drep.localCommId());
                assertEquals(b.localCommId, drep.remoteCommId());
                assertEquals(0x55, drep.header().transactionId());
            }
            assertEquals(CmId.State.TIMEWAIT, a.state());
        }
    }

    private static byte[] mad(int mgmtClass, int version, int method, int attribute) {
        byte[] m = new byte[MadHeader.MAD_SIZE];
        new MadHeader().wrap(Unpooled.wrappedBuffer(m), 0).baseVersion(1).mgmtClass(mgmtClass).classVersion(version)
                .method(method).transactionId(0x0102030405060708L).attributeId(attribute).attributeModifier(0x11);
        m[100] = 0x5A; // data beyond the header travels back too
        return m;
    }

    @Test
    void theMadLayerAnswersGetAndSetNoAgentTakesAndNothingElse() throws Exception {
        try (CmNet n = new CmNet()) {
            listen(n);
            // a Get of the CM class's ClassPortInfo: the CM takes only Sends
            toB(n, mad(0x07, 2, MadHeader.METHOD_GET, MadHeader.ATTR_CLASS_PORT_INFO));
            byte[] r = n.mads.lastSent();
            assertEquals(0x07, r[1]);
            assertEquals(2, r[2]);
            assertEquals(MadHeader.METHOD_GET_RESP, r[3] & 0xFF);
            assertEquals(0x000C, u16(r, 4));
            assertEquals(0x0102030405060708L, Unpooled.wrappedBuffer(r).getLong(8));
            assertEquals(MadHeader.ATTR_CLASS_PORT_INFO, u16(r, 16));
            // a Get and a Set to an unassigned class, echoing class, version, attribute
            for (int method : new int[] {MadHeader.METHOD_GET, MadHeader.METHOD_SET}) {
                toB(n, mad(0x30, 1, method, 0x1234));
                r = n.mads.lastSent();
                assertEquals(0x30, r[1]);
                assertEquals(1, r[2]);
                assertEquals(MadHeader.METHOD_GET_RESP, r[3] & 0xFF);
                assertEquals(0x000C, u16(r, 4));
                assertEquals(0x1234, u16(r, 16));
                assertEquals(0x11, r[23]);
                assertEquals(0x5A, r[100]);
            }
            CmCounters c = n.cmB.counters();
            assertEquals(1, c.madRepliesCmClass());
            assertEquals(2, c.madRepliesOtherClass());
            // nothing for Send-style methods, responses, a CM Get of REQ, or a CM Send of an unknown attribute
            long sent = n.mads.sent();
            toB(n, mad(0x30, 1, MadHeader.METHOD_SEND, 0x1234));
            toB(n, mad(0x30, 1, 0x06, 0x1234)); // Report
            toB(n, mad(0x30, 1, MadHeader.METHOD_GET_RESP, 0x1234));
            toB(n, mad(0x07, 2, MadHeader.METHOD_GET, CmAttribute.REQ.id()));
            toB(n, mad(0x07, 2, MadHeader.METHOD_SEND, 0x7F));
            toB(n, mad(0x01, 1, MadHeader.METHOD_GET, 0x0011)); // subnet management belongs to QP 0
            assertEquals(sent, n.mads.sent(), "none of these is answered");
        }
    }

    @Test
    void theMadLayersAnswersAreRateLimited() throws Exception {
        try (CmNet n = new CmNet(c -> c.madReplyRate(5))) {
            long sent = n.mads.sent();
            for (int i = 0; i < 40; i++) n.mads.inject(PEER, CmNet.B, mad(0x30, 1, MadHeader.METHOD_GET, i), 256);
            CmCounters c = n.cmB.counters();
            long replies = n.mads.sent() - sent;
            assertEquals(replies, c.madRepliesOtherClass());
            assertEquals(40, replies + c.madRepliesRateLimited());
            assertTrue(replies >= 5 && replies < 40, "a burst of 5, then 5 a second: " + replies);
        }
    }

    @Test
    void aSidrReqForATcpListenerIsRejectedAndOneForNobodyIsUnsupported() throws Exception {
        try (CmNet n = new CmNet()) {
            listen(n);
            for (int ps : new int[] {CmaHeader.PS_TCP, CmaHeader.PS_UDP}) {
                byte[] m = new byte[MadHeader.MAD_SIZE];
                ByteBuf b = Unpooled.wrappedBuffer(m);
                long sid = CmaHeader.serviceId(ps, PORT);
                SidrReq req = new SidrReq().wrap(b, 0).init(0x99).requestId(0x4242).pkey(0xFFFF).serviceId(sid);
                new CmaHeader().wrap(b, req.privateDataIndex()).write(40001, PEER, CmNet.B);
                toB(n, m);
                byte[] r = n.mads.lastSent(SidrRep.ATTRIBUTE_ID);
                SidrRep rep = new SidrRep().wrap(Unpooled.wrappedBuffer(r), 0);
                assertEquals(0x99, rep.header().transactionId());
                assertEquals(0x4242, rep.requestId());
                assertEquals(ps == CmaHeader.PS_TCP ? SidrRep.REJECT : SidrRep.UNSUPPORTED, rep.status());
                assertEquals(0, rep.qpn());
                assertEquals(0, rep.qkey());
                assertEquals(sid, rep.serviceId());
            }
            assertNull(n.chB.getEvent(50, TimeUnit.MILLISECONDS), "no CONNECT_REQUEST");
        }
    }
}
