package io.jroce.it;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@code --allow}: a node in namespace A that admits only other networks than node B's. B sends valid UD
 * datagrams to a QP of A whose number it knows, opens A's TCP exchange, and sends a CM REQ: the datagrams are
 * dropped and counted (drop_not_allowed), nothing completes on A, the TCP connection and the CM request are
 * refused. The same flows with B's network allowed succeed, so the list alone makes the difference.
 *
 * <p>Needs root and {@code ip}: skipped with a message without them, a failure in CI.
 */
class AccessIT {
    private static final String NS_A = "jroce-acl-a";
    private static final String NS_B = "jroce-acl-b";
    private static final String ADDR_A = "10.204.0.1";
    private static final String ADDR_B = "10.204.0.2";
    /** Networks that leave B out: another host of its subnet and an IPv6 prefix. */
    private static final String WITHOUT_B = "10.204.0.99,fd00::/8";
    private static final String WITH_B = "10.204.0.0/24,fd00::/8";

    @TempDir
    Path work;

    @BeforeAll
    static void namespaces() throws Exception {
        boolean ok = Netns.isRoot() && Netns.onPath("ip");
        if (System.getenv("CI") != null) assertTrue(ok, "CI must run as root with ip (iproute2) installed");
        assumeTrue(ok, "needs root and ip: skipped on this machine");
        teardown();
        Netns.sh("ip netns add " + NS_A);
        Netns.sh("ip netns add " + NS_B);
        Netns.sh("ip link add jroce-aa netns " + NS_A + " type veth peer name jroce-ab netns " + NS_B);
        Netns.sh("ip -n " + NS_A + " addr add " + ADDR_A + "/24 dev jroce-aa");
        Netns.sh("ip -n " + NS_B + " addr add " + ADDR_B + "/24 dev jroce-ab");
        for (String ns : new String[] {NS_A, NS_B}) Netns.sh("ip -n " + ns + " link set lo up");
        Netns.sh("ip -n " + NS_A + " link set jroce-aa up");
        Netns.sh("ip -n " + NS_B + " link set jroce-ab up");
    }

    @AfterAll
    static void teardown() throws Exception {
        Netns.run(List.of("ip", "netns", "del", NS_A), 20);
        Netns.run(List.of("ip", "netns", "del", NS_B), 20);
    }

    /** Ten valid UD SENDs with the right Q_Key to A's UD QP, whose number B is given. */
    @ParameterizedTest(name = "--allow {0}: B allowed {1}")
    @CsvSource(delimiter = ';', value = {WITHOUT_B + "; false", WITH_B + "; true"})
    void datagramsFromOutsideAreDroppedBeforeTheyReachAKnownQp(String allow, boolean allowed) throws Exception {
        Netns.sh("mkfifo " + work.resolve("gate-8"));
        Files.writeString(work.resolve("a.jroce"), """
                cq cq depth=16
                qp u cq=cq ud
                mr b size=4k
                mr g size=8
                recv qp=u mr=b wr_id=1
                echo ready qpn $u.qpn
                fill g file=gate-$g.len
                poll
                counters device
                """);
        Process a = node(NS_A, "a", ADDR_A, "--allow", allow);
        Process b = null;
        try {
            String qpn = awaitGroup("a", "ready qpn (\\S+)", a);
            StringBuilder s = new StringBuilder("cq cq depth=32\nqp u cq=cq ud\nmr b size=64\nfill b text=hello\n");
            for (int i = 1; i <= 10; i++) {
                s.append("send qp=u mr=b len=5 to=").append(ADDR_A).append(" qpn=").append(qpn).append(" wr_id=").append(i).append('\n');
                s.append("expect wr_id=").append(i).append(" opcode=SEND\n");
            }
            Files.writeString(work.resolve("b.jroce"), s.toString());
            b = node(NS_B, "b", ADDR_B);
            assertEquals(0, Netns.waitFor(b, 60), Netns.output(work, "b"));
            // B's datagrams have left; a datagram that got through would be in A's socket or CQ by the time A polls
            String r = Netns.run(List.of("sh", "-c", "echo open > " + work.resolve("gate-8")), 60);
            assertTrue(r.startsWith("0\n"), "A did not reach its gate: " + r + Netns.output(work, "a"));
            assertEquals(0, Netns.waitFor(a, 60), Netns.output(work, "a"));
            String out = Netns.output(work, "a");
            long notAllowed = count(out, "drop_not_allowed");
            System.out.printf("AccessIT --allow %s: drop_not_allowed=%d%n", allow, notAllowed);
            if (allowed) {
                assertEquals(0, notAllowed, out);
                assertTrue(out.contains("wc wr_id=1 SUCCESS RECV"), "the allowed peer's datagram arrived\n" + out);
            } else {
                assertEquals(10, notAllowed, "every datagram from outside is counted\n" + out);
                assertTrue(out.contains("poll cq: empty"), "nothing from outside reached the QP\n" + out);
                assertTrue(out.contains("refused RoCE datagrams from " + ADDR_B), "the source is logged\n" + out);
                assertEquals(1, out.lines().filter(l -> l.contains("refused RoCE datagrams")).count(), "logged once\n" + out);
            }
        } finally {
            a.destroyForcibly();
            if (b != null) b.destroyForcibly();
        }
    }

