package io.jroce.cli.perf;

import io.jroce.cli.Cli;
import io.jroce.cli.conn.PerftestHandshake;
import io.jroce.cli.rping.MemoryCm;
import io.jroce.cli.conn.PerftestHandshake.Keys;
import io.jroce.cli.conn.PerftestHandshake.Test;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.Gid;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.RcConnect;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Exchanger;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * perf -R's exchange over a QP, jroce to jroce, with a stand-in for the connection manager that connects the QPs
 * of two in-process runs with {@link RcConnect} (the CM itself is tested with the command).
 */
class PerfRdmaCmTest {
    private static final InetAddress A = ip("127.77.53.11");
    private static final InetAddress B = ip("127.77.53.12");

    @ParameterizedTest
    @EnumSource(value = Test.class, names = {"WRITE_BW", "READ_BW", "SEND_BW", "SEND_LAT", "WRITE_LAT", "READ_LAT", "ATOMIC_BW"})
    void runsEveryTestOverTheExchangeQp(Test test) throws Exception {
        Exchanger<List<QueuePair>> ex = new Exchanger<>();
        long size = test == Test.ATOMIC_BW ? 8 : 4096;
        int qps = test.isLatency() ? 1 : 2;
        StringWriter sOut = new StringWriter();
        StringWriter cOut = new StringWriter();
        StringWriter sErr = new StringWriter();
        StringWriter cErr = new StringWriter();
        try (Device a = Device.open(A); Device b = Device.open(B)) {
            PerfRun.Settings server = settings(test, null, A, size, qps, new Paired(ex));
            PerfRun.Settings client = settings(test, A, B, size, qps, new Paired(ex));
            CompletableFuture<Integer> srv = CompletableFuture.supplyAsync(() -> run(server, a, sOut, sErr));
            int rc = run(client, b, cOut, cErr);
            assertEquals(0, rc, cOut + "\n" + cErr);
            assertEquals(0, srv.get(30, TimeUnit.SECONDS), sOut + "\n" + sErr);
        }
        assertTrue(cOut.toString().contains(" rdma_cm QPs\t : ON"), cOut.toString());
        assertTrue(cOut.toString().contains(" Data ex. method : rdma_cm"), cOut.toString());
        assertTrue(cOut.toString().contains(test.isLatency() ? "t_avg" : "BW average"), cOut.toString());
    }

    @ParameterizedTest
    @EnumSource(value = Test.class, names = {"WRITE_BW", "READ_BW", "SEND_LAT"})
    void theCommandConnectsThroughTheConnectionManager(Test test) throws Exception {
        String verb = test.tool().replace("ib_", "").replaceAll("_.*", "");
        try (MemoryCm cm = MemoryCm.install()) {
            List<String> common = new ArrayList<>(List.of("perf", verb, "-R", "-p", "29" + (100 + test.ordinal()), "-s", "4096", "-n", "100"));
            if (test.isLatency()) common.add("--lat");
            List<String> server = new ArrayList<>(common);
            server.addAll(List.of("--bind", "127.77.53.31", "--timeout", "30"));
            List<String> client = new ArrayList<>(common);
            client.addAll(List.of("127.77.53.31", "--bind", "127.77.53.32"));
            Run r = run(server, client, null, null);
            Cli.Result c = r.client();
            Cli.Result sr = r.server();
            assertEquals(0, c.exit(), c.out() + c.err() + "\nserver: " + sr.err());
            assertEquals(0, sr.exit(), sr.out() + sr.err());
            assertTrue(c.out().contains(" Data ex. method : rdma_cm"), c.out());
        }
    }

