package io.jroce.cli.perf;

import io.jroce.cli.Cli;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.jroce.cli.perf.PingpongCommandTest.usageError;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * perf and pingpong over IPv6. Each device binds UDP 4791 on its own address, so the two ends need two IPv6
 * addresses: ::1 and fd00:77::2 (and fd00:77::1), added to lo for the test when missing and we may (root),
 * removed afterwards. Without them the traffic tests are skipped, not passed.
 */
class Ipv6CommandsTest {
    private static final String[] EXTRA = {"fd00:77::1", "fd00:77::2"};
    private static final List<String> added = new ArrayList<>();
    private static boolean usable;

    @BeforeAll
    static void addLoopbackAddresses() throws Exception {
        boolean all = true;
        for (String a : EXTRA) {
            if (!isLocal(a)) {
                if (run("ip", "-6", "addr", "add", a + "/128", "dev", "lo", "nodad")) added.add(a);
                all &= isLocal(a);
            }
        }
        usable = all && isLocal("::1");
    }

    @AfterAll
    static void removeLoopbackAddresses() throws Exception {
        for (String a : added) run("ip", "-6", "addr", "del", a + "/128", "dev", "lo");
    }

    private static boolean isLocal(String a) {
        try (DatagramSocket s = new DatagramSocket(new InetSocketAddress(InetAddress.getByName(a), 0))) {
            return true;
        } catch (SocketException | java.net.UnknownHostException e) {
            return false;
        }
    }

