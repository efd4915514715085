package io.jroce.endpoint.cm;

import io.jroce.endpoint.Gid;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.wire.mad.CmAttribute;
import io.jroce.wire.mad.CmDreq;
import io.jroce.wire.mad.CmRep;
import io.jroce.wire.mad.CmReq;
import io.jroce.wire.mad.CmaHeader;
import io.jroce.wire.mad.MadHeader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.time.Duration;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What peers cannot do to a CM agent: exhaust it with REQs, or get malformed MADs past it. */
class CmFloodTest {
    static final Duration T = Duration.ofSeconds(10);
    static final InetAddress ATTACKER = CmNet.addr("127.77.41.9");
    static final int PORT = 7471;

    static byte[] req(SplittableRandom r, int port) {
        byte[] mad = new byte[MadHeader.MAD_SIZE];
        ByteBuf b = Unpooled.wrappedBuffer(mad);
        CmReq req = new CmReq().wrap(b, 0).init(r.nextLong());
        req.localCommId(r.nextInt()).serviceId(CmaHeader.serviceId(CmaHeader.PS_TCP, port)).localCaGuid(r.nextLong())
                .localQpn(r.nextInt(1 << 24)).transportServiceType(CmReq.TRANSPORT_RC).startingPsn(r.nextInt(1 << 24))
                .pkey(0xFFFF).pathMtu(3).maxCmRetries(15).localCmResponseTimeout(20).remoteCmResponseTimeout(20);
        // the primary path names B's GID as the responder's (cm.c rejects any other with REJ 12)
        req.primaryPath().localGid(Gid.of(ATTACKER).raw()).remoteGid(Gid.of(CmNet.B).raw());
        new CmaHeader().wrap(b, req.privateDataIndex()).write(r.nextInt(1, 65536), ATTACKER, CmNet.B);
        return mad;
    }

    @Test
    void aFloodOfReqsAndGarbageIsBoundedAndARealConnectStillWorks() throws Exception {
        long seed = Long.getLong("jroce.seed", System.nanoTime());
        System.out.println("CmFloodTest seed " + seed + " (-Djroce.seed=" + seed + " repeats it)");
        SplittableRandom r = new SplittableRandom(seed);
        try (CmNet n = new CmNet(c -> c.maxPending(64).maxInboundQueue(512))) {
            CmId listener = CmId.create(n.cmB, n.chB);
            listener.bind(PORT);
            listener.listen(16);
            int reqs = 0;
            int garbage = 0;
            for (int i = 0; i < 6000; i++) {
                int kind = r.nextInt(10);
                if (kind < 6) {
                    byte[] m = req(r, kind == 0 ? 1000 + r.nextInt(1000) : PORT);
                    n.mads.inject(ATTACKER, CmNet.B, m, m.length);
                    reqs++;
                } else {
                    byte[] m = new byte[r.nextInt(0, 300)];
                    r.nextBytes(m);
                    if (kind < 8 && m.length >= 24) { // a valid CM header over garbage
                        Unpooled.wrappedBuffer(m).setInt(0, 0x01070203);
                        m[16] = 0;
                        m[17] = (byte) (0x10 + r.nextInt(10));
                    }
                    n.mads.inject(ATTACKER, CmNet.B, m, m.length);
                    garbage++;
                }
                if (i % 256 == 0) n.cmB.counters(); // lets the agent's runner catch up now and then
            }
            CmCounters c = n.cmB.counters(); // runs after every injected MAD was handled
            System.out.println("REQs " + reqs + ", garbage " + garbage + ": " + c + ", pending " + n.cmB.pendingCount()
                    + ", ids " + n.cmB.idCount() + ", events " + n.chB.size());
            assertEquals(reqs + garbage, c.madsIn() + c.inboundOverflow(), "every MAD handled or counted as overflow");
            assertTrue(n.cmB.pendingCount() <= 64, "pending capped");
            assertTrue(n.cmB.idCount() <= 64 + 1, "ids capped");
            assertTrue(n.chB.size() <= 16, "CONNECT_REQUESTs capped by the backlog");
            assertTrue(c.malformed() + c.unknownAttribute() + c.unmatched() > 0, "garbage counted");
            assertTrue(c.backlogOverflow() + c.pendingOverflow() > 0, "overflow counted");
            assertEquals(0, n.devB.qpCount(), "no QP was created for anybody");

            // the application takes what waits and turns the strangers away; then a real peer connects
            for (CmEvent e; (e = n.chB.poll()) != null; ) {
                if (e.type() == CmEventType.CONNECT_REQUEST) e.id().reject(null);
            }
            CmId client = CmId.create(n.cmA, n.chA);
            client.createQp(n.pdA, new QpInitAttr(n.cqA));
            client.connect(CmNet.B, PORT, null);
            CmEvent req;
            do {
                req = n.chB.expect(CmEventType.CONNECT_REQUEST, T);
                if (!CmNet.A.equals(req.id().remoteAddress())) req.id().reject(null);
            } while (!CmNet.A.equals(req.id().remoteAddress()));
            req.id().createQp(n.pdB, new QpInitAttr(n.cqB));
            req.id().accept(null);
            n.chA.expect(CmEventType.ESTABLISHED, T);
        }
    }

