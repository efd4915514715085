package io.jroce.it;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

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
        boolean ok = Netns.isRoot() && Netns.onPath("ip") && Netns.onPath("nft");
        if (System.getenv("CI") != null) {
            assertTrue(ok, "CI must run as root with ip (iproute2) and nft (nftables) installed");
        }
        assumeTrue(ok, "needs root, ip and nft: skipped on this machine");
        teardown();
        Netns.sh("ip netns add " + NS_A);
        Netns.sh("ip netns add " + NS_B);
        Netns.sh("ip link add jroce-va netns " + NS_A + " type veth peer name jroce-vb netns " + NS_B);
        Netns.sh("ip -n " + NS_A + " addr add " + ADDR_A + "/24 dev jroce-va");
        Netns.sh("ip -n " + NS_B + " addr add " + ADDR_B + "/24 dev jroce-vb");
        for (String ns : new String[] {NS_A, NS_B}) {
            Netns.sh("ip -n " + ns + " link set lo up");
        }
        Netns.sh("ip -n " + NS_A + " link set jroce-va up");
        Netns.sh("ip -n " + NS_B + " link set jroce-vb up");
    }

    @AfterAll
    static void teardown() throws Exception {
        Netns.run(List.of("ip", "netns", "del", NS_A), 20);
        Netns.run(List.of("ip", "netns", "del", NS_B), 20);
    }

    /** Input hook: N% of A's datagrams to B vanish; output hook: N% of B's sends to A fail with EPERM. */
    @ParameterizedTest(name = "{0}% dropped in node B's {1} hook")
    @CsvSource({"1, input", "5, input", "20, input", "5, output"})
    void sessionsCompleteWithEveryByteVerified(int percent, String hook) throws Exception {
        Netns.sh("ip netns exec " + NS_B + " nft add table inet jroce");
        try {
            Netns.sh("ip netns exec " + NS_B + " nft add chain inet jroce c '{ type filter hook " + hook + " priority 0; }'");
            Netns.sh("ip netns exec " + NS_B + " nft add rule inet jroce c udp dport 4791 numgen random mod 100 '<' " + percent + " counter drop");
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
            Process server = Netns.start(work, NS_A, "server", java, "-jar", jar, "node", "--bind", ADDR_A, "--linger", "10s",
                    "--script", examples.resolve("server.jroce").toString());
            Process client = Netns.start(work, NS_B, "client", java, "-jar", jar, "node", "--bind", ADDR_B, "--peer", ADDR_A, "--linger", "10s",
                    "--script", examples.resolve("client.jroce").toString());
            try {
                int rcClient = Netns.waitFor(client, 240);
                int rcServer = Netns.waitFor(server, 60);
                String out = Netns.output(work, "client") + Netns.output(work, "server");
                assertEquals(0, rcClient, "client session\n" + out);
                System.out.println(out.lines().filter(l -> l.contains("counters") || l.contains("retrans")).toList());
                assertEquals(0, rcServer, "server session\n" + out);
                String counters = Netns.sh("ip netns exec " + NS_B + " nft list chain inet jroce c");
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
            Netns.run(List.of("ip", "netns", "exec", NS_B, "nft", "delete", "table", "inet", "jroce"), 20);
        }
    }
}