    /** The TCP exchange and a CM REQ from outside are refused: the connect fails, the server hears no one. */
    @ParameterizedTest(name = "connect {0} from outside --allow is refused")
    @ValueSource(strings = {"tcp", "cm"})
    void connectionsFromOutsideAreRefused(String how) throws Exception {
        String cm = how.equals("cm") ? " cm" : "";
        Files.writeString(work.resolve("a.jroce"), "cq cq\nqp q cq=cq\nlisten timeout=6s" + cm + "\n");
        Files.writeString(work.resolve("b.jroce"), "cq cq\nqp q cq=cq\nconnect timeout=4s" + cm + "\n");
        Process a = node(NS_A, "a", ADDR_A, "--allow", WITHOUT_B, "--counters");
        Process b = null;
        try {
            awaitGroup("a", "(listen q: waiting)", a);
            b = node(NS_B, "b", ADDR_B, "--peer", ADDR_A);
            assertEquals(1, Netns.waitFor(b, 60), "the connect from outside fails\n" + Netns.output(work, "b"));
            assertEquals(1, Netns.waitFor(a, 60), "the listener heard no one it admits\n" + Netns.output(work, "a"));
            String out = Netns.output(work, "a");
            System.out.printf("AccessIT %s: %s%n", how, out.lines().filter(l -> l.contains("refused")).findFirst().orElse(""));
            if (how.equals("tcp")) {
                assertTrue(out.contains("refused a TCP connection to " + ADDR_A + ":"), out);
                assertTrue(out.contains(" from " + ADDR_B + ": not in the allowed networks"), out);
            } else {
                assertTrue(count(out, "drop_not_allowed") >= 1, "the REQ was dropped and counted\n" + out);
                assertTrue(out.contains("refused RoCE datagrams from " + ADDR_B), out);
            }
        } finally {
            a.destroyForcibly();
            if (b != null) b.destroyForcibly();
        }
    }

    private Process node(String ns, String name, String addr, String... extra) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new java.util.ArrayList<>(List.of(java, "-jar", Jroce.jar().toAbsolutePath().toString(), "node", "--bind", addr,
                "--script", work.resolve(name + ".jroce").toString()));
        cmd.addAll(List.of(extra));
        return Netns.start(work, ns, name, cmd.toArray(String[]::new));
    }

    /** Polls {@code name}'s output for {@code regex} (its first group), with a deadline. */
    private String awaitGroup(String name, String regex, Process p) throws Exception {
        long deadline = System.nanoTime() + 60_000_000_000L;
        Pattern pattern = Pattern.compile(regex);
        while (true) {
            Path out = work.resolve(name + ".out");
            if (Files.exists(out)) {
                Matcher m = pattern.matcher(Files.readString(out));
                if (m.find()) return m.group(1);
            }
            if (!p.isAlive() || System.nanoTime() > deadline) fail("no " + regex + " from " + name + "\n" + Netns.output(work, name));
            Thread.sleep(10);
        }
    }

    private static long count(String out, String counter) {
        Matcher m = Pattern.compile(counter + "=(\\d+)").matcher(out);
        return m.find() ? Long.parseLong(m.group(1)) : 0;
    }
}
