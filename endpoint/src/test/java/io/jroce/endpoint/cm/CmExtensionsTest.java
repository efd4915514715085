package io.jroce.endpoint.cm;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.JroceExtensions;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WcStatus;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;
import io.jroce.wire.mad.CmAttribute;
import io.jroce.wire.mad.CmaHeader;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static io.jroce.endpoint.JroceExtensions.ALL;
import static io.jroce.endpoint.JroceExtensions.CONGESTION_CONTROL;
import static io.jroce.endpoint.JroceExtensions.SELECTIVE_REPEAT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * {@link JroceExtensions} agreed in the private data of REQ and REP ({@link ExtensionTrailer}): in force only when
 * both trailers travel; otherwise both QPs stay plain IBA and the messages are those of a plain rdma_cm peer.
 */
class CmExtensionsTest {
    static final Duration T = Duration.ofSeconds(10);
    static final int PORT = 7481;
    /** Where the REQ's trailer sits in the MAD: the private data area, rdma_cm's header, 48 bytes of the application. */
    static final int REQ_TRAILER = CmAttribute.REQ.privateDataOffset() + CmaHeader.LENGTH + 48;
    static final int REQ_USER = CmAttribute.REQ.privateDataOffset() + CmaHeader.LENGTH;
    static final int REP_TRAILER = CmAttribute.REP.privateDataOffset() + 188;
    static final byte[] TRAILER_ALL = {'j', 'r', 'o', 'c', 'e', 'X', 1, ALL};

    /** What one connection showed: the CONNECT_REQUEST, the active side's ESTABLISHED and both ids. */
    record Outcome(CmEvent request, CmEvent established, CmId client, CmId server) {
    }

    static Outcome connect(CmNet n, CmConnParam offer, CmConnParam answer) throws Exception {
        CmId listener = CmId.create(n.cmB, n.chB);
        listener.bind(PORT);
        listener.listen(4);
        CmId client = CmId.create(n.cmA, n.chA);
        client.createQp(n.pdA, new QpInitAttr(n.cqA));
        client.connect(CmNet.B, PORT, offer);
        CmEvent req = n.chB.expect(CmEventType.CONNECT_REQUEST, T);
        CmId server = req.id();
        server.createQp(n.pdB, new QpInitAttr(n.cqB));
        server.accept(answer);
        CmEvent est = n.chA.expect(CmEventType.ESTABLISHED, T);
        n.chB.expect(CmEventType.ESTABLISHED, T);
        assertEquals(QpState.RTS, client.qp().state());
        assertEquals(QpState.RTS, server.qp().state());
        return new Outcome(req, est, client, server);
    }

    private static void assertBoth(Outcome o, int flags) {
        assertEquals(flags, o.client.qp().extensions(), "active QP");
        assertEquals(flags, o.server.qp().extensions(), "passive QP");
        assertEquals(flags, o.client.extensions(), "active id");
        assertEquals(flags, o.server.extensions(), "passive id");
    }

    private static byte[] tail(byte[] b, int from, int len) {
        return Arrays.copyOfRange(b, from, from + len);
    }

