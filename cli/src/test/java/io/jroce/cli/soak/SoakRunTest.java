package io.jroce.cli.soak;

import io.jroce.endpoint.DatagramFilter;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.DeviceConfig;
import io.jroce.endpoint.DeviceCounters;
import io.jroce.endpoint.DropReason;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.fault.FaultInjector;
import io.jroce.wire.Operation;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The soak's machinery, in one JVM with two devices: a short lossy run in which nothing goes wrong reports no
 * failure and passes; a byte changed on its way (with a correct ICRC, so the transport accepts it) in an RDMA
 * WRITE at the server or in an RDMA READ response at the client is reported as exactly one verification failure,
 * and the run fails. The fault injector's seeds are fixed and printed, so a run can be replayed.
 */
@Timeout(120)
class SoakRunTest {
    /** 1 % loss and 1 % reordering of every datagram that leaves a device, as bench/soak.sh runs it. */
    private static final String LOSSY = "out.drop=0.01,out.reorder=0.01";
    /** 1 % loss and reordering both ways, all on one device (the other device carries a test filter). */
    private static final String LOSSY_BOTH_WAYS = "drop=0.01,reorder=0.01";

    private record Outcome(int clientExit, String clientOut, String clientErr, int serverExit, String serverOut, String serverErr,
                           DeviceCounters client, DeviceCounters server) {
        String all() {
            return "client exit " + clientExit + "\n" + clientOut + clientErr + "\nserver exit " + serverExit + "\n" + serverOut + serverErr;
        }
    }

    @Test
    void aCleanLossyRunVerifiesEveryOperationAndPasses() throws Exception {
        FaultInjector chaosServer = FaultInjector.parse(LOSSY + ",seed=11");
        FaultInjector chaosClient = FaultInjector.parse(LOSSY + ",seed=12");
        Outcome o = run("127.0.64.11", "127.0.64.12", 46410, chaosServer, chaosClient, 4);
        System.out.println("SoakRunTest clean run, chaos seeds 11 (server), 12 (client):\n" + o.all());
        assertEquals(0, o.clientExit(), o.all());
        assertEquals(0, o.serverExit(), o.all());
        assertTrue(o.clientOut().contains("jroce soak: PASS after "), o.all());
        assertTrue(o.clientOut().contains("; failures 0; QPs in error 0;"), o.all());
        assertTrue(o.clientOut().contains("memory not judged"), o.all());
        assertEquals("", o.clientErr() + o.serverErr(), "no failure printed");
        // four rows, and traffic of every kind was verified
        assertEquals(4, o.clientOut().lines().filter(l -> l.matches("\\s+[1-4] .*")).count(), o.all());
        SummaryCounts c = SummaryCounts.of(o.clientOut());
        assertTrue(c.send > 0 && c.write > 0 && c.read > 0 && c.atomic > 0, o.all());
        assertEquals(c.rounds, c.write, "one WRITE verified per completed round");
        assertEquals(2 * c.rounds, c.send, "a SEND each way per round");
        // the loss happened and was repaired
        assertTrue(dropped(chaosServer) > 0 && dropped(chaosClient) > 0, chaosServer.counters() + " " + chaosClient.counters());
        assertTrue(o.client().retransmits + o.server().retransmits > 0, o.all());
    }

    @Test
    void aByteCorruptedInAWriteIsReportedByTheServer() throws Exception {
        InetAddress server = InetAddress.getByName("127.0.64.13");
        PayloadCorruptor corruptor = new PayloadCorruptor(Operation.RDMA_WRITE, server);
        Outcome o = run("127.0.64.13", "127.0.64.14", 46411, corruptor, FaultInjector.parse(LOSSY_BOTH_WAYS + ",seed=13"), 3);
        System.out.println("SoakRunTest corrupted WRITE, chaos seed 13 (client):\n" + o.all());
        assertTrue(corruptor.corrupted.get() >= 1, "a packet was corrupted");
        assertEquals(0, o.server().drops(DropReason.ICRC), "the changed packets carried a correct ICRC");
        assertEquals(1, o.serverErr().lines().filter(l -> l.contains("server: VERIFICATION FAILED on QP") && l.contains("WRITE of round"))
                .count(), o.all());
        assertTrue(o.clientOut().contains("jroce soak: FAIL after "), o.all());
        assertTrue(o.clientOut().contains("; failures 1; "), o.all());
        assertTrue(o.clientOut().contains("jroce soak: problem: 1 verification failures"), o.all());
        assertEquals(1, o.clientExit(), o.all());
        assertEquals(1, o.serverExit(), o.all());
    }

