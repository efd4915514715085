package io.jroce.cli;

import io.jroce.testkit.TestData;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The one rule for exit codes, command by command (the user guide's "Exit status"): 0 success, 1 a failure at run
 * time, 2 bad usage or an argument that cannot be used (an address not of this machine, a port in use, a file
 * that cannot be written), found before any traffic. Every failure is one line on stderr naming what is wrong.
 */
class ExitCodeTest {
    /** Not an address of any test machine (TEST-NET-2). */
    private static final String FOREIGN = "198.51.100.77";
    /**
     * The /24 of this test's own loopback addresses (other tests of the build may run at the same time on 127.0.x.y);
     * {@code -Djroce.test.exitNet=127.a.b} moves it, for two builds on one machine.
     */
    private static final String NET = System.getProperty("jroce.test.exitNet", "127.201.139");
    private static final String L1 = NET + ".1";
    private static final String L2 = NET + ".2";
    private static final String L3 = NET + ".3";
    /** Where nothing listens: a client's peer that never answers. */
    private static final String L4 = NET + ".4";
    /** UDP 4791 held by the test: a RoCE device cannot bind there. */
    private static final String UDP_TAKEN = NET + ".9";

    private static Path dir;
    private static DatagramSocket udp4791;
    private static ServerSocket tcpL1;
    private static ServerSocket tcpL2;

    @BeforeAll
    static void hold() throws IOException {
        dir = Files.createTempDirectory("jroce-exit");
        Files.writeString(dir.resolve("echo.jroce"), "echo hi\n");
        Files.writeString(dir.resolve("fails.jroce"), "mr b size=8\ncompare b text=x\n");
        udp4791 = new DatagramSocket(new InetSocketAddress(InetAddress.getByName(UDP_TAKEN), 4791));
        tcpL1 = new ServerSocket(0, 1, InetAddress.getByName(L1));
        tcpL2 = new ServerSocket(0, 1, InetAddress.getByName(L2));
    }

    @AfterAll
    static void release() throws IOException {
        udp4791.close();
        tcpL1.close();
        tcpL2.close();
    }

    static Stream<Arguments> cases() {
        String echo = dir.resolve("echo.jroce").toString();
        String noDir = dir.resolve("no/such/dir/x.pcap").toString();
        String p1 = Integer.toString(tcpL1.getLocalPort());
        String p2 = Integer.toString(tcpL2.getLocalPort());
        String listen = dir.resolve("listen.jroce").toString();
        try {
            Files.writeString(dir.resolve("listen.jroce"), "cq c\nqp q cq=c\nlisten qp=q port=" + p1 + " timeout=2s\n");
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return Stream.of(
                // 2: bad usage
                row(2, "Unknown option", "inspect", "--no-such-option", "x.pcap"),
                // a file that cannot be written: named once, before the capture is read
                row(2, "--graph: directory " + dir.resolve("no/such/dir") + " does not exist", "inspect", "--graph",
                        dir.resolve("no/such/dir/flow.svg").toString(), TestData.file("jroce/jroce-write-lossy.pcap").toString()),
                row(2, "Unknown option", "rping", "--no-such-option"),
                row(2, "'4x' is not a size", "node", "--bind", L1, "--socket-buffer", "4x", "--script", echo),
                // 2: an address that is not this machine's, before anything starts
                row(2, "--node-a: " + FOREIGN + " is not an address of this machine", "demo", "--node-a", FOREIGN),
                row(2, FOREIGN + " is not in 127.0.0.0/8", "demo", "--in-process", "--node-a", FOREIGN),
                row(2, "--bind: " + FOREIGN + " is not an address of this machine", "pingpong", "--bind", FOREIGN),
                row(2, "--bind: " + FOREIGN + " is not an address of this machine", "perf", "write", "--bind", FOREIGN),
                row(2, "-a: " + FOREIGN + " is not an address of this machine", "rping", "-s", "-a", FOREIGN),
                row(2, "--bind: " + FOREIGN + " is not an address of this machine", "node", "--bind", FOREIGN, "--script", echo),
                row(2, "give our device another local address with -I", "rping", "-c", "-a", "127.0.0.1"),
                // 2: a file that cannot be written
                row(2, "--pcap: directory", "pingpong", "--bind", L1, "--pcap", noDir),
                row(2, "--pcap: " + dir + " is a directory", "perf", "write", "--bind", L1, "--pcap", dir.toString()),
                row(2, "--pcap: directory", "rping", "-s", "-a", L1, "--pcap", noDir),
                row(2, "--pcap: directory", "node", "--bind", L1, "--pcap", noDir, "--script", echo),
                row(2, "--pcap: cannot create directory " + dir.resolve("echo.jroce") + ": a file of that name exists", "demo",
                        "--node-a", "127.0.0.1", "--pcap", dir.resolve("echo.jroce").toString()),
                row(2, "--script: " + dir + " is a directory", "node", "--bind", L1, "--script", dir.toString()),
                row(2, "--script: /dev/null is empty", "node", "--bind", L1, "--script", "/dev/null"),
                // 2: a port in use
                row(2, "UDP port 4791 on " + UDP_TAKEN + " is already in use", "pingpong", "--bind", UDP_TAKEN),
                row(2, "UDP port 4791 on " + UDP_TAKEN + " is already in use", "perf", "write", "--bind", UDP_TAKEN),
                row(2, "UDP port 4791 on " + UDP_TAKEN + " is already in use", "rping", "-s", "-a", UDP_TAKEN),
                row(2, "UDP port 4791 on " + UDP_TAKEN + " is already in use", "node", "--bind", UDP_TAKEN, "--script", echo),
                row(2, "cannot listen on TCP " + L1 + ":" + p1, "pingpong", "--bind", L1, "-p", p1),
                row(2, "cannot listen on TCP " + L2 + ":" + p2, "perf", "write", "--bind", L2, "-p", p2),
                // a script's listen on a TCP port in use (its port= here; --port alike): found before the device opens
                row(2, "listen.jroce:3: listen: cannot listen on TCP " + L1 + ":" + p1, "node", "--bind", L1, "--script", listen),
                row(2, "--metrics " + L1 + ":" + p1, "node", "--bind", L3, "--metrics", L1 + ":" + p1, "--script", echo),
                // every command of the tree holds to it: ucmatose, udaddy, soak, conform, exec
                row(2, "Unknown option", "ucmatose", "--no-such-option"),
                row(2, "-b: " + FOREIGN + " is not an address of this machine", "ucmatose", "-b", FOREIGN),
                row(2, "UDP port 4791 on " + UDP_TAKEN + " is already in use", "ucmatose", "-b", UDP_TAKEN),
                row(2, "--pcap: directory", "ucmatose", "-b", L1, "--pcap", noDir),
                row(2, "Unknown option", "udaddy", "--no-such-option"),
                row(2, "-b: " + FOREIGN + " is not an address of this machine", "udaddy", "-b", FOREIGN),
                row(2, "UDP port 4791 on " + UDP_TAKEN + " is already in use", "udaddy", "-b", UDP_TAKEN),
                row(2, "--pcap: directory", "udaddy", "-b", L1, "--pcap", noDir),
                row(2, "Unknown option", "soak", "--no-such-option"),
                row(2, "--bind: " + FOREIGN + " is not an address of this machine", "soak", "--bind", FOREIGN),
                row(2, "UDP port 4791 on " + UDP_TAKEN + " is already in use", "soak", "--bind", UDP_TAKEN),
                row(2, "cannot listen on TCP " + L1 + ":" + p1, "soak", "--bind", L1, "-p", p1),
                row(2, "--pcap: directory", "soak", "--bind", L1, "--pcap", noDir),
                row(2, "Unknown option", "conform", "--no-such-option"),
                row(2, "--bind: " + FOREIGN + " is not an address of this machine", "conform", "--bind", FOREIGN, L4),
                // conform's tester binds our RoCE port itself, and checks the files it will write before any packet
                row(2, "--bind: UDP port 4791 on " + UDP_TAKEN + " is already in use", "conform", "--bind", UDP_TAKEN, L4),
                row(2, "--junit: directory", "conform", "--bind", L1, "--junit", dir.resolve("no/such/dir/r.xml").toString(), L4),
                row(2, "--pcap: " + dir + " is a directory", "conform", "--bind", L1, "--pcap", dir.toString(), L4),
                // exec: the address of the program's device, before the program runs
                row(2, "--bind: " + FOREIGN + " is not an address of this machine", "exec", "--bind", FOREIGN, "true"),
                // demo: a port its nodes cannot have, before either starts
                row(2, "--node-a: UDP port 4791 on " + UDP_TAKEN + " is already in use", "demo", "--node-a", UDP_TAKEN, "--node-b", L2),
                row(2, "--node-b: UDP port 4791 on " + UDP_TAKEN + " is already in use", "demo", "--node-a", L1, "--node-b", UDP_TAKEN),
                row(2, "--port: cannot listen on TCP " + L1 + ":" + p1, "demo", "--node-a", L1, "--node-b", L3, "--port", p1),
                // 1: a failure at run time
                row(1, "--timeout 1 s", "pingpong", "--bind", L1, "--timeout", "1", L2),
                row(1, "--timeout 1 s", "perf", "write", "--bind", L1, "--timeout", "1", L2),
                row(1, "no connection request on port 7174 within --timeout 0.3 s", "rping", "-s", "-a", L1, "--timeout", "300ms"),
                row(1, "compare b", "node", "--bind", L1, "--script", dir.resolve("fails.jroce").toString()),
                row(1, "within --timeout 0.3 s", "ucmatose", "-b", L1, "-s", L4, "--timeout", "300ms"),
                row(1, "within --timeout 0.3 s", "udaddy", "-b", L1, "-s", L4, "--timeout", "300ms"),
                row(1, "--timeout 1 s", "soak", "--bind", L1, "--timeout", "1", L4),
                row(1, "cannot connect to TCP " + L4, "conform", "--bind", L1, "--connect-timeout", "300ms", L4),
                // 0: success
                row(0, "", "node", "--bind", L1, "--socket-buffer", "4m", "--script", echo));
    }

    private static Arguments row(int exit, String err, String... args) {
        return Arguments.of(String.join(" ", args), exit, err, args);
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @MethodSource("cases")
    void exitCodeFollowsTheRule(String shown, int exit, String err, String[] args) {
        Cli.Result r = Cli.run(args);
        assertEquals(exit, r.exit(), shown + "\nout: " + r.out() + "\nerr: " + r.err());
        if (exit == 0) {
            assertEquals("", r.err().lines().filter(l -> !l.startsWith("counters ")).reduce("", String::concat), shown);
            return;
        }
        String failure = r.err().lines().filter(l -> l.contains(err)).findFirst().orElse(null);
        assertTrue(failure != null, shown + ": no line naming '" + err + "' in\n" + r.err());
        if (exit == 2) {
            // a usage error: one line, before anything ran
            assertEquals(1, r.err().lines().count(), shown + ": " + r.err());
            assertTrue(r.err().startsWith("jroce " + args[0] + ": "), shown + ": " + r.err());
            assertEquals("", r.out(), shown);
        }
    }
}
