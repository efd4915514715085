package io.jroce.it;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Kernel-level loss: two jroce node processes in two network namespaces joined by a veth pair, with an
 * nft rule on one side dropping a random share of UDP/4791 datagrams ({@code numgen random mod 100 < N}).
 * Dropping in the input hook loses datagrams silently; dropping in the output hook makes the sender's own
 * {@code sendmmsg} fail with EPERM, a second fault jroce must ride out. The example sessions (SEND, WRITE,
 * READ, atomics, every byte and SHA-256 checked by the sessions themselves) must still complete.
 *
 * <p>Needs root, {@code ip} and {@code nft}: skipped with a message on a developer machine without them,
 * a failure in CI (environment variable CI set). The namespaces are removed even when a test fails.
 */
class NetnsLossIT {
    private static final String NS_A = "jroce-it-a";
    private static final String NS_B = "jroce-it-b";
    private static final String ADDR_A = "10.199.0.1";
    private static final String ADDR_B = "10.199.0.2";

    @TempDir
    Path work;

    @BeforeAll
    static void namespaces() throws Exception {
        boolean ok = isRoot() && onPath("ip") && onPath("nft");
        if (System.getenv("CI") != null) {
            assertTrue(ok, "CI must run as root with ip (iproute2) and nft (nftables) installed");
        }
        assumeTrue(ok, "needs root, ip and nft: skipped on this machine");
        teardown();
        sh("ip netns add " + NS_A);
        sh("ip netns add " + NS_B);
        sh("ip link add jroce-va netns " + NS_A + " type veth peer name jroce-vb netns " + NS_B);
        sh("ip -n " + NS_A + " addr add " + ADDR_A + "/24 dev jroce-va");
        sh("ip -n " + NS_B + " addr add " + ADDR_B + "/24 dev jroce-vb");
        for (String ns : new String[] {NS_A, NS_B}) {
            sh("ip -n " + ns + " link set lo up");
        }
        sh("ip -n " + NS_A + " link set jroce-va up");
        sh("ip -n " + NS_B + " link set jroce-vb up");
    }

    @AfterAll
    static void teardown() throws Exception {
        run(List.of("ip", "netns", "del", NS_A), 20);
        run(List.of("ip", "netns", "del", NS_B), 20);
    }

    /** Input hook: N% of A's datagrams to B vanish; output hook: N% of B's sends to A fail with EPERM. */
    @ParameterizedTest(name = "{0}% dropped in node B's {1} hook")
    @CsvSource({"1, input", "5, input", "20, input", "5, output"})
    void sessionsCompleteWithEveryByteVerified(int percent, String hook) throws Exception {
        sh("ip netns exec " + NS_B + " nft add table inet jroce");
        try {
            sh("ip netns exec " + NS_B + " nft add chain inet jroce c '{ type filter hook " + hook + " priority 0; }'");
            sh("ip netns exec " + NS_B + " nft add rule inet jroce c udp dport 4791 numgen random mod 100 '<' " + percent + " counter drop");
            Path examples = Path.of(System.getProperty("user.dir")).getParent().resolve("cli/src/main/resources/io/jroce/cli/examples");
            // the example sessions unchanged, except that each expectation may wait long enough for recovery
            // at 20 % loss (the default is 10 s); --linger keeps each node answering after its session ends,
            // so the peer's retransmission of a last message whose ACK was lost is still acknowledged
            for (String name : new String[] {"server.jroce", "client.jroce"}) {
                List<String> lines = Files.readAllLines(examples.resolve(name)).stream()
                        .map(l -> l.startsWith("expect ") ? l + " timeout=180s" : l).toList();
                Files.write(work.resolve(name), lines);
            }
            examples = work;
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            String jar = Jroce.jar().toAbsolutePath().toString();
            Process server = start(NS_A, "server", java, "-jar", jar, "node", "--bind", ADDR_A, "--linger", "10s",
                    "--script", examples.resolve("server.jroce").toString());
            Process client = start(NS_B, "client", java, "-jar", jar, "node", "--bind", ADDR_B, "--peer", ADDR_A, "--linger", "10s",
                    "--script", examples.resolve("client.jroce").toString());
            try {
                int rcClient = waitFor(client, 240);
                int rcServer = waitFor(server, 60);
                String out = output("client") + output("server");
                assertEquals(0, rcClient, "client session\n" + out);
                System.out.println(out.lines().filter(l -> l.contains("counters") || l.contains("retrans")).toList());
                assertEquals(0, rcServer, "server session\n" + out);
                String counters = sh("ip netns exec " + NS_B + " nft list chain inet jroce c");
                System.out.println("NetnsLossIT " + percent + "% " + hook + ": nft " + counters.replaceAll("\\s+", " "));
                assertTrue(counters.matches("(?s).*counter packets [1-9].*"), "the rule really dropped datagrams:\n" + counters);
                if (hook.equals("input") && percent >= 5) {
                    // the counters show the recovery: retransmissions (Go-Back-N, probes or timeouts)
                    assertTrue(out.matches("(?s).*(retransmits|probes)=[1-9].*"), "retransmissions are counted\n" + out);
                }
                if (hook.equals("output")) {
                    // the sender saw its own sendmmsg fail (EPERM) and still completed
                    assertTrue(out.contains("send_errors="), out);
                }
            } finally {
                server.destroyForcibly();
                client.destroyForcibly();
            }
        } finally {
            run(List.of("ip", "netns", "exec", NS_B, "nft", "delete", "table", "inet", "jroce"), 20);
        }
    }

    private Process start(String ns, String name, String... cmd) throws IOException {
        List<String> full = new ArrayList<>(List.of("ip", "netns", "exec", ns));
        full.addAll(List.of(cmd));
        return new ProcessBuilder(full).directory(work.toFile())
                .redirectOutput(work.resolve(name + ".out").toFile())
                .redirectError(work.resolve(name + ".err").toFile())
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
                .start();
    }

    private String output(String name) throws IOException {
        return "--- " + name + " stdout\n" + Files.readString(work.resolve(name + ".out"))
                + "--- " + name + " stderr\n" + Files.readString(work.resolve(name + ".err"));
    }

    private static int waitFor(Process p, long seconds) throws InterruptedException {
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            return -1;
        }
        return p.exitValue();
    }

    private static boolean isRoot() {
        return "root".equals(System.getProperty("user.name"));
    }

    private static boolean onPath(String tool) {
        for (String dir : System.getenv("PATH").split(":")) {
            if (Files.isExecutable(Path.of(dir, tool))) return true;
        }
        return Files.isExecutable(Path.of("/usr/sbin", tool)) || Files.isExecutable(Path.of("/sbin", tool));
    }

    /** Runs a shell command line; fails the test with its output if it exits non-zero. */
    private static String sh(String line) throws Exception {
        String out = run(List.of("sh", "-c", line), 30);
        assertTrue(out.startsWith("0\n"), "command failed: " + line + "\n" + out);
        return out.substring(2);
    }

    private static String run(List<String> cmd, long seconds) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return "timeout\n";
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        return p.exitValue() + "\n" + out;
    }
}
