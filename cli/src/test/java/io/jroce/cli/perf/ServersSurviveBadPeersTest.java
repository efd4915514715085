package io.jroce.cli.perf;

import io.jroce.cli.BadPeers;
import io.jroce.cli.Cli;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A {@code pingpong} or {@code perf} server is not ended by a TCP peer that sends garbage or nothing: it drops
 * that connection (one WARN line) and serves the real client that comes next, until its own --timeout.
 */
class ServersSurviveBadPeersTest {
    private static final AtomicInteger PORT = new AtomicInteger(28660);
    private static final String SERVER = "127.0.1.1";

    /** The servers this test started: each ends by its own --timeout at the latest. */
    private final List<CompletableFuture<Cli.Result>> started = new ArrayList<>();

    private CompletableFuture<Cli.Result> server(String... args) {
        CompletableFuture<Cli.Result> f = CompletableFuture.supplyAsync(() -> Cli.run(args), PingpongCommandTest.OWN_THREAD);
        started.add(f);
        return f;
    }

    /**
     * A test that failed before it awaited its server leaves that server running, holding UDP 4791 on the
     * address every test here shares: the next test's server would fail to open its device. Each waits here.
     */
    @AfterEach
    void serversEnded() throws Exception {
        for (CompletableFuture<Cli.Result> f : started) f.get(60, TimeUnit.SECONDS);
    }

    private static Cli.Result await(CompletableFuture<Cli.Result> f) throws Exception {
        return f.get(60, TimeUnit.SECONDS);
    }

    private static void assertOk(Cli.Result r, String who) {
        assertEquals(0, r.exit(), who + ": " + r.out() + r.err());
    }

    @Test
    void pingpongServerDropsAGarbagePeerAndServesTheRealClient() throws Exception {
        String port = String.valueOf(PORT.getAndIncrement());
        try (BadPeers.ListenerLog log = new BadPeers.ListenerLog()) {
            var s = server("pingpong", "--bind", SERVER, "-p", port, "-n", "5", "-s", "64", "--timeout", "30");
            BadPeers.garbage(SERVER, Integer.parseInt(port));
            Cli.Result c = Cli.run("pingpong", SERVER, "--bind", "127.0.1.2", "-p", port, "-n", "5", "-s", "64");
            assertOk(await(s), "server");
            assertOk(c, "client");
            List<String> lines = log.lines();
            assertEquals(1, lines.size(), lines.toString());
            assertTrue(lines.get(0).contains("which did not open the ibv_rc_pingpong exchange") && lines.get(0).contains("malformed ibv_rc_pingpong address"),
                    lines.get(0));
        }
    }

    /** The silent peer is never dropped as bad: the real client was served while it still waited. */
    @Test
    void pingpongServerServesTheRealClientWhileASilentPeerHangsOn() throws Exception {
        String port = String.valueOf(PORT.getAndIncrement());
        try (BadPeers.ListenerLog log = new BadPeers.ListenerLog()) {
            var s = server("pingpong", "--bind", SERVER, "-p", port, "-n", "5", "-s", "64", "--timeout", "30");
            try (Socket silent = BadPeers.connect(SERVER, Integer.parseInt(port))) {
                Cli.Result c = Cli.run("pingpong", SERVER, "--bind", "127.0.1.2", "-p", port, "-n", "5", "-s", "64");
                assertOk(await(s), "server");
                assertOk(c, "client");
                BadPeers.awaitClosed(silent);
            }
            assertEquals(List.of(), log.lines());
        }
    }

    @Test
    void pingpongServerWithOnlyGarbageFailsNamingTheDroppedPeers() throws Exception {
        String port = String.valueOf(PORT.getAndIncrement());
        var s = server("pingpong", "--bind", SERVER, "-p", port, "--timeout", "2");
        BadPeers.garbage(SERVER, Integer.parseInt(port));
        Cli.Result r = await(s);
        assertEquals(1, r.exit(), r.out() + r.err());
        assertTrue(r.err().contains("no client connected to TCP 127.0.1.1:" + port + " within 2 s; dropped 1 connection that did not open "
                + "the ibv_rc_pingpong exchange"), r.err());
    }

    @Test
    void perfServerDropsGarbageAndASilentPeerAndServesTheRealClient() throws Exception {
        String port = String.valueOf(PORT.getAndIncrement());
        try (BadPeers.ListenerLog log = new BadPeers.ListenerLog()) {
            var s = server("perf", "write", "--bind", SERVER, "-p", port, "-x", "0", "--timeout", "30");
            BadPeers.garbage(SERVER, Integer.parseInt(port));
            try (Socket silent = BadPeers.connect(SERVER, Integer.parseInt(port))) {
                Cli.Result c = Cli.run("perf", "write", SERVER, "--bind", "127.0.1.2", "-p", port, "-n", "20", "-s", "4096");
                assertOk(await(s), "server");
                assertOk(c, "client");
                BadPeers.awaitClosed(silent);
            }
            List<String> lines = log.lines();
            assertEquals(1, lines.size(), "the garbage peer only: " + lines);
            assertTrue(lines.get(0).contains("which did not open the perftest exchange") && lines.get(0).contains("where the 16-byte perftest version belongs"),
                    lines.get(0));
        }
    }
}
