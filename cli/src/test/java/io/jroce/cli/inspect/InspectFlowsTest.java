package io.jroce.cli.inspect;

import io.jroce.cli.Cli;

import io.jroce.testkit.Json;
import io.jroce.testkit.TestData;
import io.jroce.wire.Aeth;
import io.jroce.wire.Opcode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code jroce inspect --flows}: real rdma_rxe and jroce captures, and hand-made conversations. */
class InspectFlowsTest {

    // ------------------------------------------------------------------------------------------ helpers

    /** Runs {@code inspect --flows --json} and returns the flow objects (the last line is the summary). */
    private static List<Map<String, Object>> flows(int expectedExit, String... args) {
        String[] all = new String[args.length + 2];
        all[0] = "inspect";
        all[1] = "--flows";
        System.arraycopy(args, 0, all, 2, args.length);
        Cli.Result r = Cli.run(withJson(all));
        assertEquals(expectedExit, r.exit(), r.out() + r.err());
        assertEquals("", r.err());
        List<String> lines = r.outLines();
        assertTrue(Json.object(lines.get(lines.size() - 1)).containsKey("summary"), lines.toString());
        return lines.subList(0, lines.size() - 1).stream().map(Json::object).toList();
    }

    private static String[] withJson(String[] args) {
        String[] a = new String[args.length + 1];
        a[0] = args[0];
        a[1] = "--json";
        System.arraycopy(args, 1, a, 2, args.length - 1);
        return a;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Map<String, Object> m, String key) {
        return (Map<String, Object>) m.get(key);
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> requesters(Map<String, Object> flow) {
        return (List<Map<String, Object>>) flow.get("requesters");
    }

    private static long num(Map<String, Object> m, String key) {
        return ((BigDecimal) m.get(key)).longValueExact();
    }

    /** "QPN 0x000021" or "QPN 0x0023" from the local/remote address line of a perftest or rc_pingpong log. */
    private static int qpnFromLog(Path log, String which) throws IOException {
        Matcher m = Pattern.compile(which + " address:.*?QPN 0x([0-9a-fA-F]+)").matcher(Files.readString(log));
        assertTrue(m.find(), log + ": no " + which + " QPN");
        return Integer.parseInt(m.group(1), 16);
    }

    // ------------------------------------------------------------------------------------------ rdma_rxe

    @Test
    void rxeCapturesHaveOneFlowWithTheQpnsTheToolsPrinted() throws IOException {
        for (String name : List.of("rc_pingpong", "write_bw", "send_bw")) {
            Path pcap = TestData.file("rxe/" + name + ".pcap");
            List<Map<String, Object>> flows = flows(0, pcap.toString());
            assertEquals(1, flows.size(), name);
            Map<String, Object> f = flows.get(0);
            // the client (10.77.0.12) sends first; its QPN is the "local" one in its log, the server's "remote"
            Path clientLog = TestData.file("rxe/" + name + ".client.log");
            assertEquals("10.77.0.12", map(f, "a").get("addr"), name);
            assertEquals("10.77.0.11", map(f, "b").get("addr"), name);
            assertEquals(qpnFromLog(clientLog, "local"), num(map(f, "a"), "qpn"), name);
            assertEquals(qpnFromLog(clientLog, "remote"), num(map(f, "b"), "qpn"), name);
            assertEquals(20, num(f, "packets"), name);
            assertEquals(0, num(f, "retransmissions"), name);
            assertEquals(0, num(f, "sequence_naks"), name);
            assertEquals(0, num(f, "icrc_failures"), name + ": rxe's non-zero IPv4 IDs are in the ICRC");
            assertEquals(0, num(f, "malformed"), name);
        }
    }

    @Test
    void rxePingpongHasARequesterOnEachSide() {
        Map<String, Object> f = flows(0, TestData.file("rxe/rc_pingpong.pcap").toString()).get(0);
        List<Map<String, Object>> rq = requesters(f);
        assertEquals(2, rq.size());
        for (Map<String, Object> r : rq) {
            assertEquals(5, num(r, "request_packets"));
            assertEquals(5, num(r, "response_packets"));
            assertEquals(5, num(map(r, "messages"), "SEND"));
            assertEquals(5, num(map(r, "ack_rtt"), "samples"), "every SEND ONLY asks for an ACK");
        }
        assertEquals(10, num(map(f, "messages"), "SEND"));
        assertEquals(10, num(map(f, "by_opcode"), "RC_ACKNOWLEDGE"));
    }

    @Test
    void rxeWriteBandwidthFlow() {
        Map<String, Object> f = flows(0, TestData.file("rxe/write_bw.pcap").toString()).get(0);
        assertEquals(5, num(map(f, "messages"), "RDMA_WRITE"));
        assertEquals(45000, num(f, "payload_bytes"), "5 messages of 9000 bytes");
        Map<String, Object> rtt = map(f, "ack_rtt");
        assertEquals(5, num(rtt, "samples"));
        BigDecimal median = (BigDecimal) rtt.get("median_us");
        BigDecimal p99 = (BigDecimal) rtt.get("p99_us");
        assertTrue(median.signum() > 0 && median.compareTo(p99) <= 0, rtt.toString());
        assertEquals(1, requesters(f).size());
    }

    @Test
    void pcapngCopyGivesTheSameFlows() {
        assertEquals(flows(0, TestData.file("rxe/send_bw.pcap").toString()),
                flows(0, TestData.file("pcapng/rxe-send_bw.pcapng").toString()));
    }

    // ------------------------------------------------------------------------------------------ lossy jroce runs

    /**
     * testdata/jroce/jroce-write-lossy.pcap: recorded by the server (responder) of a jroce perf write with
     * --chaos drop=0.03, so dropped requests are missing from it (gaps) and dropped responses are in it. The
     * counts were checked by a reading of the file independent of jroce (Python's struct over the pcap
     * records): syndrome 0x60 (PSN sequence error NAK) in 4 of the 10 ACKNOWLEDGE packets, and 184 request
     * packets whose PSN is not beyond the highest before it (as tshark found on the earlier recording of
     * the same run, whose requests were the same).
     */
    @Test
    void lossyWriteCountsArePinned() {
        Map<String, Object> f = flows(0, TestData.file("jroce/jroce-write-lossy.pcap").toString()).get(0);
        assertEquals(292, num(f, "packets"));
        assertEquals(25, num(map(f, "messages"), "RDMA_WRITE"));
        assertEquals(25 * 4096, num(f, "payload_bytes"));
        assertEquals(184, num(f, "retransmissions"));
        assertEquals(4, num(f, "sequence_naks"));
        assertEquals(2, num(f, "out_of_order"));
        assertEquals(0, num(f, "duplicates"));
        assertEquals(0, num(f, "rnr_naks"));
        assertEquals(Map.of(), map(f, "other_naks"));
        assertEquals(10, num(map(f, "by_opcode"), "RC_ACKNOWLEDGE"));
    }

    /**
     * The ACK round trip on jroce's own capture, whose records carry microsecond stamps: the independent
     * reading above, pairing each first-sent AckReq request with the first ACK covering its PSN (Karn: none for
     * a request sent again), finds 5 samples of 175, 1437, 1520, 1616 and 2063 us. The report's histogram
     * keeps 2 significant digits (buckets under 1 % wide), so its values may differ from those by up to 1 %.
     */
    @Test
    void lossyWriteRoundTripIsMeasuredInMicroseconds() {
        Map<String, Object> f = flows(0, TestData.file("jroce/jroce-write-lossy.pcap").toString()).get(0);
        Map<String, Object> rtt = map(f, "ack_rtt");
        assertEquals(5, num(rtt, "samples"));
        assertAbout(1520, (BigDecimal) rtt.get("median_us"), rtt);
        assertAbout(175, (BigDecimal) rtt.get("min_us"), rtt);
        assertAbout(2063, (BigDecimal) rtt.get("max_us"), rtt);
        Cli.Result r = Cli.run("inspect", "--flows", TestData.file("jroce/jroce-write-lossy.pcap").toString());
        assertTrue(r.out().matches("(?s).*\\n    ACK round trip: median 15[12]\\d\\.\\d us, p99 20[5-8]\\d\\.\\d us \\(5 samples, .*"),
                r.out());
    }

    private static void assertAbout(double expectedMicros, BigDecimal actual, Object where) {
        assertTrue(actual != null && Math.abs(actual.doubleValue() - expectedMicros) <= expectedMicros * 0.01,
                expectedMicros + " us within 1 %: " + where);
    }

    /**
     * testdata/jroce/jroce-read-lossy.pcap: as above for perf read (drop=0.05): the requester re-issues READs
     * for the responses it lost, which the responder had sent (they are in the capture), so every
     * retransmission is a duplicate at the responder. tshark: 62 READ requests, 42 at or before the end of
     * the PSN range of an earlier one.
     */
    @Test
    void lossyReadCountsArePinned() {
        Map<String, Object> f = flows(0, TestData.file("jroce/jroce-read-lossy.pcap").toString()).get(0);
        assertEquals(62, num(map(f, "by_opcode"), "RC_RDMA_READ_REQUEST"));
        assertEquals(20, num(map(f, "messages"), "RDMA_READ_REQUEST"));
        assertEquals(20 * 4096, num(f, "payload_bytes"));
        assertEquals(42, num(f, "retransmissions"));
        assertEquals(42, num(f, "duplicates"));
        assertEquals(0, num(f, "out_of_order"));
        assertEquals(0, num(f, "sequence_naks"));
    }

    @Test
    void textBlock() {
        Cli.Result r = Cli.run("inspect", "--flows", TestData.file("jroce/jroce-write-lossy.pcap").toString());
        assertEquals(0, r.exit(), r.err());
        List<String> lines = r.outLines();
        assertEquals("flow 1: 127.0.0.2 qpn 0x000011 <-> 127.0.0.1 qpn 0x000011", lines.get(0));
        assertTrue(lines.get(1).startsWith("  frames 1..292, 0.042431000 s, 292 packets, "), lines.get(1));
        assertTrue(lines.get(3).startsWith("  requests 127.0.0.2 -> 127.0.0.1: 282 packets, 10 responses, "
                + "messages RDMA_WRITE 25"), lines.get(3));
        assertTrue(lines.get(4).startsWith("    retransmissions 184, duplicates 0, out of order 2, sequence NAKs 4, "
                + "RNR NAKs 0"), lines.get(4));
        assertEquals("1 flow, 292 RoCEv2 packets (UDP port 4791) in 292 frames, 0 without a BTH",
                lines.get(lines.size() - 1));
    }

    // ------------------------------------------------------------------------------------------ hand-made

    private static final int A = 0x0A000001;  // 10.0.0.1
    private static final int B = 0x0A000002;  // 10.0.0.2
    private static final int QA = 0x100;
    private static final int QB = 0x200;
    private static final int SPORT = 0xC123;

    @Test
    void nakKindsRnrWaitRoundTripIcrcAndMalformed(@TempDir Path tmp) throws IOException {
        Path pcap = tmp.resolve("naks.pcap");
        try (FlowCapture c = new FlowCapture(pcap)) {
            int ack = -1;
            int rnr = Aeth.rnrNak(12);
            int seq = Aeth.nak(Aeth.NakCode.PSN_SEQUENCE_ERROR);
            int access = Aeth.nak(Aeth.NakCode.REMOTE_ACCESS_ERROR);
            c.packet(0, A, B, SPORT, QB, Opcode.RC_SEND_ONLY, true, 10, 64, -1, -1, false);
            c.packet(10, B, A, SPORT, QA, Opcode.RC_ACKNOWLEDGE, false, 10, 0, -1, ack, false);    // RTT 10 us
            c.packet(20, A, B, SPORT, QB, Opcode.RC_SEND_ONLY, true, 11, 64, -1, -1, false);
            c.packet(30, B, A, SPORT, QA, Opcode.RC_ACKNOWLEDGE, false, 11, 0, -1, rnr, false);    // RNR NAK
            c.packet(700, A, B, SPORT, QB, Opcode.RC_SEND_ONLY, true, 11, 64, -1, -1, false);      // wait 670 us
            c.packet(710, B, A, SPORT, QA, Opcode.RC_ACKNOWLEDGE, false, 11, 0, -1, ack, false);   // no sample: resent
            c.packet(720, A, B, SPORT, QB, Opcode.RC_RDMA_WRITE_FIRST, false, 12, 256, 768, -1, false);
            // PSN 13 (WRITE MIDDLE) is not in the capture
            c.packet(722, A, B, SPORT, QB, Opcode.RC_RDMA_WRITE_LAST, true, 14, 256, -1, -1, false); // out of order
            c.packet(730, B, A, SPORT, QA, Opcode.RC_ACKNOWLEDGE, false, 13, 0, -1, seq, false);   // sequence NAK
            c.packet(740, A, B, SPORT, QB, Opcode.RC_RDMA_WRITE_MIDDLE, false, 13, 256, -1, -1, false); // resend
            c.packet(741, A, B, SPORT, QB, Opcode.RC_RDMA_WRITE_LAST, true, 14, 256, -1, -1, false);    // resend
            c.packet(750, B, A, SPORT, QA, Opcode.RC_ACKNOWLEDGE, false, 14, 0, -1, ack, false);
            c.packet(760, A, B, SPORT, QB, Opcode.RC_SEND_ONLY, true, 15, 32, -1, -1, true);        // bad ICRC
            c.packet(770, A, B, SPORT, QB, Opcode.RC_SEND_ONLY, true, 15, 32, -1, -1, false);
            c.packet(800, B, A, SPORT, QA, Opcode.RC_ACKNOWLEDGE, false, 15, 0, -1, ack, false);   // RTT 30 us
            c.packet(810, B, A, SPORT, QA, Opcode.RC_ACKNOWLEDGE, false, 15, 0, -1, ack, false);   // duplicate ACK
            c.packet(820, A, B, SPORT, QB, Opcode.RC_SEND_ONLY, true, 15, 32, -1, -1, false);       // duplicate
            c.packet(830, A, B, SPORT, QB, Opcode.RC_RDMA_WRITE_ONLY, true, 16, 8, 8, -1, false);
            c.packet(840, B, A, SPORT, QA, Opcode.RC_ACKNOWLEDGE, false, 16, 0, -1, access, false);
            c.truncated(850, A, B, SPORT, QB, 14);  // a BTH, then nothing: malformed, attributed by its QPN
            c.truncated(860, A, B, SPORT, QB, 6);   // not even a BTH
        }
        Cli.Result r = Cli.run("inspect", "--flows", "--json", pcap.toString());
        assertEquals(1, r.exit(), "a bad ICRC and malformed packets make the exit status 1");
        assertEquals("", r.err());
        List<String> lines = r.outLines();
        assertEquals(2, lines.size(), r.out());
        Map<String, Object> f = Json.object(lines.get(0));
        Map<String, Object> summary = map(Json.object(lines.get(1)), "summary");
        assertEquals(1, num(summary, "flows"));
        assertEquals(21, num(summary, "packets"));
        assertEquals(1, num(summary, "unattributed"));

        assertEquals("10.0.0.1", map(f, "a").get("addr"));
        assertEquals(QA, num(map(f, "a"), "qpn"));
        assertEquals(QB, num(map(f, "b"), "qpn"));
        assertEquals(20, num(f, "packets"), "all but the datagram without a BTH");
        assertEquals(4, num(f, "retransmissions"),
                "PSN 11 after the RNR NAK, 13 and 14 after the sequence NAK, 15 after its ACK");
        assertEquals(1, num(f, "duplicates"), "15 had been acknowledged when it came again");
        assertEquals(1, num(f, "out_of_order"));
        assertEquals(1, num(f, "sequence_naks"));
        assertEquals(1, num(f, "rnr_naks"));
        assertEquals(Map.of("REMOTE_ACCESS_ERROR", BigDecimal.ONE), map(f, "other_naks"));
        Map<String, Object> wait = map(f, "rnr_wait");
        assertEquals(1, num(wait, "count"));
        assertEquals(new BigDecimal("0.670"), wait.get("max_ms"));
        assertEquals(new BigDecimal("0.670"), wait.get("total_ms"));
        assertEquals(1, num(f, "duplicate_acks"));
        assertEquals(1, num(f, "icrc_failures"));
        assertEquals(1, num(f, "malformed"));
        Map<String, Object> rtt = map(f, "ack_rtt");
        assertEquals(2, num(rtt, "samples"), "10 us for PSN 10, 30 us for PSN 15; none for resent PSNs");
        assertClose(10.0, (BigDecimal) rtt.get("median_us"));
        assertClose(30.0, (BigDecimal) rtt.get("p99_us"));
        assertEquals(3, num(map(f, "messages"), "SEND"), "PSN 10, 11 and 15; the bad-ICRC copy is dropped");
        assertEquals(2, num(map(f, "messages"), "RDMA_WRITE"));
        assertEquals(2 * 64 + 3 * 256 + 32 + 8, num(f, "payload_bytes"),
                "each PSN's payload once; PSN 13 counts when it first shows up, as a resend");
    }

    /** HdrHistogram with 2 significant digits: within 1%. */
    private static void assertClose(double expected, BigDecimal actual) {
        assertTrue(Math.abs(actual.doubleValue() - expected) <= expected * 0.011, expected + " vs " + actual);
    }

    private static final int C = 0x0A000003;
    private static final int D = 0x0A000004;

    /** Two connections between one address pair; responses of the second come first. */
    private static void twoConnections(Path pcap, int sport1, int sport2) throws IOException {
        try (FlowCapture c = new FlowCapture(pcap)) {
            c.packet(0, C, D, sport1, 0x41, Opcode.RC_SEND_ONLY, true, 1000, 16, -1, -1, false);
            c.packet(1, C, D, sport2, 0x42, Opcode.RC_SEND_ONLY, true, 500_000, 16, -1, -1, false);
            c.packet(2, D, C, sport2, 0x32, Opcode.RC_ACKNOWLEDGE, false, 500_000, 0, -1, -1, false);
            c.packet(3, D, C, sport1, 0x31, Opcode.RC_ACKNOWLEDGE, false, 1000, 0, -1, -1, false);
        }
    }

    private static void assertTwoPairedConnections(Path pcap) {
        List<Map<String, Object>> flows = flows(0, pcap.toString());
        assertEquals(2, flows.size());
        assertEquals(0x31, num(map(flows.get(0), "a"), "qpn"));
        assertEquals(0x41, num(map(flows.get(0), "b"), "qpn"));
        assertEquals(0x32, num(map(flows.get(1), "a"), "qpn"));
        assertEquals(0x42, num(map(flows.get(1), "b"), "qpn"));
        for (Map<String, Object> f : flows) {
            assertEquals(2, num(f, "packets"));
            assertEquals(1, num(map(f, "ack_rtt"), "samples"), "the ACK was matched to its request");
        }
    }

    @Test
    void connectionsOfOneAddressPairArePairedBySourcePort(@TempDir Path tmp) throws IOException {
        Path pcap = tmp.resolve("ports.pcap");
        twoConnections(pcap, 0xC001, 0xC002); // rdma_rxe: one port per QP pair
        assertTwoPairedConnections(pcap);
    }

    @Test
    void connectionsOfOneAddressPairArePairedByPsnWhenPortsAreShared(@TempDir Path tmp) throws IOException {
        Path pcap = tmp.resolve("psns.pcap");
        twoConnections(pcap, 4791, 4791); // jroce: the device's port for every QP
        assertTwoPairedConnections(pcap);
    }

    @Test
    void qpsOfOneAddressArePairedAmongThemselves(@TempDir Path tmp) throws IOException {
        // one device talking to itself (jroce demo in one process): source and destination address are equal
        Path pcap = tmp.resolve("self.pcap");
        try (FlowCapture c = new FlowCapture(pcap)) {
            c.packet(0, C, C, 4791, 0x12, Opcode.RC_SEND_ONLY, true, 1000, 16, -1, -1, false);
            c.packet(1, C, C, 4791, 0x14, Opcode.RC_SEND_ONLY, true, 700_000, 16, -1, -1, false);
            c.packet(2, C, C, 4791, 0x13, Opcode.RC_ACKNOWLEDGE, false, 700_000, 0, -1, -1, false);
            c.packet(3, C, C, 4791, 0x11, Opcode.RC_ACKNOWLEDGE, false, 1000, 0, -1, -1, false);
        }
        List<Map<String, Object>> flows = flows(0, pcap.toString());
        assertEquals(2, flows.size());
        assertEquals(List.of(0x11L, 0x12L), List.of(num(map(flows.get(0), "a"), "qpn"), num(map(flows.get(0), "b"), "qpn")));
        assertEquals(List.of(0x13L, 0x14L), List.of(num(map(flows.get(1), "a"), "qpn"), num(map(flows.get(1), "b"), "qpn")));
        for (Map<String, Object> f : flows) {
            assertEquals("10.0.0.3", map(f, "a").get("addr"));
            assertEquals("10.0.0.3", map(f, "b").get("addr"));
            assertEquals(1, num(map(f, "ack_rtt"), "samples"));
            assertEquals(1, requesters(f).size());
        }
    }

    @Test
    void aProbeOfOneOldPsnIsNotAGap(@TempDir Path tmp) throws IOException {
        // a tail-loss probe resends the oldest unacknowledged packet, then new packets follow in order
        Path pcap = tmp.resolve("probe.pcap");
        try (FlowCapture c = new FlowCapture(pcap)) {
            for (int psn = 20; psn < 24; psn++) {
                c.packet(psn, A, B, SPORT, QB, Opcode.RC_SEND_ONLY, psn == 23, psn, 8, -1, -1, false);
            }
            c.packet(100, A, B, SPORT, QB, Opcode.RC_SEND_ONLY, true, 20, 8, -1, -1, false); // the probe
            c.packet(101, A, B, SPORT, QB, Opcode.RC_SEND_ONLY, true, 24, 8, -1, -1, false);
            c.packet(110, B, A, SPORT, QA, Opcode.RC_ACKNOWLEDGE, false, 24, 0, -1, -1, false);
        }
        Map<String, Object> f = flows(0, pcap.toString()).get(0);
        assertEquals(1, num(f, "retransmissions"));
        assertEquals(0, num(f, "out_of_order"));
        assertEquals(6 * 8 - 8, num(f, "payload_bytes"));
        assertEquals(5, num(map(f, "messages"), "SEND"));
    }

    @Test
    void oneDirectionOnlyIsAFlowWithAnUnknownQpn(@TempDir Path tmp) throws IOException {
        Path pcap = tmp.resolve("oneway.pcap");
        try (FlowCapture c = new FlowCapture(pcap)) {
            c.packet(0, A, B, SPORT, QB, Opcode.RC_SEND_ONLY, true, 5, 16, -1, -1, false);
            c.packet(5, A, B, SPORT, QB, Opcode.RC_SEND_ONLY, true, 5, 16, -1, -1, false);
        }
        Map<String, Object> f = flows(0, pcap.toString()).get(0);
        assertNull(map(f, "a").get("qpn"));
        assertEquals(1, num(f, "retransmissions"));
        assertEquals(0, num(map(f, "ack_rtt"), "samples"));
    }

    @Test
    void flowOptionSelectsOneFlowAndRejectsOthers(@TempDir Path tmp) throws IOException {
        Path pcap = tmp.resolve("two.pcap");
        twoConnections(pcap, 0xC001, 0xC002);
        List<Map<String, Object>> only = flows(0, "--flow", "2", pcap.toString());
        assertEquals(1, only.size());
        assertEquals(2, num(only.get(0), "flow"));
        Cli.Result r = Cli.run("inspect", "--flows", "--flow", "3", pcap.toString());
        assertEquals(2, r.exit());
        assertEquals("jroce inspect: no flow 3 (the capture has 2)", r.err().strip());
        Cli.Result missing = Cli.run("inspect", "--flows", tmp.resolve("none.pcap").toString());
        assertEquals(2, missing.exit());
        assertTrue(missing.err().contains("no such file"), missing.err());
    }
}