    @Test
    void bothOfferAndBothQpsRunSelectiveRepeatAndCongestionControl() throws Exception {
        try (CmNet n = new CmNet()) {
            byte[] hello = "hello".getBytes(StandardCharsets.US_ASCII);
            Outcome o = connect(n, CmConnParam.defaults().privateData(hello).extensions(ALL),
                    CmConnParam.defaults().privateData("welcome".getBytes(StandardCharsets.US_ASCII)).extensions(ALL));
            assertBoth(o, ALL);
            assertEquals(ALL, o.request.param().extensions(), "the offer, as the passive application sees it");
            // the application gets the area as received: its own bytes first, the trailer in the last 8
            assertEquals(56, o.request.privateData().length);
            assertArrayEquals(hello, Arrays.copyOf(o.request.privateData(), 5));
            assertArrayEquals(TRAILER_ALL, tail(o.request.privateData(), 48, 8));
            assertArrayEquals(TRAILER_ALL, tail(o.established.privateData(), 188, 8));
            assertArrayEquals(TRAILER_ALL, tail(n.mads.lastSent(CmAttribute.REQ.id()), REQ_TRAILER, 8));

            // and the connection carries traffic with them on
            MemoryRegion src = n.pdA.allocateAndRegister(4096, Access.LOCAL_WRITE);
            MemoryRegion dst = n.pdB.allocateAndRegister(4096, Access.LOCAL_WRITE);
            o.server.qp().postRecv(new ReceiveWorkRequest(7, Sge.of(dst, 0, 64)));
            src.buffer().put(0, hello);
            o.client.qp().postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(src, 0, 5)).signaled());
            WorkCompletion[] wc = new WorkCompletion[1];
            assertEquals(1, n.cqB.poll(wc, 5, TimeUnit.SECONDS));
            assertEquals(WcStatus.SUCCESS, wc[0].status(), wc[0].toString());
            assertEquals(7, wc[0].wrId());
        }
    }

    @Test
    void whatBothOfferIsWhatIsUsed() throws Exception {
        try (CmNet n = new CmNet()) {
            Outcome o = connect(n, CmConnParam.defaults().extensions(SELECTIVE_REPEAT), CmConnParam.defaults().extensions(ALL));
            assertBoth(o, SELECTIVE_REPEAT);
        }
        try (CmNet n = new CmNet()) {
            Outcome o = connect(n, CmConnParam.defaults().extensions(ALL), CmConnParam.defaults().extensions(CONGESTION_CONTROL));
            assertBoth(o, CONGESTION_CONTROL);
            assertEquals(CONGESTION_CONTROL, n.mads.lastSent(CmAttribute.REP.id())[REP_TRAILER + 7]);
        }
    }

    @Test
    void withoutAnOfferTheMessagesAreThoseOfAPlainPeer() throws Exception {
        try (CmNet n = new CmNet()) {
            Outcome o = connect(n, CmConnParam.defaults().privateData(new byte[] {1, 2, 3}),
                    CmConnParam.defaults().privateData(new byte[] {4}).extensions(ALL));
            assertBoth(o, 0);
            assertEquals(0, o.request.param().extensions());
            byte[] req = n.mads.lastSent(CmAttribute.REQ.id());
            assertArrayEquals(new byte[56 - 3], tail(req, REQ_USER + 3, 56 - 3), "nothing after the application's bytes");
            byte[] rep = n.mads.lastSent(CmAttribute.REP.id());
            assertArrayEquals(new byte[195], tail(rep, CmAttribute.REP.privateDataOffset() + 1, 195),
                    "a listener that allows extensions answers a plain REQ as a plain peer");
        }
    }

    @Test
    void aListenerThatDeclinesAnswersAsAPlainPeer() throws Exception {
        try (CmNet n = new CmNet()) {
            Outcome o = connect(n, CmConnParam.defaults().extensions(ALL), CmConnParam.defaults());
            assertBoth(o, 0);
            assertEquals(ALL, o.request.param().extensions(), "offered, but not taken");
            assertArrayEquals(new byte[196], tail(n.mads.lastSent(CmAttribute.REP.id()), CmAttribute.REP.privateDataOffset(), 196));
        }
    }

    @Test
    void applicationDataThatFillsTheAreaLeavesNoRoomForAnOffer() throws Exception {
        for (int len : new int[] {49, 56}) {
            try (CmNet n = new CmNet()) {
                byte[] data = new byte[len];
                Arrays.fill(data, (byte) 0x5A);
                Outcome o = connect(n, CmConnParam.defaults().privateData(data).extensions(ALL), CmConnParam.defaults().extensions(ALL));
                assertBoth(o, 0);
                byte[] area = Arrays.copyOf(data, 56);
                assertArrayEquals(area, tail(n.mads.lastSent(CmAttribute.REQ.id()), REQ_USER, 56), len + " bytes: the application's own");
                assertArrayEquals(area, o.request.privateData());
            }
        }
        try (CmNet n = new CmNet()) { // 48 bytes still leave the 8
            Outcome o = connect(n, CmConnParam.defaults().privateData(new byte[48]).extensions(ALL), CmConnParam.defaults().extensions(ALL));
            assertBoth(o, ALL);
        }
    }

    @Test
    void aRepWhoseApplicationDataFillsTheAreaAgreesOnNothing() throws Exception {
        try (CmNet n = new CmNet()) {
            byte[] data = new byte[196];
            Arrays.fill(data, (byte) 0x33);
            Outcome o = connect(n, CmConnParam.defaults().extensions(ALL), CmConnParam.defaults().privateData(data).extensions(ALL));
            assertBoth(o, 0);
            assertArrayEquals(data, o.established.privateData());
        }
    }

    @Test
    void aTrailerOfAnotherVersionOrMagicIsOpaqueData() throws Exception {
        byte[][] bad = {
                {'j', 'r', 'o', 'c', 'e', 'X', 2, ALL},       // a version this release does not speak
                {'j', 'r', 'o', 'c', 'e', 'Y', 1, ALL},       // not the magic
                {0, 'r', 'o', 'c', 'e', 'X', 1, ALL},
        };
        for (byte[] t : bad) {
            try (CmNet n = new CmNet()) {
                byte[] data = new byte[56];
                System.arraycopy(t, 0, data, 48, 8);
                Outcome o = connect(n, CmConnParam.defaults().privateData(data), CmConnParam.defaults().extensions(ALL));
                assertBoth(o, 0);
                assertEquals(0, o.request.param().extensions());
                assertArrayEquals(data, o.request.privateData(), "handed over as the peer's data");
                assertArrayEquals(new byte[8], tail(n.mads.lastSent(CmAttribute.REP.id()), REP_TRAILER, 8), "no answer");
                assertEquals(0, n.cmB.counters().malformed());
            }
        }
    }

    @Test
    void anOfferCorruptedOnTheWayIsIgnoredOnBothSides() throws Exception {
        try (CmNet n = new CmNet()) {
            // the loopback delivers a copy of the bytes its drop rule saw: change the offer's version in flight
            n.mads.drop((to, mad) -> {
                if (MadLoopback.attributeId(mad) == CmAttribute.REQ.id()) mad[REQ_TRAILER + 6] = 9;
                return false;
            });
            Outcome o = connect(n, CmConnParam.defaults().extensions(ALL), CmConnParam.defaults().extensions(ALL));
            assertBoth(o, 0);
            assertEquals(0, n.cmB.counters().malformed());
        }
    }

    @Test
    void anAnswerBeyondTheOfferAgreesOnNothingAtTheRequester() throws Exception {
        try (CmNet n = new CmNet()) {
            // a REP that claims more than was offered (no jroce sends it): the requester takes none of it
            n.mads.drop((to, mad) -> {
                if (MadLoopback.attributeId(mad) == CmAttribute.REP.id()) mad[REP_TRAILER + 7] = ALL;
                return false;
            });
            Outcome o = connect(n, CmConnParam.defaults().extensions(SELECTIVE_REPEAT), CmConnParam.defaults().extensions(ALL));
            assertEquals(0, o.client.qp().extensions());
            assertEquals(0, o.client.extensions());
        }
    }

    @Test
    void aSideThatDoesNotTakePartLeavesItsQpAsTheApplicationSetIt() throws Exception {
        try (CmNet n = new CmNet()) {
            CmId listener = CmId.create(n.cmB, n.chB);
            listener.bind(PORT);
            listener.listen(4);
            CmId client = CmId.create(n.cmA, n.chA);
            client.createQp(n.pdA, new QpInitAttr(n.cqA)).setExtensions(CONGESTION_CONTROL);
            client.connect(CmNet.B, PORT, null);
            CmEvent req = n.chB.expect(CmEventType.CONNECT_REQUEST, T);
            req.id().createQp(n.pdB, new QpInitAttr(n.cqB));
            req.id().accept(null);
            n.chA.expect(CmEventType.ESTABLISHED, T);
            assertEquals(CONGESTION_CONTROL, client.qp().extensions(), "set out of band, as before this negotiation");
            assertEquals(0, client.extensions(), "nothing agreed in the CM");
        }
    }

    @Test
    void unknownFlagsAreRefusedInTheParameters() {
        assertThrows(IllegalArgumentException.class, () -> CmConnParam.defaults().extensions(0x80));
        assertEquals(ALL, CmConnParam.defaults().extensions(ALL).extensions());
    }

    @Test
    void theTrailerCodecReadsAnyBytesWithoutFailing() {
        long seed = System.nanoTime();
        System.out.println("CmExtensionsTest seed " + seed);
        SplittableRandom rnd = new SplittableRandom(seed);
        for (int i = 0; i < 10_000; i++) {
            byte[] area = new byte[rnd.nextInt(0, 200)];
            for (int j = 0; j < area.length; j++) area[j] = (byte) rnd.nextInt(256);
            if (rnd.nextBoolean() && area.length >= 8) System.arraycopy(TRAILER_ALL, 0, area, area.length - 8, 6);
            int f = ExtensionTrailer.decode(area);
            if (f >= 0) assertEquals(0, f & ~ALL, "seed " + seed);
        }
        byte[] area = new byte[56];
        System.arraycopy(ExtensionTrailer.encode(ALL | 0x40), 0, area, 48, 8);
        assertEquals(ALL, ExtensionTrailer.decode(area), "flags this release does not know are left out");
        assertEquals(-1, ExtensionTrailer.decode(new byte[56]));
        System.arraycopy(ExtensionTrailer.encode(0), 0, area, 48, 8);
        assertEquals(0, ExtensionTrailer.decode(area), "a valid trailer that agrees on nothing");
    }
}
