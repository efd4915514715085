package io.jroce.cli.perf;

import io.jroce.cli.Cli;

import io.jroce.testkit.Json;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.TreeMap;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;

import static io.jroce.cli.perf.PingpongCommandTest.usageError;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PerfCommandTest {
    private static final AtomicInteger PORT = new AtomicInteger(28560);
    /** REPORT_FMT of perftest 4.5 (testdata/rxe/*.log). */
    private static final Pattern BW_ROW = Pattern.compile(" \\d+ +\\d+ +\\d+\\.\\d\\d +\\d+\\.\\d\\d *\t\t   \\d+\\.\\d{6}");
    private static final Pattern LAT_ROW = Pattern.compile(" \\d+ +\\d+ +(\\d+\\.\\d\\d[ \t]+){6}\\d+\\.\\d\\d *");
    private static final String BW_HEADER = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";

    @Test
    void badOptionsAreOneLineUsageErrors() {
        usageError("unknown test 'frob': one of send, write, read, atomic", "perf", "frob", "--bind", "127.0.1.1");
        usageError("Missing required parameter", "perf");
        usageError("-s/--size 0", "perf", "write", "--bind", "127.0.1.1", "-s", "0");
        usageError("'big'", "perf", "write", "--bind", "127.0.1.1", "-s", "big");
        usageError("atomic tests use 8-byte messages", "perf", "atomic", "--bind", "127.0.1.1", "-s", "16");
        usageError("-A/--atomic_type applies to atomic tests only", "perf", "write", "--bind", "127.0.1.1", "-A", "CMP_AND_SWAP");
        usageError("'SWAP'", "perf", "atomic", "--bind", "127.0.1.1", "-A", "SWAP");
        usageError("exclude each other", "perf", "send", "--bind", "127.0.1.1", "-n", "10", "-D", "1");
        usageError("-D/--duration", "perf", "send", "--bind", "127.0.1.1", "-D", "0");
        usageError("-f/--margin applies to a timed run", "perf", "write", "--bind", "127.0.1.1", "-f", "1");
        usageError("must be longer than twice -f/--margin", "perf", "write", "--bind", "127.0.1.1", "-D", "5", "-f", "3");
        usageError("invalid --progress", "perf", "send", "--bind", "127.0.1.1", "--progress", "1ms");
        usageError("-n/--iters 0", "perf", "send", "--bind", "127.0.1.1", "-n", "0");
        usageError("at least 5 iterations", "perf", "send", "--lat", "--bind", "127.0.1.1", "-n", "3");
        usageError("option '--mtu': '1500' is not a path MTU", "perf", "read", "--bind", "127.0.1.1", "-m", "1500");
        usageError("-q/--qp 0", "perf", "read", "--bind", "127.0.1.1", "-q", "0");
        usageError("-q/--qp 16385: must be 1..16384", "perf", "read", "--bind", "127.0.1.1", "-q", "16385");
        usageError("-t/--tx-depth 0: must be 1..15000", "perf", "write", "--bind", "127.0.1.1", "-t", "0");
        usageError("-t/--tx-depth 15001: must be 1..15000", "perf", "write", "--bind", "127.0.1.1", "-t", "15001");
        usageError("-t/--tx-depth is for bandwidth tests", "perf", "send", "--lat", "--bind", "127.0.1.1", "-t", "4");
        usageError("one QP", "perf", "read", "--lat", "--bind", "127.0.1.1", "-q", "2");
        usageError("invalid --warmup 61 s: must be 0..60 seconds", "perf", "send", "--lat", "--bind", "127.0.1.1", "--warmup", "61");
        usageError("--warmup does not apply with -R/--rdma_cm: its connection manager must answer the peer at once, so the test runs without a warm-up",
                "perf", "send", "--lat", "-R", "--bind", "127.0.1.1", "--warmup", "1");
        usageError("-p/--port 0", "perf", "read", "--bind", "127.0.1.1", "-p", "0");
        usageError("our GID table has one entry", "perf", "read", "--bind", "127.0.1.1", "-x", "1");
        usageError("needs --bind", "perf", "write");
        usageError("--timeout", "perf", "write", "--bind", "127.0.1.1", "--timeout", "-1");
        usageError("Unknown option", "perf", "write", "--bind", "127.0.1.1", "--frob");
        usageError("--event-loops: must be 1..64, not 0", "perf", "write", "--bind", "127.0.1.1", "--event-loops", "0");
        usageError("--event-loops: must be 1..64, not 65", "perf", "write", "--bind", "127.0.1.1", "--event-loops", "65");
        usageError("--busy-poll: busy-poll time must be 0..1000000 us, not -5", "perf", "write", "--bind", "127.0.1.1", "--busy-poll", "-5");
        usageError("--agent: must be invoked or dedicated, not 'threaded'", "perf", "write", "--bind", "127.0.1.1", "--agent", "threaded");
        usageError("--socket-buffer: must be 64k..256m (65536..268435456 bytes), not 1000", "perf", "write", "--bind", "127.0.1.1", "--socket-buffer", "1000");
    }

    @Test
    void helpListsTheOptions() {
        Cli.Result h = Cli.run("perf", "--help");
        assertEquals(0, h.exit());
        for (String o : List.of("--lat", "--size", "--iters", "--duration", "--mtu", "--qp", "--tx-depth", "--port", "--gid-index", "--bind", "--json")) {
            assertTrue(h.out().contains(o), o);
        }
    }

    private static Cli.Result[] run(String... common) throws Exception {
        String port = String.valueOf(PORT.getAndIncrement());
        List<String> server = new ArrayList<>(List.of("perf"));
        List<String> client = new ArrayList<>(List.of("perf", common[0], "127.0.1.1"));
        Collections.addAll(server, common);
        client.addAll(List.of(common).subList(1, common.length));
        server.addAll(List.of("--bind", "127.0.1.1", "-p", port, "-x", "0"));
        client.addAll(List.of("--bind", "127.0.1.2", "-p", port));
        Cli.Result[] r = PingpongCommandTest.pair(server, client);
        assertEquals(0, r[0].exit(), "server: " + r[0].out() + r[0].err());
        assertEquals(0, r[1].exit(), "client: " + r[1].out() + r[1].err());
        return r;
    }

    private static void bwTable(Cli.Result r, String title, int size, int iters) {
        List<String> lines = r.outLines();
        assertTrue(lines.contains("                    " + title), r.out());
        int h = lines.indexOf(BW_HEADER);
        assertTrue(h > 0, r.out());
        String row = lines.get(h + 1);
        assertTrue(BW_ROW.matcher(row).matches(), "[" + row + "]");
        assertTrue(row.startsWith(String.format(" %-7d    %-10d", size, iters)), row);
        assertEquals(PerfReport.RESULT_LINE, lines.get(h + 2));
        assertTrue(r.out().contains(" local address: LID 0000 QPN 0x"), r.out());
        assertTrue(r.out().contains(" GID: 00:00:00:00:00:00:00:00:00:00:255:255:127:00:01:0"), r.out());
    }

    /** perftest's -a: a row per size from 2 to 2^23 on the client; the passive server reports the last. */
    @Test
    void allSizes() throws Exception {
        Cli.Result[] r = run("write", "-a", "-n", "5", "-m", "4096");
        List<String> lines = r[1].outLines();
        int h = lines.indexOf(BW_HEADER);
        assertTrue(h > 0, r[1].out());
        for (int e = 1; e <= 23; e++) {
            String row = lines.get(h + e);
            assertTrue(BW_ROW.matcher(row).matches(), "[" + row + "]");
            assertTrue(row.startsWith(String.format(" %-7d    %-10d", 1L << e, 5)), row);
        }
        assertEquals(PerfReport.RESULT_LINE, lines.get(h + 24));
        bwTable(r[0], "RDMA_Write BW Test", 1 << 23, 5);
        usageError("-a/--all applies to write and read bandwidth tests", "perf", "send", "--bind", "127.0.1.1", "-a");
        usageError("-a/--all and -s/--size exclude each other", "perf", "write", "--bind", "127.0.1.1", "-a", "-s", "4k");
    }

    /** What perftest users type first: -d, -i, --report_gbits, -F. */
    @Test
    void perftestFirstOptionsWork() throws Exception {
        Cli.Result[] r = run("write", "-n", "30", "-s", "4096", "--report_gbits", "-F", "-d", "rxe0", "-i", "1");
        for (Cli.Result side : r) {
            List<String> lines = side.outLines();
            int h = lines.indexOf(PerfReport.RESULT_FMT_G);
            assertTrue(h > 0, side.out());
            assertTrue(BW_ROW.matcher(lines.get(h + 1)).matches(), lines.get(h + 1));
        }
        assertTrue(r[1].err().contains("jroce perf: note: -d rxe0 is not opened; jroce runs its own device jroce0 on 127.0.1.2"), r[1].err());
        // Gb/sec are 10^9 bits: 1000 MB/sec (2^20 bytes) is 8.388608 Gb/sec
        var g = PerfReport.inGbits(new io.jroce.cli.conn.PerftestHandshake.BwReport(4096, 30, 500, 1000, 0.25));
        assertEquals(8.388608, g.bwAvg(), 1e-9);
        assertEquals(4.194304, g.bwPeak(), 1e-9);
        assertEquals(0.25, g.msgRate());
        usageError("invalid -i/--ib-port 2: our device has one port, 1", "perf", "write", "--bind", "127.0.1.1", "-i", "2");
    }

    /** perftest's -t sets what each QP keeps posted; more QPs than 256, as perftest allows. */
    @Test
    void txDepthAndManyQps() throws Exception {
        Cli.Result[] r = run("write", "-n", "8", "-s", "4096", "-q", "300", "-t", "4");
        assertTrue(r[1].out().contains(" TX depth        : 4\n"), r[1].out());
        assertTrue(r[1].out().contains(" Number of qps   : 300"), r[1].out());
        bwTable(r[1], "RDMA_Write BW Test", 4096, 8 * 300); // perftest counts the iterations of all QPs
    }

    @Test
    void sendBandwidth() throws Exception {
        Cli.Result[] r = run("send", "-n", "40", "-s", "9000", "-m", "4096");
        bwTable(r[0], "Send BW Test", 9000, 40);
        bwTable(r[1], "Send BW Test", 9000, 40);
        assertTrue(r[0].out().contains("* Waiting for client to connect... *"));
        assertTrue(r[0].out().contains(" RX depth        : 40"), r[0].out());
        assertTrue(r[1].out().contains(" TX depth        : 40"), r[1].out());
    }

    @Test
    void writeBandwidthWithTwoQps() throws Exception {
        Cli.Result[] r = run("write", "-n", "30", "-s", "4096", "-q", "2");
        bwTable(r[1], "RDMA_Write BW Test", 4096, 60);
        // the passive server prints the client's report, received in the report exchange
        bwTable(r[0], "RDMA_Write BW Test", 4096, 60);
        String row = r[1].outLines().get(r[1].outLines().indexOf(BW_HEADER) + 1);
        assertEquals(row, r[0].outLines().get(r[0].outLines().indexOf(BW_HEADER) + 1));
        assertTrue(r[1].out().contains(" RKey 0x"), r[1].out());
        assertEquals(4, r[1].outLines().stream().filter(l -> l.startsWith(" GID: ")).count(), "2 local + 2 remote");
    }

    @Test
    void writeBandwidthWithTwoEventLoops() throws Exception {
        Cli.Result[] r = run("write", "-n", "30", "-s", "4096", "-q", "4", "--event-loops", "2", "--counters");
        bwTable(r[1], "RDMA_Write BW Test", 4096, 120);
        assertTrue(r[1].err().contains(" shard_handoffs="), r[1].err());
        assertTrue(r[1].err().contains(" drop_handoff_overflow=0"), r[1].err());
    }

    @Test
    void readBandwidthAsJson() throws Exception {
        Cli.Result[] r = run("read", "-n", "20", "-s", "8192", "--json");
        Map<String, Object> c = Json.object(r[1].out().strip());
        assertEquals("ib_read_bw", c.get("test"));
        assertEquals("client", c.get("role"));
        assertEquals(20L, ((Number) c.get("iterations")).longValue());
        assertEquals(8192L, ((Number) c.get("size")).longValue());
        assertTrue(((Number) c.get("bw_avg_mb_s")).doubleValue() > 0, r[1].out());
        Map<String, Object> s = Json.object(r[0].out().strip());
        assertEquals("server", s.get("role"));
        assertEquals("peer", s.get("results_from"));
        assertEquals(c.get("bw_avg_mb_s"), s.get("bw_avg_mb_s"));
        assertEquals("5.70", s.get("peer_version"));
    }

    @Test
    void atomicBandwidth() throws Exception {
        Cli.Result[] r = run("atomic", "-n", "20");
        bwTable(r[1], "Atomic BW Test", 8, 20);
    }

    @Test
    void atomicCompareAndSwapPutsCompareSwapOnTheWire(@TempDir Path dir) throws Exception {
        Path pcap = dir.resolve("client.pcap");
        String port = String.valueOf(PORT.getAndIncrement());
        Cli.Result[] r = PingpongCommandTest.pair(
                List.of("perf", "atomic", "-n", "20", "--bind", "127.0.1.1", "-p", port),
                List.of("perf", "atomic", "127.0.1.1", "-n", "20", "-A", "CMP_AND_SWAP", "--json", "--bind", "127.0.1.2", "-p", port,
                        "--pcap", pcap.toString()));
        assertEquals(0, r[0].exit(), "server: " + r[0].out() + r[0].err());
        assertEquals(0, r[1].exit(), "client: " + r[1].out() + r[1].err());
        assertEquals("CMP_AND_SWAP", Json.object(r[1].out().strip()).get("atomic_type"));
        Cli.Result inspect = Cli.run("inspect", "--json", pcap.toString());
        assertEquals(0, inspect.exit(), inspect.out() + inspect.err());
        Map<String, Integer> sent = new TreeMap<>();
        for (String line : inspect.outLines()) {
            Map<String, Object> p = Json.object(line);
            if ("127.0.1.2".equals(p.get("src"))) sent.merge(String.valueOf(p.get("opcode")), 1, Integer::sum);
        }
        assertEquals(Map.of("RC_COMPARE_SWAP", 20), sent, "what the client sent");
    }

    @Test
    void writeBandwidthForADuration() throws Exception {
        Cli.Result[] r = run("write", "-D", "0.5", "-s", "1024", "--json");
        Map<String, Object> c = Json.object(r[1].out().strip());
        assertTrue(((Number) c.get("iterations")).longValue() > 0, r[1].out());
        assertEquals(0.0, ((Number) c.get("bw_peak_mb_s")).doubleValue(), "no peak in duration mode (perftest)");
    }

    @Test
    void aTimedRunCountsOnlyWhatCompletesBetweenItsMargins() throws Exception {
        // perftest's -D: the first and last --margin of the run are left out of its figures; messages complete from the
        // first milliseconds, so the window's count is below the run's whole count
        Cli.Result[] r = run("write", "-q", "2", "-D", "2.5", "-f", "0.5", "-s", "4096", "--json");
        Map<String, Object> c = Json.object(r[1].out().strip());
        long all = 0;
        for (Object n : (List<?>) c.get("qp_iterations")) all += ((Number) n).longValue();
        long counted = ((Number) c.get("iterations")).longValue();
        assertTrue(counted > 0 && counted < all, "counted " + counted + " of " + all + ": " + r[1].out());
        // the rate is over the 1.5 s window: about what 1.5 s of the whole run's rate gives, not what 2.5 s would
        assertTrue(counted > all * 0.4, "counted " + counted + " of " + all);
    }

    @Test
    void aClientWithSeveralQpsReportsEachQpsShare() throws Exception {
        // the progress lines and the JSON give each QP's completed messages, which add up to the run's: how a
        // bottleneck's flows are told apart when one process runs several. --progress 200ms: lines from the start of
        // a run shorter than the default's first line (at 2 s)
        Cli.Result[] r = run("write", "-q", "3", "-D", "1.5", "-s", "4096", "--json", "--progress", "200ms");
        Map<String, Object> c = Json.object(r[1].out().strip());
        List<?> perQp = (List<?>) c.get("qp_iterations");
        assertEquals(3, perQp.size(), r[1].out());
        long sum = 0;
        for (Object n : perQp) {
            assertTrue(((Number) n).longValue() > 0, r[1].out());
            sum += ((Number) n).longValue();
        }
        // iterations: what completed inside -D's sample window (perftest's); the QPs' counts also hold the drain after it
        assertTrue(((Number) c.get("iterations")).longValue() <= sum, r[1].out());
        java.util.regex.Matcher m = Pattern
                .compile("jroce perf: 0\\.\\d{3} s: (\\d+) iterations, .*; per QP: (\\d+) (\\d+) (\\d+)").matcher(r[1].err());
        assertTrue(m.find(), r[1].err());
        assertEquals(Long.parseLong(m.group(1)), Long.parseLong(m.group(2)) + Long.parseLong(m.group(3)) + Long.parseLong(m.group(4)),
                m.group());
        assertFalse(r[0].err().contains("per QP"), "a server has no per-QP completions: " + r[0].err());
    }

    @Test
    void aDurationEndsOnTimeWhateverIsOutstanding() throws Exception {
        // every RoCE packet of the client lost: nothing ever completes, yet -D 1 must end the run about 1 s after it
        // started (plus the short drain grace), not after the 30 s no-completion timeout
        long t0 = System.nanoTime();
        Cli.Result[] r = run("write", "-D", "1", "-s", "65536", "--timeout", "30", "--chaos", "drop=1.0");
        double seconds = (System.nanoTime() - t0) / 1e9;
        assertTrue(r[1].err().contains("still outstanding are not counted"), r[1].err());
        assertTrue(seconds < 15, "the run took " + seconds + " s");
    }

    private static void latTable(Cli.Result r, String title) {
        List<String> lines = r.outLines();
        assertTrue(lines.contains("                    " + title), r.out());
        int h = lines.indexOf(PerfReport.RESULT_FMT_LAT);
        assertTrue(h > 0, r.out());
        assertTrue(LAT_ROW.matcher(lines.get(h + 1)).matches(), "[" + lines.get(h + 1) + "]");
    }

    @Test
    void sendLatency() throws Exception {
        Cli.Result[] r = run("send", "--lat", "-n", "20");
        latTable(r[0], "Send Latency Test");
        latTable(r[1], "Send Latency Test");
        assertTrue(r[1].out().contains(" 2       20   "), r[1].out());
    }

    @Test
    void writeLatency() throws Exception {
        Cli.Result[] r = run("write", "--lat", "-n", "20", "-s", "300");
        latTable(r[0], "RDMA_Write Latency Test");
        latTable(r[1], "RDMA_Write Latency Test");
    }

    @Test
    void readLatencyAsJson() throws Exception {
        Cli.Result[] r = run("read", "--lat", "-n", "20", "--json");
        Map<String, Object> c = Json.object(r[1].out().strip());
        assertEquals("ib_read_lat", c.get("test"));
        assertEquals(20L, ((Number) c.get("iterations")).longValue());
        double min = ((Number) c.get("t_min_us")).doubleValue();
        double typ = ((Number) c.get("t_typical_us")).doubleValue();
        assertTrue(min > 0 && min <= typ, r[1].out());
        assertEquals("none", Json.object(r[0].out().strip()).get("results_from"));
    }

    /** Both sides of a latency test warm the JIT on a private pair first, and the test counts exactly its own messages. */
    @Test
    void latencyTestsWarmUpFirstUnlessTurnedOff() throws Exception {
        // 0.2 s: shorter than the least a warm-up runs when it waits for the JIT to go idle (0.5 s)
        Cli.Result[] r = run("send", "--lat", "-n", "20", "--json", "--warmup", "200ms");
        warmedUpBriefly(r);
        Map<String, Object> c = Json.object(r[1].out().strip());
        assertEquals(20L, ((Number) c.get("iterations")).longValue());

        Cli.Result[] off = run("write", "--lat", "-n", "20", "--json", "--warmup", "0");
        for (Cli.Result side : off) assertFalse(Json.object(side.out().strip()).containsKey("warmup_ops"), side.out());
    }

    /**
     * So do both sides of a bandwidth test, the passive server of a WRITE test too, with the test's own size, QP
     * count, depth and cq_mod (64-byte SENDs on 3 QPs: one completion in every 100 messages).
     */
    @Test
    void bandwidthTestsWarmUpToo() throws Exception {
        for (String verb : List.of("write", "send", "read")) {
            Cli.Result[] r = run(verb, "-n", "50", "-s", "100000", "--json", "--warmup", "200ms");
            warmedUpBriefly(r);
            assertEquals(50L, ((Number) Json.object(r[1].out().strip()).get("iterations")).longValue(), r[1].out());
        }
        Cli.Result[] q3 = run("send", "-n", "300", "-s", "64", "-q", "3", "--json", "--warmup", "200ms");
        warmedUpBriefly(q3);
        Cli.Result[] off = run("write", "-n", "50", "--json", "--warmup", "0");
        for (Cli.Result side : off) assertFalse(Json.object(side.out().strip()).containsKey("warmup_ops"), side.out());
    }

    private static void warmedUpBriefly(Cli.Result[] sides) {
        for (Cli.Result side : sides) {
            Map<String, Object> j = Json.object(side.out().strip());
            long ops = ((Number) j.get("warmup_ops")).longValue();
            long ms = ((Number) j.get("warmup_ms")).longValue();
            assertTrue(ops > 0 && ms < JitWarmUp.MIN_NANOS / 1_000_000, side.out());
        }
    }

    @Test
    void noServerIsAOneLineFailure() {
        // the JIT warm-up runs once the test's QPs are connected: nothing of it before a failed connect
        Cli.Result c = Cli.run("perf", "send", "127.0.1.1", "--bind", "127.0.1.2", "-p", "28559", "--timeout", "0.3");
        assertEquals(1, c.exit(), c.err());
        assertTrue(c.err().startsWith("jroce perf: cannot connect to TCP 127.0.1.1:28559"), c.err());
        assertEquals(1, c.errLines().size(), c.err());
    }
}