    private static boolean run(String... cmd) throws InterruptedException {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        }
    }

    @Test
    void perfWriteServerOnLoopbackSix() throws Exception {
        Assumptions.assumeTrue(usable, "needs ::1 and fd00:77::2 on this host (root adds fd00:77::2 to lo)");
        Cli.Result[] r = PingpongCommandTest.pair(
                List.of("perf", "write", "--bind", "::1", "-p", "28601", "-n", "30", "-s", "8192", "-x", "0", "--counters"),
                List.of("perf", "write", "[::1]", "--bind", "fd00:77::2", "-p", "28601", "-n", "30", "-s", "8192", "--counters"));
        assertEquals(0, r[0].exit(), "server: " + r[0].out() + r[0].err());
        assertEquals(0, r[1].exit(), "client: " + r[1].out() + r[1].err());
        // perftest's GID line: the 16 bytes of the IPv6 address itself
        assertTrue(r[0].out().contains(" GID: 00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:01"), r[0].out());
        assertTrue(r[1].out().contains(" GID: 253:00:00:119:00:00:00:00:00:00:00:00:00:00:00:02"), r[1].out());
        assertTrue(r[1].out().contains("RDMA_Write BW Test"), r[1].out());
        for (Cli.Result x : r) {
            assertTrue(x.err().contains(" drop_icrc=0 "), x.err());
            assertTrue(x.err().contains("counters device " + (x == r[0] ? "::1:" : "fd00:77::2:")), x.err());
            // then the test QP's own line: the client's QP sent the 30 x 8 KiB, the server's received them
            assertTrue(x.err().matches("(?s).*\ncounters qp 0x[0-9a-f]+: packets_out=[1-9][0-9]* .*"), x.err());
        }
    }

    @Test
    void pingpongBetweenTwoIpv6Addresses() throws Exception {
        Assumptions.assumeTrue(usable, "needs fd00:77::1 and fd00:77::2 on this host (root adds them to lo)");
        Cli.Result[] r = PingpongCommandTest.pair(
                List.of("pingpong", "--bind", "[fd00:77::1]", "-p", "28602", "-n", "20", "-s", "64", "-g", "0"),
                List.of("pingpong", "fd00:77::1", "--bind", "fd00:77::2", "-p", "28602", "-n", "20", "-s", "64", "-c"));
        for (Cli.Result x : r) {
            assertEquals(0, x.exit(), x.out() + x.err());
            assertTrue(x.out().contains("GID fd00:77::1"), x.out());
            assertTrue(x.out().contains("GID fd00:77::2"), x.out());
        }
    }

    /**
     * The exchange over IPv4, the RoCE traffic over IPv6, as with rxe's tools (perftest and ibv_rc_pingpong
     * exchange over IPv4 only): the server listens on --oob 127.77.6.1, the client connects to it; the QPs
     * still reach each other at the IPv6 GIDs the exchange carried.
     */
    @Test
    void exchangeOverIpv4RoceOverIpv6() throws Exception {
        Assumptions.assumeTrue(usable, "needs fd00:77::1 and fd00:77::2 on this host (root adds them to lo)");
        Cli.Result[] r = PingpongCommandTest.pair(
                List.of("pingpong", "--bind", "fd00:77::1", "--oob", "127.77.6.1", "-p", "28604", "-n", "20", "-s", "5000", "--counters"),
                List.of("pingpong", "127.77.6.1", "--bind", "fd00:77::2", "-p", "28604", "-n", "20", "-s", "5000", "-c", "--counters"));
        for (Cli.Result x : r) {
            assertEquals(0, x.exit(), x.out() + x.err());
            assertTrue(x.out().contains("GID fd00:77::1") && x.out().contains("GID fd00:77::2"), x.out());
            assertTrue(x.err().contains(" drop_icrc=0 "), x.err());
        }
        r = PingpongCommandTest.pair(
                List.of("perf", "read", "--bind", "fd00:77::1", "--oob", "127.77.6.1", "-p", "28605", "-n", "20", "-s", "8192", "--counters"),
                List.of("perf", "read", "127.77.6.1", "--bind", "fd00:77::2", "--oob", "127.77.6.2", "-p", "28605", "-n", "20", "-s", "8192", "--counters"));
        assertEquals(0, r[0].exit(), "server: " + r[0].out() + r[0].err());
        assertEquals(0, r[1].exit(), "client: " + r[1].out() + r[1].err());
        assertTrue(r[1].out().contains("RDMA_Read BW Test"), r[1].out());
        assertTrue(r[1].out().contains(" GID: 253:00:00:119:00:00:00:00:00:00:00:00:00:00:00:01"), "the server's IPv6 GID: " + r[1].out());
        assertTrue(r[1].err().contains("counters device fd00:77::2:"), r[1].err());
    }

    /** Two nodes: the passive on fd00:77::1, the active on ::1 connecting with a bracketed session host=. */
    @Test
    void nodeSessionsOverIpv6(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        Assumptions.assumeTrue(usable, "needs ::1 and fd00:77::1 on this host (root adds fd00:77::1 to lo)");
        java.nio.file.Path passive = java.nio.file.Files.writeString(dir.resolve("a.jroce"),
                "cq c\nqp q\nmr box size=64k\nrecv mr=box len=8 wr_id=1\nlisten publish=box timeout=30s\n"
                        + "expect wr_id=1 opcode=RECV len=4 timeout=30s\ncompare box len=64k pattern=seq\n");
        java.nio.file.Path active = java.nio.file.Files.writeString(dir.resolve("b.jroce"),
                "cq c\nqp q\nmr b size=64k\nconnect host=[fd00:77::1] timeout=30s\nfill b pattern=seq\n"
                        + "write mr=b remote=box\nexpect opcode=RDMA_WRITE timeout=30s\nread mr=b remote=box\n"
                        + "expect opcode=RDMA_READ len=65536 timeout=30s\ncompare b pattern=seq\nsend mr=b len=4\n"
                        + "expect opcode=SEND timeout=30s\ncounters\n");
        Cli.Result[] r = PingpongCommandTest.pair(
                List.of("node", "--bind", "fd00:77::1", "--port", "28603", "--script", passive.toString()),
                List.of("node", "--bind", "::1", "--port", "28603", "--script", active.toString()));
        assertEquals(0, r[0].exit(), "passive: " + r[0].out() + r[0].err());
        assertEquals(0, r[1].exit(), "active: " + r[1].out() + r[1].err());
        assertTrue(r[1].out().contains("counters device ::1: "), r[1].out());
        assertTrue(r[1].out().contains("connect q: connected QPN ") && r[1].out().contains(" to fd00:77::1 QPN "), r[1].out());
        assertFalse(r[1].out().contains("drop_"), "no drops (counters lists only non-zero ones): " + r[1].out());
    }

    @Test
    void addressUsageErrors() {
        usageError("--oob 127.0.1.1 and HOST fd00::2 are of different IP versions", "perf", "write", "fd00::2", "--bind", "::1", "--oob", "127.0.1.1");
        usageError("--oob ::1 and HOST 127.0.1.1 are of different IP versions", "pingpong", "127.0.1.1", "--bind", "::1", "--oob", "::1");
        usageError("--oob: bind one address of this machine", "pingpong", "--bind", "::1", "--oob", "0.0.0.0");
        usageError("--bind: '[::1]:4791' has a port after the address", "perf", "write", "--bind", "[::1]:4791");
        usageError("--bind: the link-local address fe80::1 needs its interface", "perf", "write", "--bind", "fe80::1");
        usageError("--bind: 'fd00::zz' is not an IPv6 address", "pingpong", "--bind", "fd00::zz");
        usageError("--bind: bind one address of this machine", "perf", "write", "--bind", "::");
        usageError("brackets are for IPv6 addresses", "perf", "write", "--bind", "[999.1.1.1]");
    }
}
