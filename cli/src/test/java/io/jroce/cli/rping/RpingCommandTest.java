package io.jroce.cli.rping;

import io.jroce.cli.Cli;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code jroce rping} server and client, jroce to jroce, over an in-memory QP 1 network. */
class RpingCommandTest {
    private static final AtomicInteger PORT = new AtomicInteger(27174);

    @Test
    void badArgumentsAreOneLineUsageErrors() {
        usage("exactly one of -s", "rping", "-a", "127.77.53.21");
        usage("exactly one of -s", "rping", "-s", "-c", "-a", "127.77.53.21");
        usage("Invalid size 25 (valid range is 26 to 65535)", "rping", "-s", "-a", "127.77.53.21", "-S", "25");
        usage("Invalid size 65536", "rping", "-c", "-a", "127.77.53.21", "-S", "65536");
        usage("Invalid size 65536", "rping", "-c", "-a", "127.77.53.21", "-S", "64k"); // sizes take k, m, g as everywhere
        usage("Invalid count -1", "rping", "-c", "-a", "127.77.53.21", "-C", "-1");
        usage("a client needs -a", "rping", "-c");
        usage("a server needs -a", "rping", "-s");
        usage("invalid -p 0", "rping", "-s", "-a", "127.77.53.21", "-p", "0");
        usage("'x'", "rping", "-s", "-a", "127.77.53.21", "-C", "x");
        usage("Unknown option", "rping", "-s", "-a", "127.77.53.21", "-q");
        usage("invalid --jroce-extensions sack", "rping", "-s", "-a", "127.77.53.21", "--jroce-extensions", "sack");
    }

    @ParameterizedTest
    @ValueSource(ints = {64, 4096})
    void serverAndClientPingAndVerify(int size) throws Exception {
        try (MemoryCm cm = MemoryCm.install()) {
            String port = String.valueOf(PORT.getAndIncrement());
            String s = String.valueOf(size);
            CompletableFuture<Cli.Result> server = CompletableFuture.supplyAsync(() -> Cli.run("rping", "-s", "-a", "127.77.53.21", "-p", port, "-S", s, "-v", "--timeout", "30"));
            Cli.Result client = connect("rping", "-c", "-a", "127.77.53.21", "--bind", "127.77.53.22", "-p", port, "-S", s, "-C", "10", "-V", "-v");
            Cli.Result sr = server.get(60, TimeUnit.SECONDS);
            assertEquals(0, client.exit(), client.out() + client.err());
            assertEquals(0, sr.exit(), sr.out() + sr.err());
            List<String> lines = client.outLines();
            assertEquals(10, lines.size(), client.out());
            assertEquals("ping data: " + RpingSessionTest.expected(0, 65, size), lines.get(0));
            assertEquals("ping data: " + RpingSessionTest.expected(9, 74, size), lines.get(9));
            assertEquals(10, sr.outLines().size(), sr.out());
            assertEquals("server ping data: " + RpingSessionTest.expected(3, 68, size), sr.outLines().get(3));
            assertTrue(sr.err().contains("server DISCONNECT EVENT..."), sr.err());
        }
    }

    @Test
    void twoJroceRpingsAgreeOnTheExtensionsBothName() throws Exception {
        try (MemoryCm cm = MemoryCm.install()) {
            String port = String.valueOf(PORT.getAndIncrement());
            CompletableFuture<Cli.Result> server = CompletableFuture.supplyAsync(() -> Cli.run("rping", "-s", "-a", "127.77.53.25", "-p", port,
                    "--jroce-extensions", "sr", "--timeout", "30"));
            Cli.Result client = connect("rping", "-c", "-a", "127.77.53.25", "--bind", "127.77.53.26", "-p", port, "-C", "5", "-V",
                    "--jroce-extensions", "all");
            Cli.Result sr = server.get(60, TimeUnit.SECONDS);
            assertEquals(0, client.exit(), client.out() + client.err());
            assertEquals(0, sr.exit(), sr.out() + sr.err());
            assertEquals(List.of("jroce extensions: selective-repeat"), client.outLines(), client.out());
            assertEquals(List.of("jroce extensions: selective-repeat"), sr.outLines(), sr.out());
        }
    }

    @Test
    void overTheDevicesQp1() throws Exception {
        CompletableFuture<Cli.Result> server = CompletableFuture.supplyAsync(() -> Cli.run("rping", "-s", "-a", "127.77.53.41", "-p", "27300", "-S", "4096", "--timeout", "30"));
        Cli.Result client = connect("rping", "-c", "-a", "127.77.53.41", "--bind", "127.77.53.42", "-p", "27300", "-S", "4096", "-C", "10", "-V");
        Cli.Result sr = server.get(60, TimeUnit.SECONDS);
        assertEquals(0, client.exit(), client.out() + client.err());
        assertEquals(0, sr.exit(), sr.out() + sr.err());
    }

    @Test
    void aClientNobodyListensToIsRejectedAndFails() {
        try (MemoryCm cm = MemoryCm.install()) {
            // a device at the server address that has a CM but no listener on the port
            CompletableFuture<Cli.Result> other = CompletableFuture.supplyAsync(() -> Cli.run("rping", "-s", "-a", "127.77.53.23", "-p", "27999", "--timeout", "60"));
            // until the other device is up the REQ goes nowhere; the CM resends it, and then the REJ comes
            Cli.Result r = Cli.run("rping", "-c", "-a", "127.77.53.23", "--bind", "127.77.53.24", "-p", "27998", "-C", "1", "--timeout", "50");
            assertEquals(1, r.exit(), r.out() + r.err());
            assertTrue(r.err().contains("cma event RDMA_CM_EVENT_REJECTED, error 8"), r.err());
            assertEquals(0, connect("rping", "-c", "-a", "127.77.53.23", "--bind", "127.77.53.24", "-p", "27999", "-C", "1").exit());
            assertEquals(0, other.join().exit());
        }
    }

    /** The client, again while the server is not listening yet (REJ 8): the test does not know when it starts listening. */
    private static Cli.Result connect(String... args) {
        Cli.Result r = null;
        for (int i = 0; i < 200; i++) {
            r = Cli.run(args);
            if (r.exit() != 1 || !r.err().contains("error 8")) return r;
        }
        return r;
    }

    private static void usage(String expect, String... args) {
        Cli.Result r = Cli.run(args);
        assertEquals(2, r.exit(), r.err());
        assertEquals(1, r.errLines().size(), r.err());
        assertTrue(r.err().contains(expect), r.err());
    }
}
