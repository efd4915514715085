package io.jroce.cli.node;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import io.jroce.cli.BadPeers;
import io.jroce.cli.Cli.Result;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static io.jroce.cli.node.SessionHarness.A;
import static io.jroce.cli.node.SessionHarness.B;
import static io.jroce.cli.node.SessionHarness.jroce;
import static io.jroce.cli.node.SessionHarness.node;
import static io.jroce.cli.node.SessionHarness.pair;
import static io.jroce.cli.node.SessionHarness.port;
import static io.jroce.cli.node.SessionHarness.show;
import static io.jroce.cli.node.SessionHarness.single;
import static io.jroce.cli.node.SessionHarness.withStdin;
import static io.jroce.cli.node.SessionHarness.write;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code jroce node} at the command-line level: its options, where the session comes from, and the errors a
 * person can act on (one line, the right exit status, no stack trace).
 */
class NodeCommandTest {
    @TempDir
    Path dir;

    private static void assertOneLine(Result r) {
        assertEquals(1, r.errLines().size(), "one line on stderr:\n" + r.err());
        assertFalse(r.err().contains("\tat "), r.err());
    }

    @Test
    void helpDescribesTheOptions() {
        Result r = node("--help");
        assertEquals(0, r.exit());
        for (String o : List.of("--bind", "--port", "--peer", "--script", "--pcap", "--chaos", "--mtu", "--results", "--linger", "-v")) {
            assertTrue(r.out().contains(o), o + " in\n" + r.out());
        }
        assertTrue(jroce("--help").out().contains("node"), "jroce --help lists node");
    }

    @Test
    void bindIsRequired() {
        Result r = node("--script", "x.jroce");
        assertEquals(2, r.exit());
        assertOneLine(r);
        assertTrue(r.err().startsWith("jroce node: Missing required option: '--bind=ADDR'"), r.err());
    }

    @Test
    void badOptionValuesAreUsageErrors() throws Exception {
        Path ok = write(dir, "ok.jroce", "echo hi\n");
        String[][] cases = {
            {"--bind", "not_an_address!", "--script", ok.toString()},
            {"--bind", "fe80::1", "--script", ok.toString()},
            {"--bind", "0.0.0.0", "--script", ok.toString()},
            {"--bind", A, "--mtu", "1500", "--script", ok.toString()},
            {"--bind", A, "--port", "0", "--script", ok.toString()},
            {"--bind", A, "--chaos", "drop=2", "--script", ok.toString()},
            {"--bind", A, "--chaos", "jitter=0.1", "--script", ok.toString()},
            {"--bind", A, "--linger", "a while", "--script", ok.toString()},
            {"--bind", A, "--pcap", dir.resolve("no/such/dir/x.pcap").toString(), "--script", ok.toString()},
            {"--bind", A, "--script", dir.resolve("missing.jroce").toString()},
            {"--bind", A, "--peer", "nowhere.invalid", "--script", ok.toString()},
            {"--bind", A, "--peer", "fd00::2", "--script", ok.toString()},
        };
        String[] says = {"cannot resolve", "the link-local address fe80::1 needs its interface", "not 0.0.0.0", "option '--mtu': '1500' is not a path MTU", "--port must be 1..65535",
            "not a probability", "unknown key 'jitter'", "--linger:", "does not exist", "--script: " + dir.resolve("missing.jroce") + " does not exist", "--peer: cannot resolve",
            "--peer fd00::2 is IPv6 but our address " + A + " is IPv4"};
        for (int i = 0; i < cases.length; i++) {
            Result r = node(cases[i]);
            assertEquals(2, r.exit(), String.join(" ", cases[i]) + "\n" + show(r));
            assertOneLine(r);
            assertTrue(r.err().contains(says[i]), says[i] + " in: " + r.err());
            assertEquals("", r.out());
        }
    }

