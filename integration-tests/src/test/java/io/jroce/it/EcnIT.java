package io.jroce.it;

import io.jroce.wire.pcap.CaptureReader;
import io.jroce.wire.pcap.PcapFrame;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@code --ecn} on the wire: two jroce perf processes in a network namespace of their own, the client with
 * {@code --ecn}, the server without, while tcpdump captures the loopback. Every datagram the client sent carries
 * ECT(0) in its IPv4 header (the kernel writes what the socket asks), every datagram of the server Not-ECT, and the
 * server checked every ICRC without a drop (the ICRC masks the ECN field). Needs root, ip and tcpdump: skipped with a
 * message without them, a failure in CI (CI set).
 */
class EcnIT {
    private static final String NS = "jroce-ecn";
    private static final String SERVER = "127.0.71.1";
    private static final String CLIENT = "127.0.71.2";

    @TempDir
    Path work;

    @BeforeAll
    static void namespace() throws Exception {
        boolean ok = Netns.isRoot() && Netns.onPath("ip") && Netns.onPath("tcpdump");
        if (System.getenv("CI") != null) assertTrue(ok, "CI must run as root with ip and tcpdump installed");
        assumeTrue(ok, "needs root, ip and tcpdump: skipped on this machine");
        teardown();
        Netns.sh("ip netns add " + NS);
        Netns.sh("ip -n " + NS + " link set lo up");
    }

    @AfterAll
    static void teardown() throws Exception {
        Netns.run(List.of("ip", "netns", "del", NS), 20);
    }

    @Test
    void theEcnSideSendsEct0AndThePlainSideNotEct() throws Exception {
        Path pcap = work.resolve("ecn.pcap");
        Process tcpdump = Netns.start(work, NS, "tcpdump", "tcpdump", "-i", "lo", "-n", "-s", "0", "-U", "-w", pcap.toString(),
                "udp", "port", "4791", "and", "not", "src", "host", "127.0.0.1");
        try {
            Path err = work.resolve("tcpdump.err");
            assertTrue(Verbs.waitFor(() -> !tcpdump.isAlive() || contains(err, "listening on"), 20_000) && tcpdump.isAlive(),
                    "tcpdump did not start listening");
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            String jar = Jroce.jar().toAbsolutePath().toString();
            // --warmup 0: the counters and the frames checked are the test's own traffic, none of the JIT warm-up's
            Process server = Netns.start(work, NS, "server", java, "-jar", jar, "perf", "write", "--bind", SERVER, "-s", "65536",
                    "-n", "20", "--counters", "--timeout", "60", "--warmup", "0");
            Process client = Netns.start(work, NS, "client", java, "-jar", jar, "perf", "write", SERVER, "--bind", CLIENT, "--ecn",
                    "-s", "65536", "-n", "20", "--counters", "--timeout", "60", "--warmup", "0");
            try {
                int rcClient = Netns.waitFor(client, 120);
                int rcServer = Netns.waitFor(server, 30);
                String out = Netns.output(work, "client") + Netns.output(work, "server");
                assertEquals(0, rcClient, out);
                assertEquals(0, rcServer, out);
                assertFalse(out.matches("(?s).*counters device " + SERVER + ":[^\\n]* drop_[a-z_]+=[1-9].*"), "the server dropped nothing\n" + out);
            } finally {
                client.destroyForcibly();
                server.destroyForcibly();
            }
        } finally {
            tcpdump.destroy();
            Netns.waitFor(tcpdump, 10);
        }
        int fromClient = 0;
        int fromServer = 0;
        for (PcapFrame f : CaptureReader.readAll(pcap)) {
            assertTrue(f.isUdp() && f.ipVersion() == 4, f.toString());
            int ecn = f.data()[f.ipOffset() + 1] & 0x03;
            String src = f.srcAddress().getHostAddress();
            if (src.equals(CLIENT)) {
                fromClient++;
                assertEquals(0b10, ecn, "ECT(0) on the --ecn side's frame " + f.frameNumber());
            } else if (src.equals(SERVER)) {
                fromServer++;
                assertEquals(0b00, ecn, "Not-ECT on the plain side's frame " + f.frameNumber());
            }
        }
        assertTrue(fromClient > 300 && fromServer > 0, "captured " + fromClient + " client and " + fromServer + " server frames");
        System.out.println("EcnIT: " + fromClient + " client frames ECT(0), " + fromServer + " server frames Not-ECT");
    }

    private static boolean contains(Path p, String s) {
        try {
            return Files.exists(p) && Files.readString(p).contains(s);
        } catch (java.io.IOException e) {
            return false;
        }
    }
}
