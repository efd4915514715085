package io.jroce.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two real {@code jroce} processes from the built jar, each with its own loopback address, doing what a
 * user does: pingpong, perf (send/write/read, bandwidth and latency) and the demo; then the captures are
 * checked with {@code jroce inspect}. No in-JVM shortcuts.
 */
class ProcessesIT {
    private static final String SERVER = "127.0.10.1";
    private static final String CLIENT = "127.0.10.2";
    private static final AtomicInteger PORT = new AtomicInteger(29515);

    @TempDir
    Path work;

    @Test
    void pingpongBetweenTwoProcesses() throws Exception {
        String port = String.valueOf(PORT.getAndIncrement());
        try (Jroce.Run server = Jroce.start(work, "pingpong", "--bind", SERVER, "-p", port, "-n", "200", "-s", "1024", "--pcap", "server.pcap");
             Jroce.Run client = Jroce.start(work, "pingpong", SERVER, "--bind", CLIENT, "-p", port, "-n", "200", "-s", "1024")) {
            assertEquals(0, client.await(90), client.describe());
            assertEquals(0, server.await(30), server.describe());
            for (Jroce.Run r : new Jroce.Run[] {server, client}) {
                assertTrue(r.out().matches("(?s).*409600 bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec.*"), r.describe());
                assertTrue(r.out().matches("(?s).*200 iters in [0-9.]+ seconds = [0-9.]+ usec/iter.*"), r.describe());
            }
        }
        Jroce.Run inspect = Jroce.start(work, "inspect", work.resolve("server.pcap").toString());
        assertEquals(0, inspect.await(60), inspect.describe());
        assertTrue(inspect.out().contains("0 malformed, 0 bad ICRC"), inspect.describe());
        assertTrue(inspect.out().contains("RC_SEND_ONLY"), inspect.describe());
    }

    @ParameterizedTest(name = "perf {0} {1}")
    @CsvSource({"send, bw", "write, bw", "read, bw", "send, lat", "write, lat", "read, lat"})
    void perfBetweenTwoProcesses(String verb, String mode) throws Exception {
        String port = String.valueOf(PORT.getAndIncrement());
        String[] extra = mode.equals("lat") ? new String[] {"--lat", "-n", "300"} : new String[] {"-n", "300", "-s", "16384"};
        try (Jroce.Run server = Jroce.start(work, concat(new String[] {"perf", verb, "--bind", SERVER, "-p", port}, extra));
             Jroce.Run client = Jroce.start(work, concat(new String[] {"perf", verb, SERVER, "--bind", CLIENT, "-p", port, "--json"}, extra))) {
            assertEquals(0, client.await(120), client.describe());
            assertEquals(0, server.await(30), server.describe());
            // perftest's bandwidth servers print the report they receive; READ/atomic latency servers sit out
            if (mode.equals("bw")) assertTrue(server.out().contains("BW average"), server.describe());
            assertTrue(client.out().strip().startsWith("{") && client.out().strip().endsWith("}"), client.describe());
        }
    }

    @Test
    void demoRunsTwoNodeProcessesAndLeavesTheirCaptures() throws Exception {
        Path captures = Files.createDirectory(work.resolve("captures"));
        Jroce.Run demo = Jroce.start(work, "demo", "--node-a", SERVER, "--node-b", CLIENT,
                "--port", String.valueOf(PORT.getAndIncrement()), "--pcap", captures.toString());
        assertEquals(0, demo.await(180), demo.describe());
        assertTrue(demo.out().contains("both sessions met every expectation"), demo.describe());
        try (var files = Files.list(captures)) {
            for (Path pcap : files.toList()) {
                Jroce.Run inspect = Jroce.start(work, "inspect", pcap.toString());
                assertEquals(0, inspect.await(60), inspect.describe());
                assertTrue(inspect.out().contains("0 malformed, 0 bad ICRC"), inspect.describe());
            }
        }
    }

    @Test
    void badArgumentsGiveOneLineAndExitTwo() throws Exception {
        Jroce.Run r = Jroce.start(work, "perf", "write", "--mtu", "1000", "--bind", SERVER);
        assertEquals(2, r.await(30), r.describe());
        assertEquals(1, r.err().strip().lines().count(), r.describe());
        assertTrue(r.out().isEmpty(), r.describe());
    }

    private static String[] concat(String[] a, String[] b) {
        String[] c = new String[a.length + b.length];
        System.arraycopy(a, 0, c, 0, a.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }
}