    @Test
    void anAddressThatIsNotLocalSaysWhichAreAndExits2() throws Exception {
        Path ok = write(dir, "ok.jroce", "echo hi\n");
        Result r = node("--bind", "192.0.2.77", "--script", ok.toString()); // TEST-NET-1: on no machine
        assertEquals(2, r.exit(), show(r));
        assertOneLine(r);
        assertTrue(r.err().contains("--bind: 192.0.2.77 is not an address of this machine"), r.err());
        assertTrue(r.err().contains("local IPv4 addresses: ") && r.err().contains("127.0.0.1 (lo"), r.err());
    }

    @Test
    void aScriptErrorExits2BeforeTheDeviceOpensOrAnythingRuns() throws Exception {
        // UDP 4791 on A is taken: if the node opened its device we would see 'already in use' rather than the script error
        try (DatagramSocket taken = new DatagramSocket(new InetSocketAddress(InetAddress.getByName(A), 4791))) {
            Path script = write(dir, "bad.jroce", """
                    # a fine start
                    cq c
                    qp q
                    mr buf size=4k
                    listen publish=buf
                    recv mr=buf

                    send mr=buf lenn=16
                    """);
            Result r = node("--bind", A, "--script", script.toString());
            assertEquals(2, r.exit(), show(r));
            assertEquals(script + ":8:13: unknown argument 'lenn' for send (did you mean 'len'?); usage: "
                    + SessionLanguage.command("send").syntax().usage(), r.err().strip());
            assertEquals("", r.out(), "nothing ran");
            assertTrue(taken.isBound());
        }
    }

    @Test
    void udpPortTakenIsAUsageErrorWithAHint() throws Exception {
        // an address whose port 4791 is taken cannot be used: exit 2, as for an address that is not local
        try (DatagramSocket taken = new DatagramSocket(new InetSocketAddress(InetAddress.getByName(A), 4791))) {
            Result r = single(dir, "echo hi\n");
            assertEquals(2, r.exit(), show(r));
            assertOneLine(r);
            assertEquals("jroce node: UDP port 4791 on 127.0.2.1 is already in use (another jroce node, or rdma_rxe, which binds 4791 "
                    + "on every address): stop it or bind another address", r.err().strip());
            assertTrue(taken.isBound());
        }
    }

    @Test
    void aPeerThatIsNotThereIsNamedWithWhatToDo() throws Exception {
        int p = port();
        Result r = single(dir, "cq c\nqp q\nconnect host=" + B + " port=" + p + " timeout=300ms\n");
        assertEquals(1, r.exit(), show(r));
        assertOneLine(r);
        assertTrue(r.err().contains("single.jroce:3: connect: cannot connect to TCP 127.0.2.2:" + p + " within 300 ms"), r.err());
        assertTrue(r.err().contains("start the server side first"), r.err());
        assertFalse(r.err().contains(" -p "), "node has no -p option; the hint names port= and --port: " + r.err());
    }

    @Test
    void aPeerThatAcceptsButDoesNotAnswerTimesOut() throws Exception {
        int p = port();
        try (ServerSocket silent = new ServerSocket()) {
            silent.bind(new InetSocketAddress(InetAddress.getByName(B), p)); // the kernel accepts; nobody answers
            Result r = single(dir, "cq c\nqp q\nconnect host=" + B + " port=" + p + " timeout=300ms\n");
            assertEquals(1, r.exit(), show(r));
            assertOneLine(r);
            assertTrue(r.err().contains("connect: peer 127.0.2.2:" + p + " sent nothing of the jroce handshake header within 300 ms"), r.err());
        }
    }

    @Test
    void nobodyConnectingTimesOutTheListener() throws Exception {
        Result r = single(dir, "cq c\nqp q\nlisten port=" + port() + " timeout=200ms\n");
        assertEquals(1, r.exit(), show(r));
        assertTrue(r.err().contains("single.jroce:3: listen: no client connected to TCP 127.0.2.1:"), r.err());
    }