    /**
     * --jroce-extensions with -R is negotiated in the CM's private data: what the client offers and the server allows
     * is in force on both sides' QPs; a server without the option agrees on nothing, and the run is plain Go-Back-N.
     */
    @ParameterizedTest
    @CsvSource({"all,sr,29181,selective-repeat", "none,all,29182,none", "cc,all,29183,congestion-control"})
    void extensionsAreNegotiatedInThePrivateData(String serverExt, String clientExt, int port, String agreed) throws Exception {
        try (MemoryCm cm = MemoryCm.install()) {
            List<String> common = List.of("perf", "write", "-R", "-p", Integer.toString(port), "-q", "2", "-s", "4096", "-n", "100");
            List<String> server = new ArrayList<>(common);
            server.addAll(List.of("--bind", "127.77.53.61", "--timeout", "30", "--jroce-extensions", serverExt));
            List<String> client = new ArrayList<>(common);
            client.addAll(List.of("127.77.53.61", "--bind", "127.77.53.62", "--timeout", "30", "--jroce-extensions", clientExt));
            Run r = run(server, client, cm, ip("127.77.53.61"));
            Cli.Result c = r.client();
            Cli.Result sr = r.server();
            assertEquals(0, c.exit(), c.out() + c.err() + "\nserver: " + sr.err());
            assertEquals(0, sr.exit(), sr.out() + sr.err());
            assertTrue(c.out().contains(" jroce extensions: " + agreed + "\n"), c.out());
            if (!serverExt.equals("none")) assertTrue(sr.out().contains(" jroce extensions: " + agreed + "\n"), sr.out());
            else assertTrue(!sr.out().contains("jroce extensions"), sr.out());
        }
    }

    /**
     * -q 2 and -q 4 jroce to jroce, ten runs each: one exchange connection and one rdma_cm connection per test QP,
     * all to port -p (perftest's rdma_server_connect on one listen id; the client retries REJ 8 until the server
     * listens again). Over the in-memory QP 1 network.
     */
    @ParameterizedTest
    @CsvSource({"WRITE_BW,2", "READ_BW,2", "WRITE_BW,4", "READ_BW,4"})
    void severalQpsOverTheInMemoryConnectionManager(Test test, int qps) throws Exception {
        rounds(test, qps, true, "127.77.53.41", "127.77.53.42", 29200 + 10 * test.ordinal() + qps);
    }

    /** The same over real UDP devices: MADs over the devices' QP 1, on loopback. */
    @ParameterizedTest
    @CsvSource({"WRITE_BW,2", "READ_BW,2", "WRITE_BW,4", "READ_BW,4"})
    void severalQpsOverUdp(Test test, int qps) throws Exception {
        rounds(test, qps, false, "127.77.53.51", "127.77.53.52", 29300 + 10 * test.ordinal() + qps);
    }

    /** The client's result, the server's, and how many times the client ran. */
    private record Run(Cli.Result client, Cli.Result server, int tries) {
    }

    /**
     * Starts the server in the background and runs the client until the server listens (REJ 8 before that), at most
     * 200 times. With {@code srvAddr} set, first waits for the server to come up: a REQ sent before its agent is up is
     * lost and resent only after 6 s. So it waits for the agent ({@code cm}, in memory) or for the server's UDP socket.
     */
    private static Run run(List<String> server, List<String> client, MemoryCm cm, InetAddress srvAddr) throws Exception {
        CompletableFuture<Cli.Result> srv = CompletableFuture.supplyAsync(() -> Cli.run(server.toArray(String[]::new)));
        if (srvAddr != null) {
            assertTrue(cm != null ? cm.awaitAgent(srvAddr, Duration.ofSeconds(30)) : UdpSockets.awaitBound(srvAddr, 4791, Duration.ofSeconds(30)),
                    "the server came up");
        }
        Cli.Result c = null;
        int tries = 0;
        while (tries++ < 200) {
            c = Cli.run(client.toArray(String[]::new));
            if (c.exit() != 1 || !c.err().contains("error 8") || c.err().contains("test QP")) break;
        }
        return new Run(c, srv.get(60, TimeUnit.SECONDS), tries);
    }

