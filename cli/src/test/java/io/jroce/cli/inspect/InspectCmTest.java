package io.jroce.cli.inspect;

import io.jroce.cli.Cli;
import io.jroce.testkit.Json;
import io.jroce.testkit.TestData;
import io.jroce.wire.BthView;
import io.jroce.wire.DethView;
import io.jroce.wire.Icrc;
import io.jroce.wire.Opcode;
import io.jroce.wire.RoceV2;
import io.jroce.wire.mad.CmReq;
import io.jroce.wire.mad.MadHeader;
import io.jroce.wire.pcap.PcapWriter;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code jroce inspect} on testdata/cm/cm-messages.pcap: UD DETH fields and the CM messages in the MADs. */
class InspectCmTest {
    private static final String FILE = "cm/cm-messages.pcap";

    @Test
    void text() {
        Cli.Result r = Cli.run("inspect", TestData.file(FILE).toString());
        assertEquals(0, r.exit(), r.out() + r.err());
        assertEquals("", r.err());
        List<String> l = r.outLines();
        assertEquals(8 + 1 + 1, l.size(), r.out());
        for (int i = 0; i < 8; i++) {
            assertTrue(l.get(i).contains(" UD_SEND_ONLY "), l.get(i));
            assertTrue(l.get(i).endsWith(" icrc=ok"), l.get(i));
        }
        for (int i = 0; i < 7; i++) {
            assertTrue(l.get(i).contains(" deth[qkey=0x80010000 src_qp=0x000001] payload_len=256 cm["), l.get(i));
        }
        assertTrue(l.get(0).contains("cm[REQ tid=0x000000071a2b3c4d local_comm_id=0x1a2b3c4d "
                + "service_id=0x0000000001061c06 ps=TCP port=7174 qpn=0x000011 starting_psn=0xabcde1 transport=RC (0) "
                + "mtu=1024 (3) resp_res=1 init_depth=2 cma[ip_version=4 src=192.0.2.10 dst=192.0.2.11 src_port=40000]]"),
                l.get(0));
        assertTrue(l.get(1).contains("cm[MRA tid=0x000000071a2b3c4d local_comm_id=0x5e6f7081 "
                + "remote_comm_id=0x1a2b3c4d mraed=REQ (0) service_timeout=68.719 s (24)]"), l.get(1));
        assertTrue(l.get(2).contains("cm[REP tid=0x000000071a2b3c4d local_comm_id=0x5e6f7081 "
                + "remote_comm_id=0x1a2b3c4d qpn=0x0000d2 starting_psn=0x123456 resp_res=2 init_depth=1]"), l.get(2));
        assertTrue(l.get(3).contains("cm[RTU tid=0x000000071a2b3c4d local_comm_id=0x1a2b3c4d "
                + "remote_comm_id=0x5e6f7081]"), l.get(3));
        assertTrue(l.get(4).contains("cm[DREQ tid=0x000000081a2b3c4d local_comm_id=0x1a2b3c4d "
                + "remote_comm_id=0x5e6f7081 remote_qpn=0x0000d2]"), l.get(4));
        assertTrue(l.get(5).contains("cm[DREP tid=0x000000081a2b3c4d local_comm_id=0x5e6f7081 "
                + "remote_comm_id=0x1a2b3c4d]"), l.get(5));
        assertTrue(l.get(6).contains("cm[REJ tid=0x000000091a2b3c50 local_comm_id=0x00000000 "
                + "remote_comm_id=0x1a2b3c50 rejected=REQ (0) reason=INVALID_GID (12) ari_len=16]"), l.get(6));
        assertTrue(l.get(7).contains(" dqpn=0x000055 "), l.get(7));
        assertTrue(l.get(7).contains(" deth[qkey=0x11111111 src_qp=0x000011] payload_len=256 icrc=ok"), l.get(7));
        assertFalse(l.get(7).contains("cm["), l.get(7));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> sub(Map<String, Object> m, String key) {
        return (Map<String, Object>) m.get(key);
    }

    private static long num(Object o) {
        return ((Number) o).longValue();
    }

    @Test
    void json() {
        Cli.Result r = Cli.run("inspect", "--json", TestData.file(FILE).toString());
        assertEquals(0, r.exit(), r.out() + r.err());
        List<String> l = r.outLines();
        assertEquals(9, l.size());

        Map<String, Object> p = Json.object(l.get(0));
        Map<String, Object> deth = sub(p, "deth");
        assertEquals(0x80010000L, num(deth.get("qkey")));
        assertEquals(1, num(deth.get("src_qp")));
        Map<String, Object> cm = sub(p, "cm");
        assertEquals("REQ", cm.get("msg"));
        assertEquals(0x000000071a2b3c4dL, num(cm.get("tid")));
        assertEquals(0x1a2b3c4dL, num(cm.get("local_comm_id")));
        assertFalse(cm.containsKey("remote_comm_id"));
        assertEquals(0x0000000001061c06L, num(cm.get("service_id")));
        assertEquals("TCP", cm.get("ps"));
        assertEquals(7174, num(cm.get("port")));
        assertEquals(0x11, num(cm.get("qpn")));
        assertEquals(0xabcde1, num(cm.get("starting_psn")));
        assertEquals(0, num(cm.get("transport")));
        assertEquals("RC", cm.get("transport_name"));
        assertEquals(3, num(cm.get("mtu")));
        assertEquals("1024", cm.get("mtu_name"));
        Map<String, Object> cma = sub(cm, "cma");
        assertEquals(4, num(cma.get("ip_version")));
        assertEquals("192.0.2.10", cma.get("src"));
        assertEquals("192.0.2.11", cma.get("dst"));
        assertEquals(40000, num(cma.get("src_port")));

        cm = sub(Json.object(l.get(2)), "cm");
        assertEquals("REP", cm.get("msg"));
        assertEquals(0x5e6f7081L, num(cm.get("local_comm_id")));
        assertEquals(0x1a2b3c4dL, num(cm.get("remote_comm_id")));
        assertEquals(0xd2, num(cm.get("qpn")));
        assertEquals(0x123456, num(cm.get("starting_psn")));

        cm = sub(Json.object(l.get(6)), "cm");
        assertEquals("REJ", cm.get("msg"));
        assertEquals(12, num(cm.get("reason")));
        assertEquals("INVALID_GID", cm.get("reason_name"));
        assertEquals(0, num(cm.get("rejected")));
        assertEquals("REQ", cm.get("rejected_name"));
        assertEquals(0, num(cm.get("local_comm_id")));

        Map<String, Object> ud = Json.object(l.get(7));
        assertFalse(ud.containsKey("cm"));
        assertEquals(0x11111111L, num(sub(ud, "deth").get("qkey")));
        assertEquals(0x11, num(sub(ud, "deth").get("src_qp")));
    }

    /** Writes one UD SEND to QP 1 whose payload is the first madLen bytes of mad. */
    private static void send(PcapWriter w, int n, ByteBuf mad, int madLen) throws Exception {
        int pad = RoceV2.padFor(madLen);
        int len = BthView.LENGTH + DethView.LENGTH + madLen + pad + RoceV2.ICRC_LENGTH;
        ByteBuf p = Unpooled.buffer(len, len).writerIndex(len);
        new BthView().wrap(p, 0).write(Opcode.UD_SEND_ONLY.code(), false, false, pad, 0xFFFF, 1, false, n);
        new DethView().wrap(p, BthView.LENGTH).write(RoceV2.GSI_QKEY, 1);
        p.setBytes(BthView.LENGTH + DethView.LENGTH, mad, 0, madLen);
        new Icrc().writeIpv4(0x0A000001, 0x0A000002, n, Icrc.IPV4_DF, 50000, 4791, p, 0, len);
        w.writeUdpIpv4(n * 1000L, 0x0A000001, 50000, 0x0A000002, 4791, n, Icrc.IPV4_DF, p, 0, len);
    }

    @Test
    void shortMadsOtherClassesAndVersionsLinuxWouldDrop(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("mads.pcap");
        ByteBuf mad = Unpooled.buffer(256, 256).writerIndex(256);
        try (PcapWriter w = new PcapWriter(file)) {
            // 1: a REQ cut to 200 bytes, which rdma_rxe's MAD layer reads zero-padded
            new CmReq().wrap(mad, 0).init(0x55).localCommId(0x77).serviceId(0x0000000001064853L).localQpn(0x42)
                    .startingPsn(0x99);
            send(w, 1, mad, 200);
            // 2: the same REQ with class version 1: the Linux CM has no agent for it
            mad.setByte(2, 1);
            send(w, 2, mad, 256);
            // 3: a Subnet Administration MAD (class 0x03)
            new MadHeader().wrap(mad, 0).mgmtClass(0x03).classVersion(2).method(0x01).attributeId(0x0035);
            send(w, 3, mad, 256);
            // 4: too short to hold a MAD header
            send(w, 4, mad, 20);
        }
        Cli.Result r = Cli.run("inspect", file.toString());
        assertEquals(0, r.exit(), r.out() + r.err());
        List<String> l = r.outLines();
        assertTrue(l.get(0).contains(" cm[REQ tid=0x0000000000000055 local_comm_id=0x00000077 "
                + "service_id=0x0000000001064853 ps=TCP port=18515 qpn=0x000042 starting_psn=0x000099 "), l.get(0));
        assertTrue(l.get(0).contains(" cma[ip_version=0 src=null dst=null src_port=0] mad_len=200] icrc=ok"), l.get(0));
        assertTrue(l.get(1).contains(" cm[REQ base_version=1 class_version=1 method=SEND (0x03) tid=0x0000000000000055 "),
                l.get(1));
        assertTrue(l.get(2).contains(" mad[mgmt_class=SUBN_ADM (0x03) class_version=2 method=GET (0x01) attr=0x0035 "
                + "tid=0x0000000000000055] icrc=ok"), l.get(2));
        assertTrue(l.get(3).endsWith(" payload_len=20 icrc=ok"), l.get(3));
    }

    @Test
    void sidrRequestAndReplyAreDecoded(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("sidr.pcap");
        ByteBuf mad = Unpooled.buffer(256, 256).writerIndex(256);
        try (PcapWriter w = new PcapWriter(file)) {
            // rdma_cm's UDP port space: service ID 0x0000000001110000 | port (udaddy's 7174)
            new io.jroce.wire.mad.SidrReq().wrap(mad, 0).init(0x31).requestId(0x1234).pkey(0xFFFF).serviceId(0x0000000001111C06L);
            send(w, 1, mad, 256);
            mad.setZero(0, 256);
            new io.jroce.wire.mad.SidrRep().wrap(mad, 0).init(0x31).requestId(0x1234).status(io.jroce.wire.mad.SidrRep.REJECT)
                    .qpn(0).serviceId(0x0000000001111C06L).qkey(0x01234567);
            send(w, 2, mad, 256);
        }
        Cli.Result r = Cli.run("inspect", file.toString());
        assertEquals(0, r.exit(), r.out() + r.err());
        List<String> l = r.outLines();
        assertTrue(l.get(0).contains(" cm[SIDR_REQ tid=0x0000000000000031 request_id=0x00001234 pkey=0xffff "
                + "service_id=0x0000000001111c06 ps=UDP port=7174]"), l.get(0));
        assertTrue(l.get(1).contains(" cm[SIDR_REP tid=0x0000000000000031 request_id=0x00001234 status=REJECTED (2) "
                + "qpn=0x000000 qkey=0x01234567 service_id=0x0000000001111c06 ps=UDP port=7174]"), l.get(1));
    }

    /** Real rdma_rxe CM traffic (testdata/rxe-cm/cm_*.pcap, recorded on the lab's bridge between two rxe guests). */
    private static List<String> cmLines(String file, int packets) {
        Cli.Result r = Cli.run("inspect", TestData.file(file).toString());
        assertEquals(0, r.exit(), r.out() + r.err());
        List<String> l = r.outLines();
        assertTrue(l.contains(packets + " RoCEv2 packets (UDP port 4791) in " + packets + " frames: 0 malformed, 0 bad ICRC"),
                r.out());
        return l.stream().filter(x -> x.contains(" cm[")).toList();
    }

    @Test
    void rdmaRxeRpingConnectsAndDisconnects() {
        for (String file : List.of("rxe-cm/cm_rping.pcap", "rxe-cm/cm_rping_ipv6.pcap")) {
            boolean v6 = file.contains("ipv6");
            List<String> cm = cmLines(file, 41);
            assertEquals(List.of("REQ", "REP", "RTU", "DREQ", "DREP"),
                    cm.stream().map(x -> x.substring(x.indexOf(" cm[") + 4).split(" ")[0]).toList(), file);
            for (String x : cm) {
                assertTrue(x.contains(" deth[qkey=0x80010000 src_qp=0x000001] payload_len=256 "), x);
                assertTrue(x.endsWith(" icrc=ok"), x);
            }
            // rping's port 7174 in the TCP port space; the rdma_cm header names both addresses in the REQ's IP version
            assertTrue(cm.get(0).contains(" service_id=0x0000000001061c06 ps=TCP port=7174 "), cm.get(0));
            assertTrue(cm.get(0).contains(v6 ? "cma[ip_version=6 src=fd77:0:0:0:0:0:0:12 dst=fd77:0:0:0:0:0:0:11 "
                    : "cma[ip_version=4 src=10.77.0.12 dst=10.77.0.11 "), cm.get(0));
            // the comm IDs pair up: REP and DREP answer the REQ's and DREQ's sender
            String reqId = field(cm.get(0), "local_comm_id");
            String repId = field(cm.get(1), "local_comm_id");
            assertEquals(reqId, field(cm.get(1), "remote_comm_id"));
            assertEquals(repId, field(cm.get(2), "remote_comm_id"));
            assertEquals(repId, field(cm.get(3), "remote_comm_id"));
            assertEquals(reqId, field(cm.get(4), "remote_comm_id"));
        }
    }

    @Test
    void rdmaRxeRejectsAPortNobodyListensOn() {
        List<String> cm = cmLines("rxe-cm/cm_rej.pcap", 2);
        assertEquals(2, cm.size());
        assertTrue(cm.get(0).contains("cm[REQ ") && cm.get(0).contains(" port=7999 "), cm.get(0));
        assertTrue(cm.get(1).contains("cm[REJ ") && cm.get(1).contains(" local_comm_id=0x00000000 remote_comm_id="
                + field(cm.get(0), "local_comm_id") + " rejected=REQ (0) reason=INVALID_SERVICE_ID (8)"), cm.get(1));
    }

    /** jroce's capture of its rping offering the extensions to rxe's rping (interop.sh --cm, rping-offer-extensions): the offer, no answer. */
    @Test
    void jroceExtensionsOfferIsShownAndRxeAnswersWithout() {
        List<String> cm = cmLines("rxe-cm/jroce_offer_rping.pcap", 65);
        assertEquals(List.of("REQ", "REP", "RTU", "DREQ", "DREP"),
                cm.stream().map(x -> x.substring(x.indexOf(" cm[") + 4).split(" ")[0]).toList());
        assertTrue(cm.get(0).contains(" src_port=53566] jroce_ext=selective-repeat,congestion-control]"), cm.get(0));
        for (String x : cm.subList(1, cm.size())) assertFalse(x.contains("jroce_ext"), x);
        for (String file : List.of("rxe-cm/cm_rping.pcap", "rxe-cm/cm_rej.pcap")) {
            Cli.Result r = Cli.run("inspect", TestData.file(file).toString());
            assertFalse(r.out().contains("jroce_ext"), "rxe's own REQs carry no trailer: " + file);
        }
    }

    private static String field(String line, String name) {
        int i = line.indexOf(" " + name + "=");
        assertTrue(i >= 0, name + " in " + line);
        String rest = line.substring(i + name.length() + 2);
        return rest.split("[ \\]]", 2)[0];
    }
}