    /** A peer sending garbage and one sending nothing do not end a listen: the real node that follows connects. */
    @Test
    void listenDropsBadPeersAndConnectsTheRealOne() throws Exception {
        int p = port();
        Path a = write(dir, "a.jroce", "cq c\nqp q\nlisten timeout=30s\n");
        Path b = write(dir, "b.jroce", "cq c\nqp q\nconnect\n");
        try (BadPeers.ListenerLog log = new BadPeers.ListenerLog()) {
            CompletableFuture<Result> fa = CompletableFuture.supplyAsync(() -> node("--bind", A, "--port", "" + p, "--script", a.toString()));
            BadPeers.garbage(A, p);
            try (Socket silent = BadPeers.connect(A, p)) {
                Result rb = node("--bind", B, "--peer", A, "--port", "" + p, "--script", b.toString());
                Result ra = fa.get(60, TimeUnit.SECONDS);
                assertEquals(0, ra.exit(), show(ra));
                assertEquals(0, rb.exit(), show(rb));
                assertTrue(ra.out().contains("listen q: connected QPN"), ra.out());
                BadPeers.awaitClosed(silent);
            }
            List<String> lines = log.lines();
            assertEquals(1, lines.size(), "the garbage peer only: " + lines);
            assertTrue(lines.get(0).contains("which did not open the jroce handshake") && lines.get(0).contains("does not speak the jroce handshake"),
                    lines.get(0));
        }
    }

    @Test
    void listenWithOnlyGarbageUntilItsTimeoutSaysHowManyPeersWereDropped() throws Exception {
        int p = port();
        CompletableFuture<Result> f = CompletableFuture.supplyAsync(() -> {
            try {
                return single(dir, "cq c\nqp q\nlisten port=" + p + " timeout=2s\n");
            } catch (java.io.IOException e) {
                throw new IllegalStateException(e);
            }
        });
        BadPeers.garbage(A, p);
        BadPeers.garbage(A, p);
        Result r = f.get(60, TimeUnit.SECONDS);
        assertEquals(1, r.exit(), show(r));
        assertOneLine(r);
        assertTrue(r.err().contains("single.jroce:3: listen: no client connected to TCP 127.0.2.1:" + p + " within 2 s; dropped 2 connections "
                + "that did not open the jroce handshake"), r.err());
    }

    @Test
    void peersWithDifferentMtusBothSaySo() throws Exception {
        Result[] r = pair(dir, "cq c\nqp q\nlisten\n", "cq c\nqp q\nconnect\n", List.of("--mtu", "1024"), List.of("--mtu", "4096"));
        assertEquals(1, r[0].exit(), show(r[0]));
        assertEquals(1, r[1].exit(), show(r[1]));
        assertTrue(r[0].err().contains("a.jroce:3: listen: the peer at 127.0.2.2 uses path MTU 4096 but this node uses 1024: "
                + "give both sides the same mtu= (or --mtu)"), r[0].err());
        assertTrue(r[1].err().contains("b.jroce:3: connect: the peer at 127.0.2.1 uses path MTU 1024 but this node uses 4096"), r[1].err());
        assertFalse(r[0].err().contains("\tat "), r[0].err());
    }

    @Test
    void aScriptCanComeFromStandardInput() {
        Result dash = withStdin("mr b size=8\nfill b text=hi\ncompare b len=2 text=hi\n", false, "--bind", A, "--script", "-");
        assertEquals(0, dash.exit(), show(dash));
        assertTrue(dash.out().contains("compare b: ok, 2 bytes at offset 0"), dash.out());

        // no --script and standard input not a terminal: the same
        Result piped = withStdin("mr b size=8\ncompare b text=x\n", false, "--bind", A);
        assertEquals(1, piped.exit(), show(piped));
        assertTrue(piped.err().startsWith("<stdin>:2: compare b failed"), piped.err());

        Result bad = withStdin("mr b size=8\ndump c\n", false, "--bind", A);
        assertEquals(2, bad.exit(), show(bad));
        assertTrue(bad.err().startsWith("<stdin>:2:6: no memory region 'c' here"), bad.err());
    }