    @Test
    void malformedMadsAreDroppedAndCounted() throws Exception {
        try (CmNet n = new CmNet()) {
            CmId listener = CmId.create(n.cmB, n.chB);
            listener.bind(PORT);
            listener.listen(16);
            SplittableRandom r = new SplittableRandom(1);
            byte[] good = req(r, PORT);
            long sentBefore = n.mads.sent();
            // too short to hold a comm ID
            n.mads.inject(ATTACKER, CmNet.B, new byte[20], 20);
            // base version, class, class version, method
            for (int at : new int[] {0, 1, 2, 3}) {
                byte[] m = good.clone();
                m[at] ^= 0x40;
                n.mads.inject(ATTACKER, CmNet.B, m, m.length);
            }
            // a REQ with a foreign P_Key: rxe answers nothing
            byte[] pkey = good.clone();
            pkey[72] = 0x12;
            n.mads.inject(ATTACKER, CmNet.B, pkey, pkey.length);
            CmCounters c = n.cmB.counters();
            assertEquals(6, c.malformed());
            // LAP (0x0019) and an unknown attribute
            for (int id : new int[] {0x19, 0x7F}) {
                byte[] m = good.clone();
                m[17] = (byte) id;
                n.mads.inject(ATTACKER, CmNet.B, m, m.length);
            }
            // a REP for no REQ of ours
            byte[] rep = new byte[MadHeader.MAD_SIZE];
            new CmRep().wrap(Unpooled.wrappedBuffer(rep), 0).init(5).localCommId(7).remoteCommId(0x1234);
            n.mads.inject(ATTACKER, CmNet.B, rep, rep.length);
            c = n.cmB.counters();
            assertEquals(2, c.unknownAttribute());
            assertEquals(1, c.unmatched());
            assertEquals(sentBefore, n.mads.sent(), "none of these is answered");
            assertEquals(0, n.cmB.pendingCount());
            assertEquals(0, n.chB.size());

            // a DREQ for an unknown connection gets a DREP (cm.c cm_issue_drep); a short but valid REQ is taken
            byte[] dreq = new byte[MadHeader.MAD_SIZE];
            new CmDreq().wrap(Unpooled.wrappedBuffer(dreq), 0).init(6).localCommId(8).remoteCommId(0x4321);
            n.mads.inject(ATTACKER, CmNet.B, dreq, dreq.length);
            n.mads.inject(ATTACKER, CmNet.B, good, 200);
            c = n.cmB.counters();
            assertEquals(sentBefore + 1, n.mads.sent());
            assertEquals(1, n.cmB.pendingCount(), "a 200-byte REQ reads as zero-padded (as rxe's MAD layer)");
            assertEquals(CmEventType.CONNECT_REQUEST, n.chB.expect(CmEventType.CONNECT_REQUEST, T).type());
            assertEquals(CmAttribute.REQ.privateDataLength(), 92);
        }
    }
}
