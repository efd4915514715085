package io.jroce.cli.conform;

import io.jroce.cli.Cli;
import io.jroce.endpoint.Mtu;
import io.jroce.testkit.Json;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code jroce conform} against a jroce endpoint in this JVM: jroce must conform on every case. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ConformCommandTest {
    static final String TESTER = "127.0.26.1";
    static final String PEER = "127.0.26.2";

    /**
     * Cases where jroce departs today, with the answer it gives: asserted exactly, so that this test fails (and the
     * entry must go) once the endpoint is fixed.
     */
    static final Map<String, String> KNOWN_DEPARTURES = Map.of();

    @Test
    void jroceConformsOnEveryCase() throws Exception {
        try (JrocePeer peer = new JrocePeer(InetAddress.getByName(PEER), Mtu.MTU_1024)) {
            Cli.Result r = Cli.run("conform", "--via", "jroce", "--bind", TESTER, "--port", "" + peer.tcpPort, "--ro-region", "ro",
                    "--reconnect", "--case-timeout", "500ms", "--json", PEER);
            System.out.println(r.out());
            System.err.println(r.err());
            Map<String, Object> top = Json.object(r.out());
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> cases = (List<Map<String, Object>>) top.get("cases");
            assertTrue(cases.size() >= 40, "only " + cases.size() + " cases");
            Map<String, String> departures = new LinkedHashMap<>();
            for (Map<String, Object> c : cases) {
                String id = (String) c.get("id");
                String verdict = (String) c.get("verdict");
                if (verdict.equals("departs")) departures.put(id, (String) c.get("observed"));
                else if (!verdict.equals("conforms")) {
                    throw new AssertionError("case " + id + ": " + verdict + " (" + c.get("note") + ")");
                }
            }
            assertEquals(KNOWN_DEPARTURES, departures);
            assertEquals(KNOWN_DEPARTURES.isEmpty() ? 0 : 1, r.exit(), r.err());
        }
    }

    /** A peer that acknowledges everything is caught exactly where an ACK is the wrong answer, and the run exits 1. */
    @Test
    void aPeerThatAcknowledgesEverythingDeparts() throws Exception {
        String stub = "127.0.26.3";
        try (AckEverythingPeer peer = new AckEverythingPeer(InetAddress.getByName(stub))) {
            Cli.Result r = Cli.run("conform", "--bind", TESTER, "--port", "" + peer.tcpPort, "--case-timeout", "500ms",
                    "--only", "write.zero,psn.ahead.far,hdr.bad-tver,hdr.reserved-opcode,resp.unsolicited-ack", stub);
            System.out.println(r.out());
            assertEquals(1, r.exit(), r.err());
            Map<String, String> lines = new LinkedHashMap<>();
            for (String l : r.outLines()) {
                String[] f = l.trim().split("\\s{1,}", 5);
                if (f.length >= 4 && f[1].contains(".")) lines.put(f[1], f[2] + " " + f[3]);
            }
            Map<String, String> want = new LinkedHashMap<>();
            want.put("write.zero", "conforms ACK+0");
            want.put("psn.ahead.far", "departs ACK+0"); // a PSN sequence error NAK was due
            want.put("hdr.bad-tver", "departs ACK+0"); // the packet had to be dropped
            want.put("resp.unsolicited-ack", "conforms none");
            want.put("hdr.reserved-opcode", "conforms none");
            assertEquals(want.keySet(), lines.keySet(), r.out());
            for (Map.Entry<String, String> e : want.entrySet()) assertEquals(e.getValue(), lines.get(e.getKey()), e.getKey());
            assertTrue(r.out().contains("summary: 5 cases: 3 conform, 2 depart, 0 cannot tell"), r.out());
            assertTrue(r.out().contains("(IBTA 9.7.5.1 PSN sequence error; rxe_resp.c check_psn)"), r.out());
        }
    }

    /** A peer that stops answering ends the run with a message, not a hang: the cases left cannot tell. */
    @Test
    void aPeerThatFallsSilentEndsTheRun() throws Exception {
        String stub = "127.0.26.3";
        // the readiness probe, write.zero and the probe after it: 3 ACKs, then silence
        try (AckEverythingPeer peer = new AckEverythingPeer(InetAddress.getByName(stub), 3, null)) {
            Cli.Result r = Cli.run("conform", "--bind", TESTER, "--port", "" + peer.tcpPort, "--case-timeout", "500ms", "--json",
                    "--only", "write.zero,psn.ahead", stub);
            assertEquals(0, r.exit(), r.err());
            assertTrue(r.err().contains("conform: the peer stopped answering at the expected PSN after psn.ahead"), r.err());
            Map<String, Object> top = Json.object(r.out());
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> cases = (List<Map<String, Object>>) top.get("cases");
            Map<String, String> got = new LinkedHashMap<>();
            for (Map<String, Object> c : cases) got.put((String) c.get("id"), c.get("verdict") + ": " + c.get("note"));
            Map<String, String> want = new LinkedHashMap<>();
            want.put("write.zero", "conforms: null");
            for (String id : List.of("psn.ahead", "psn.ahead.far", "psn.ahead.read", "psn.ahead.once")) {
                want.put(id, "cannot tell: the peer stopped answering at the expected PSN after psn.ahead");
            }
            assertEquals(want, got);
        }
    }

    /** RoCE packets go only to addresses on the command line, not to whatever GID the peer announces. */
    @Test
    void refusesAGidThatIsNotOnTheCommandLine() throws Exception {
        String stub = "127.0.26.3";
        try (AckEverythingPeer peer = new AckEverythingPeer(InetAddress.getByName(stub), Integer.MAX_VALUE,
                io.jroce.endpoint.Gid.of(InetAddress.getByName("127.0.26.9")))) {
            Cli.Result r = Cli.run("conform", "--bind", TESTER, "--port", "" + peer.tcpPort, stub);
            assertEquals(1, r.exit(), r.err());
            assertEquals(List.of("jroce conform: the peer announced GID 127.0.26.9, not an address given on the command line: conform "
                    + "sends only to HOST and --peer-gid; add --peer-gid 127.0.26.9 if that is the peer's RoCE address"), r.errLines());
            assertEquals(0, peer.acked.get(), "nothing may have been sent to the peer's RoCE port");
        }
    }

    /** --junit, --compare and --pcap on a short run against the same broken peer. */
    @Test
    void writesJunitComparesWithARecordingAndCaptures(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        String stub = "127.0.26.3";
        java.nio.file.Path ref = dir.resolve("ref.json");
        java.nio.file.Files.writeString(ref, "{\"peer\":\"recorded\",\"cases\":[{\"id\":\"write.zero\",\"observed\":\"ACK+0\"},"
                + "{\"id\":\"psn.ahead.far\",\"observed\":\"NAK-SEQ-4194304\"}]}");
        java.nio.file.Path junit = dir.resolve("conform.xml");
        java.nio.file.Path pcap = dir.resolve("conform.pcap");
        try (AckEverythingPeer peer = new AckEverythingPeer(InetAddress.getByName(stub))) {
            Cli.Result r = Cli.run("conform", "--bind", TESTER, "--port", "" + peer.tcpPort, "--case-timeout", "500ms", "--json",
                    "--only", "write.zero,psn.ahead.far,resp.unsolicited-ack", "--junit", junit.toString(), "--pcap", pcap.toString(),
                    "--compare", ref.toString(), stub);
            assertEquals(1, r.exit(), r.err());
            Map<String, Object> top = Json.object(r.out());
            @SuppressWarnings("unchecked")
            Map<String, Object> cmp = (Map<String, Object>) top.get("compare");
            assertEquals(List.of(Map.of("id", "psn.ahead.far", "now", "ACK+0", "recorded", "NAK-SEQ-4194304"),
                    Map.of("id", "resp.unsolicited-ack", "now", "none", "recorded", "absent")), cmp.get("differences"));
        }
        String xml = java.nio.file.Files.readString(junit);
        assertTrue(xml.contains("<testsuite name=\"jroce conform jroce node at 127.0.26.3"), xml);
        assertTrue(xml.contains("tests=\"3\" failures=\"1\" skipped=\"0\""), xml);
        assertTrue(xml.contains("<testcase classname=\"conform.rc-request\" name=\"psn.ahead.far\">\n    <failure message=\"observed ACK+0, "
                + "expected NAK-SEQ-4194304\">"), xml);
        // every datagram of the run, ours and the peer's, with an ICRC Wireshark and jroce inspect verify
        Cli.Result inspect = Cli.run("inspect", pcap.toString());
        assertEquals(0, inspect.exit(), inspect.out() + inspect.err());
        assertTrue(inspect.out().contains("RC_ACKNOWLEDGE"), inspect.out());
        assertTrue(inspect.out().contains("RC_RDMA_WRITE_ONLY"), inspect.out());
        Cli.Result bad = Cli.run("conform", "--compare", junit.toString(), stub);
        assertEquals(2, bad.exit());
        assertTrue(bad.err().contains("is not JSON"), bad.err());
    }

    /**
     * Through the perftest exchange: a jroce perf write server. Its buffer grants remote write only, so the cases
     * that need READ or atomics cannot tell; none departs, and the server ends its test normally afterwards.
     */
    @Test
    void aJrocePerfWriteServerConformsThroughThePerftestExchange() throws Exception {
        String server = "127.0.26.4";
        int port;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, InetAddress.getByName(server))) {
            port = s.getLocalPort();
        }
        java.util.concurrent.CompletableFuture<Cli.Result> srv = java.util.concurrent.CompletableFuture.supplyAsync(() ->
                Cli.run("perf", "write", "--bind", server, "-p", "" + port, "-x", "0", "--timeout", "60"));
        Cli.Result r = Cli.run("conform", "--via", "perftest-write", "--bind", TESTER, "--port", "" + port, "--case-timeout", "500ms",
                "--json", server);
        System.out.println(r.out());
        Cli.Result s = srv.get(60, TimeUnit.SECONDS);
        assertEquals(0, r.exit(), r.err());
        assertEquals(0, s.exit(), "perf server: " + s.err());
        Map<String, Object> top = Json.object(r.out());
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> cases = (List<Map<String, Object>>) top.get("cases");
        Map<String, String> verdicts = new LinkedHashMap<>();
        for (Map<String, Object> c : cases) verdicts.put((String) c.get("id"), (String) c.get("verdict"));
        assertTrue(!verdicts.containsValue("departs"), verdicts.toString());
        for (String id : List.of("write.only", "write.multi", "dup.write", "psn.ahead", "psn.resume", "hdr.bad-icrc", "err.rkey.write")) {
            assertEquals("conforms", verdicts.get(id), id + " in " + verdicts);
        }
        assertEquals("cannot tell", verdicts.get("read.only"));
    }

    @Test
    void listsTheCatalogue() {
        Cli.Result r = Cli.run("conform", "--list");
        assertEquals(0, r.exit(), r.err());
        assertEquals(Catalogue.all().size(), r.outLines().size());
        assertTrue(r.outLines().size() >= 40);
        assertTrue(r.out().contains("err.rkey.write"), r.out());
    }

    @Test
    void badUsageIsOneLineAndExitTwo() {
        Cli.Result r = Cli.run("conform", "--via", "carrier-pigeon", PEER);
        assertEquals(2, r.exit());
        assertEquals(1, r.errLines().size(), r.err());
        assertTrue(r.err().contains("not one of jroce, perftest-write"), r.err());
        Cli.Result none = Cli.run("conform", "--only", "nothing.", PEER);
        assertEquals(2, none.exit());
        assertTrue(none.err().contains("selects no case"), none.err());
    }
}