    @Test
    void atAPromptErrorsArePrintedAndTheSessionGoesOn() {
        String typed = String.join("\n",
                "mr buf size=4k",
                "fill buf text=hello",
                "compare bufx text=hello",
                "compare buf text=help",
                "",
                "dump buf len=5 as=text",
                "!5",
                "!!",
                "!99",
                "history",
                "exit 4") + "\n";
        Result r = withStdin(typed, true, "--bind", A);
        assertEquals(4, r.exit(), show(r));
        String out = r.out();
        assertTrue(out.startsWith("jroce node 127.0.2.1: type 'help' for the commands"), out);
        assertTrue(out.contains("jroce> mr buf: 4096 bytes"), out);
        assertTrue(r.err().contains("line 3:9: no memory region 'bufx' here (did you mean 'buf'?)"), r.err());
        assertTrue(r.err().contains("line 4: compare buf failed: byte at offset 3 is 0x6c, expected 0x70"), r.err());
        assertTrue(r.err().contains("no such line in the history: !99"), r.err());
        assertEquals(3, out.split("dump buf: \"hello\"", -1).length - 1, "dump ran, then again with !5 and !!:\n" + out);
        assertTrue(out.contains("    3  compare bufx text=hello\n"), out);
        assertTrue(out.contains("    7  dump buf len=5 as=text\n"), out);
        assertTrue(out.contains("counters device 127.0.2.1"), out);
    }

    @Test
    void theEndOfInputEndsAPromptSession() {
        Result r = withStdin("mr b size=8\ncompare b text=x\n", true, "--bind", A);
        assertEquals(1, r.exit(), "a failure at the prompt makes the status 1:\n" + show(r));
        Result clean = withStdin("echo fine\n", true, "--bind", A);
        assertEquals(0, clean.exit(), show(clean));
    }

    @Test
    void verbosityRaisesTheLogLevelAndTheDefaultIsQuiet() throws Exception {
        Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        Level before = root.getLevel();
        try {
            assertEquals(Level.WARN, before, "logback.xml sets WARN");
            Path ok = write(dir, "ok.jroce", "echo hi\n");
            assertEquals(0, node("--bind", A, "--script", ok.toString()).exit());
            assertEquals(Level.WARN, root.getLevel(), "no -v: the configuration decides");
            assertEquals(0, node("-v", "--bind", A, "--script", ok.toString()).exit());
            assertEquals(Level.INFO, root.getLevel());
            assertEquals(0, node("-vv", "--bind", A, "--script", ok.toString()).exit());
            assertEquals(Level.DEBUG, root.getLevel());
        } finally {
            root.setLevel(before);
        }
    }

    @Test
    void withVeryVerboseAFailureShowsItsStackTrace() throws Exception {
        Result quiet = single(dir, "mr b size=8\ncompare b text=x\n");
        assertFalse(quiet.err().contains("\tat "), quiet.err());
        Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        Level before = root.getLevel();
        try {
            Result loud = single(dir, "mr b size=8\ncompare b text=x\n", "-vv");
            assertEquals(1, loud.exit());
            assertTrue(loud.err().contains("\tat io.jroce.cli.node.Session"), loud.err());
        } finally {
            root.setLevel(before);
        }
    }

    @Test
    void pcapRecordsTheSessionsTraffic() throws Exception {
        Path pa = dir.resolve("a.pcap");
        Result[] r = pair(dir, "cq c\nqp q\nmr b size=64\nrecv mr=b\nlisten\nexpect opcode=RECV len=3\n",
                "cq c\nqp q\nmr b size=64\nconnect\nsend mr=b len=3\nexpect opcode=SEND\n", List.of("--pcap", pa.toString()), List.of());
        assertEquals(0, r[0].exit(), show(r[0]));
        assertEquals(0, r[1].exit(), show(r[1]));
        Result inspect = jroce("inspect", pa.toString());
        assertEquals(0, inspect.exit(), show(inspect));
        assertTrue(inspect.out().contains("RC_SEND_ONLY"), inspect.out());
        assertTrue(inspect.out().contains("RC_ACKNOWLEDGE"), inspect.out());
    }
}