    @Test
    void aByteCorruptedInAReadResponseIsReportedByTheClient() throws Exception {
        InetAddress client = InetAddress.getByName("127.0.64.16");
        PayloadCorruptor corruptor = new PayloadCorruptor(Operation.RDMA_READ_RESPONSE, client);
        Outcome o = run("127.0.64.15", "127.0.64.16", 46412, FaultInjector.parse(LOSSY_BOTH_WAYS + ",seed=15"), corruptor, 3);
        System.out.println("SoakRunTest corrupted READ response, chaos seed 15 (server):\n" + o.all());
        assertTrue(corruptor.corrupted.get() >= 1, "a packet was corrupted");
        assertEquals(0, o.client().drops(DropReason.ICRC), "the changed packets carried a correct ICRC");
        assertEquals(1, o.clientErr().lines().filter(l -> l.contains("client: VERIFICATION FAILED on QP") && l.contains("READ of round"))
                .count(), o.all());
        assertTrue(o.clientOut().contains("; failures 1; "), o.all());
        assertEquals(1, o.clientExit(), o.all());
        assertEquals(0, o.serverExit(), "the server itself found nothing wrong\n" + o.all());
    }

    // ------------------------------------------------------------------------------------------ helpers

    /** A soak of {@code seconds} seconds, 8 QPs, a row per second, server and client each with its filter. */
    private static Outcome run(String serverAddr, String clientAddr, int port, DatagramFilter serverFilter, DatagramFilter clientFilter,
                               int seconds) throws Exception {
        InetAddress sa = InetAddress.getByName(serverAddr);
        InetAddress ca = InetAddress.getByName(clientAddr);
        SoakRun.Settings server = new SoakRun.Settings(null, port, 8, null, null, 16 << 10, 2, 0, 0, 10, 18, Duration.ofSeconds(30),
                Duration.ofSeconds(30), Mtu.MTU_1024);
        SoakRun.Settings client = new SoakRun.Settings(sa, port, 8, Duration.ofSeconds(seconds), Duration.ofSeconds(1), 16 << 10, 2, 42, 0,
                10, 18, Duration.ofSeconds(30), null, Mtu.MTU_1024);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (Device sd = Device.open(new DeviceConfig(sa).filter(serverFilter).tailProbeMicros(1000));
             Device cd = Device.open(new DeviceConfig(ca).filter(clientFilter).tailProbeMicros(1000))) {
            StringWriter sOut = new StringWriter();
            StringWriter sErr = new StringWriter();
            Future<Integer> s = pool.submit(() -> SoakRun.server(sd, sa, server, new PrintWriter(sOut, true), new PrintWriter(sErr, true)));
            StringWriter cOut = new StringWriter();
            StringWriter cErr = new StringWriter();
            int c = SoakRun.client(cd, client, new PrintWriter(cOut, true), new PrintWriter(cErr, true));
            int se = s.get(60, TimeUnit.SECONDS);
            return new Outcome(c, cOut.toString(), cErr.toString(), se, sOut.toString(), sErr.toString(), cd.counters(), sd.counters());
        } finally {
            pool.shutdownNow();
        }
    }

    private static long dropped(FaultInjector f) {
        return f.counters().getOrDefault("out.dropped", 0L);
    }

    /** The counts of the client's summary line. */
    private record SummaryCounts(long rounds, long send, long write, long read, long atomic) {
        static SummaryCounts of(String out) {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile(
                    ": (\\d+) rounds on \\d+ QPs; SEND (\\d+) \\([^)]*\\), WRITE (\\d+) \\([^)]*\\), READ (\\d+) \\([^)]*\\), ATOMIC (\\d+);")
                    .matcher(out);
            if (!m.find()) throw new AssertionError("no summary line in\n" + out);
            return new SummaryCounts(Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), Long.parseLong(m.group(3)),
                    Long.parseLong(m.group(4)), Long.parseLong(m.group(5)));
        }
    }
}