    private static void rounds(Test test, int qps, boolean memory, String srvAddr, String cliAddr, int port) throws Exception {
        String verb = test.tool().replace("ib_", "").replaceAll("_.*", "");
        List<String> common = List.of("perf", verb, "-R", "-p", Integer.toString(port), "-q", Integer.toString(qps), "-s", "4096", "-n", "200");
        List<String> server = new ArrayList<>(common);
        server.addAll(List.of("--bind", srvAddr, "--timeout", "30"));
        List<String> client = new ArrayList<>(common);
        client.addAll(List.of(srvAddr, "--bind", cliAddr, "--timeout", "30"));
        long[] ms = new long[10];
        for (int round = 0; round < ms.length; round++) {
            long t0 = System.nanoTime();
            try (MemoryCm cm = memory ? MemoryCm.install() : null) {
                Run r = run(server, client, cm, ip(srvAddr));
                Cli.Result c = r.client();
                Cli.Result sr = r.server();
                int tries = r.tries();
                assertEquals(0, c.exit(), "round " + round + ": " + c.out() + c.err() + "\nserver: " + sr.out() + sr.err());
                assertEquals(0, sr.exit(), "round " + round + ": " + sr.out() + sr.err());
                assertTrue(c.out().contains(" Data ex. method : rdma_cm"), c.out());
                assertTrue(c.out().contains("BW average"), c.out());
                ms[round] = (System.nanoTime() - t0) / 1_000_000;
                System.out.printf("perf -R %s -q %d over %s, round %d: %d ms, %d client run(s)%n", verb, qps, memory ? "memory" : "UDP",
                        round, ms[round], tries);
            }
        }
        System.out.printf("perf -R %s -q %d over %s: 10 rounds, ms %s%n", verb, qps, memory ? "memory" : "UDP", java.util.Arrays.toString(ms));
    }

    @org.junit.jupiter.api.Test
    void binaryKeysAreTheBigEndianStruct() throws IOException {
        byte[] gid = new byte[16];
        gid[10] = (byte) 0xff;
        gid[11] = (byte) 0xff;
        gid[15] = 7;
        Keys k = new Keys(0, 16, 0x123456, 0xabcdef, 0x11223344, 0x0102030405060708L, Gid.of(gid), 0);
        byte[] m = PerftestHandshake.encodeBinaryKeys(k);
        assertEquals(56, m.length);
        assertArrayEquals(new byte[] {0, 0, 0, 0, 0, 0, 0, 16, 0, 0x12, 0x34, 0x56, 0, (byte) 0xab, (byte) 0xcd, (byte) 0xef,
                0x11, 0x22, 0x33, 0x44, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}, java.util.Arrays.copyOf(m, 32));
        assertEquals(7, m[47]);
        assertEquals(k, PerftestHandshake.decodeBinaryKeys(m));
    }

    private static PerfRun.Settings settings(Test test, InetAddress host, InetAddress local, long size, int qps, PerfCm cm) {
        return new PerfRun.Settings(test, host, local, 18515, size, test.isLatency() ? 100 : 200, null, Mtu.MTU_1024, qps,
                Duration.ofSeconds(20), false, 14, PerfRun.AtomicType.FETCH_AND_ADD, cm);
    }

    private static int run(PerfRun.Settings s, Device dev, StringWriter out, StringWriter err) {
        try {
            return PerfRun.of(s, dev, new PrintWriter(out, true), new PrintWriter(err, true)).run();
        } catch (IOException | InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    /** Both runs hand their QPs over and each connects its own to the other's (PSN 0 both ways). */
    private static final class Paired implements PerfCm {
        private final Exchanger<List<QueuePair>> ex;

        Paired(Exchanger<List<QueuePair>> ex) {
            this.ex = ex;
        }

        @Override
        public void connectExchange(QueuePair qp, int outReads) throws IOException {
            connect(List.of(qp), outReads);
        }

        @Override
        public void connectTests(List<QueuePair> qps, int outReads) throws IOException {
            connect(qps, outReads);
        }

        private void connect(List<QueuePair> mine, int outReads) throws IOException {
            try {
                List<QueuePair> theirs = ex.exchange(new ArrayList<>(mine), 10, TimeUnit.SECONDS);
                RcConnect.Params p = RcConnect.Params.defaults().rdAtomic(Math.max(1, outReads));
                for (int i = 0; i < mine.size(); i++) RcConnect.connect(mine.get(i), RcConnect.Peer.of(theirs.get(i), 0), 0, p);
                ex.exchange(List.of(), 10, TimeUnit.SECONDS); // both connected before either sends
            } catch (InterruptedException | TimeoutException e) {
                throw new IOException(e);
            }
        }

        @Override
        public void finish() {
        }

        @Override
        public void close() {
        }
    }

    private static InetAddress ip(String s) {
        try {
            return InetAddress.getByName(s);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
