package io.jroce.cli.perf;

import io.jroce.cli.Cli;

import org.junit.jupiter.api.Test;

import java.io.DataInputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PingpongCommandTest {
    private static final Pattern LOCAL = Pattern.compile("  local address:  LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID ::ffff:127\\.0\\.1\\.[12]");
    private static final Pattern REMOTE = Pattern.compile("  remote address: LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID ::ffff:127\\.0\\.1\\.[12]");

    /** Exit 2 and exactly one line on stderr, naming the command and the problem. */
    static void usageError(String expect, String... args) {
        Cli.Result r = Cli.run(args);
        assertEquals(2, r.exit(), r.err());
        assertEquals(1, r.errLines().size(), r.err());
        assertTrue(r.err().startsWith("jroce " + args[0] + ": "), r.err());
        assertTrue(r.err().contains(expect), r.err());
        assertEquals("", r.out());
    }

    @Test
    void badOptionsAreOneLineUsageErrors() {
        usageError("-s/--size 0", "pingpong", "--bind", "127.0.1.1", "-s", "0");
        usageError("'abc'", "pingpong", "--bind", "127.0.1.1", "-s", "abc");
        usageError("option '--mtu': '1000' is not a path MTU", "pingpong", "--bind", "127.0.1.1", "-m", "1000");
        usageError("-p/--port 70000", "pingpong", "--bind", "127.0.1.1", "-p", "70000");
        usageError("-n/--iters 0", "pingpong", "--bind", "127.0.1.1", "-n", "0");
        usageError("-r/--rx-depth 1", "pingpong", "--bind", "127.0.1.1", "-r", "1");
        usageError("our GID table has one entry", "pingpong", "--bind", "127.0.1.1", "-g", "1");
        usageError("--timeout", "pingpong", "--bind", "127.0.1.1", "--timeout", "0");
        usageError("--qp-timeout", "pingpong", "--bind", "127.0.1.1", "--qp-timeout", "40");
        usageError("needs --bind", "pingpong");
        usageError("--bind: cannot resolve 'no-such-host.invalid'", "pingpong", "--bind", "no-such-host.invalid");
        usageError("Unknown option", "pingpong", "--frob");
        usageError("Unmatched argument", "pingpong", "127.0.1.1", "extra");
    }

    @Test
    void acceptedOptionsParse() {
        Cli.Result h = Cli.run("pingpong", "--help");
        assertEquals(0, h.exit());
        for (String o : List.of("--port", "--size", "--iters", "--mtu", "--rx-depth", "--gid-idx", "--sl", "--chk", "--bind", "--timeout", "--ud")) {
            assertTrue(h.out().contains(o), o);
        }
    }

    /**
     * Runs each task on a thread of its own: on two cores the common pool has one worker, and a server queued
     * behind another test's blocked task would start too late for its client.
     */
    static final java.util.concurrent.Executor OWN_THREAD = task -> {
        Thread t = new Thread(task, "test-server");
        t.setDaemon(true);
        t.start();
    };

    /** Runs a server in a thread and a client in this one. */
    static Cli.Result[] pair(List<String> server, List<String> client) throws Exception {
        List<String> args = new ArrayList<>(server);
        // a server whose client failed must not outlive the test, holding its address for the tests after it
        if (List.of("perf", "pingpong").contains(args.get(0)) && !args.contains("--timeout")) args.addAll(List.of("--timeout", "60"));
        CompletableFuture<Cli.Result> s = CompletableFuture.supplyAsync(() -> Cli.run(args.toArray(String[]::new)), OWN_THREAD);
        Cli.Result c = Cli.run(client.toArray(String[]::new));
        Cli.Result sr = s.get(60, TimeUnit.SECONDS);
        return new Cli.Result[] {sr, c};
    }

    @Test
    void serverAndClientPingPong() throws Exception {
        Cli.Result[] r = pair(List.of("pingpong", "--bind", "127.0.1.1", "-p", "28515", "-n", "20", "-s", "64", "-g", "0", "-l", "3"),
                List.of("pingpong", "127.0.1.1", "--bind", "127.0.1.2", "-p", "28515", "-n", "20", "-s", "64", "-c"));
        for (Cli.Result x : r) {
            assertEquals(0, x.exit(), x.out() + x.err());
            List<String> lines = x.outLines();
            assertEquals(4, lines.size(), x.out());
            assertTrue(LOCAL.matcher(lines.get(0)).matches(), lines.get(0));
            assertTrue(REMOTE.matcher(lines.get(1)).matches(), lines.get(1));
            assertTrue(lines.get(2).matches("2560 bytes in \\d+\\.\\d\\d seconds = \\d+\\.\\d\\d Mbit/sec"), lines.get(2));
            assertTrue(lines.get(3).matches("20 iters in \\d+\\.\\d\\d seconds = \\d+\\.\\d\\d usec/iter"), lines.get(3));
        }
        // each side's local QPN/PSN is the other's remote
        assertEquals(r[0].outLines().get(0).substring(17), r[1].outLines().get(1).substring(17));
        assertEquals(r[1].outLines().get(0).substring(17), r[0].outLines().get(1).substring(17));
    }

    /** ibv_rc_pingpong's -d and -i are accepted: our own name quietly, another name with a note. */
    @Test
    void deviceAndPortOptionsOfRcPingpong() throws Exception {
        Cli.Result[] r = pair(List.of("pingpong", "--bind", "127.0.1.1", "-p", "28517", "-n", "5", "-d", "jroce0", "-i", "1"),
                List.of("pingpong", "-d", "rxe0", "-i", "1", "127.0.1.1", "--bind", "127.0.1.2", "-p", "28517", "-n", "5"));
        assertEquals(0, r[0].exit(), r[0].out() + r[0].err());
        assertEquals(0, r[1].exit(), r[1].out() + r[1].err());
        assertEquals("", r[0].err());
        assertEquals("jroce pingpong: note: -d rxe0 is not opened; jroce runs its own device jroce0 on 127.0.1.2 (chosen by --bind, "
                + "not by -d)", r[1].err().strip());
        usageError("invalid -i/--ib-port 2", "pingpong", "--bind", "127.0.1.1", "-i", "2");
    }

    /**
     * {@code --ud} (ibv_ud_pingpong): the same exchange and output, the local line with ud_pingpong's ": GID"; the
     * client validates the echoed payload and the GRH source; its pcap decodes as UD SEND with DETH Q_Key
     * 0x11111111 in {@code jroce inspect}.
     */
    @Test
    void udPingPong(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        String pcap = dir.resolve("ud.pcap").toString();
        Cli.Result[] r = pair(List.of("pingpong", "--ud", "--bind", "127.77.42.1", "-p", "28541", "-n", "50", "-s", "1000", "-g", "0"),
                List.of("pingpong", "--ud", "127.77.42.1", "--bind", "127.77.42.2", "-p", "28541", "-n", "50", "-s", "1000", "-c", "--pcap", pcap));
        for (Cli.Result x : r) {
            assertEquals(0, x.exit(), x.out() + x.err());
            List<String> lines = x.outLines();
            assertEquals(4, lines.size(), x.out());
            assertTrue(lines.get(0).matches("  local address:  LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}: GID ::ffff:127\\.77\\.42\\.[12]"), lines.get(0));
            assertTrue(lines.get(1).matches("  remote address: LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID ::ffff:127\\.77\\.42\\.[12]"), lines.get(1));
            assertTrue(lines.get(2).matches("100000 bytes in \\d+\\.\\d\\d seconds = \\d+\\.\\d\\d Mbit/sec"), lines.get(2));
            assertTrue(lines.get(3).matches("50 iters in \\d+\\.\\d\\d seconds = \\d+\\.\\d\\d usec/iter"), lines.get(3));
        }
        Cli.Result in = Cli.run("inspect", pcap);
        assertEquals(0, in.exit(), in.out() + in.err());
        long udSends = in.outLines().stream().filter(l -> l.contains("UD_SEND_ONLY") && l.contains("deth[qkey=0x11111111 src_qp=0x")
                && l.contains("payload_len=1000") && l.contains("icrc=ok")).count();
        assertEquals(100, udSends, in.out());
    }

    @Test
    void udRefusesMessagesLargerThanThePortMtu() {
        usageError("a UD message is one packet, at most the port MTU 1024", "pingpong", "--ud", "--bind", "127.77.42.1", "-s", "2048", "-m", "1024");
        usageError("at most the port MTU 256", "pingpong", "--ud", "--bind", "127.77.42.1", "-m", "256");
        // without -m, the interface's: loopback's 65536-byte MTU gives 4096, as rxe would take
        usageError("a UD message is one packet, at most the port MTU 4096", "pingpong", "--ud", "--bind", "127.77.42.1", "-s", "8192");
    }

    @Test
    void multiPacketMessagesAreValidated() throws Exception {
        Cli.Result[] r = pair(List.of("pingpong", "--bind", "127.0.1.1", "-p", "28516", "-n", "5", "-s", "9000", "-m", "1024", "-r", "4"),
                List.of("pingpong", "127.0.1.1", "--bind", "127.0.1.2", "-p", "28516", "-n", "5", "-s", "9000", "-m", "1024", "-r", "4", "--chk"));
        assertEquals(0, r[0].exit(), r[0].out() + r[0].err());
        assertEquals(0, r[1].exit(), r[1].out() + r[1].err());
        assertTrue(r[1].out().contains("90000 bytes in "), r[1].out());
        assertTrue(!r[1].out().contains("invalid data"), r[1].out());
    }

    @Test
    void aPeerWithoutGidIsAFailureWithAHint() throws Exception {
        // a fake ibv_rc_pingpong server started without -g: it announces GID 0
        try (ServerSocket ss = new ServerSocket()) {
            ss.bind(new InetSocketAddress("127.0.1.1", 28517));
            CompletableFuture<Void> fake = CompletableFuture.runAsync(() -> {
                try (Socket s = ss.accept()) {
                    s.setSoTimeout(10_000);
                    DataInputStream in = new DataInputStream(s.getInputStream());
                    in.readFully(new byte[52]);
                    s.getOutputStream().write("0000:000033:000001:00000000000000000000000000000000\0".getBytes(StandardCharsets.US_ASCII));
                    in.readFully(new byte[5]);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            Cli.Result c = Cli.run("pingpong", "127.0.1.1", "--bind", "127.0.1.2", "-p", "28517", "-n", "1");
            fake.get(20, TimeUnit.SECONDS);
            assertEquals(1, c.exit(), c.out() + c.err());
            assertEquals(1, c.errLines().size(), c.err());
            assertTrue(c.err().contains("GID 0") && c.err().contains("-g 1"), c.err());
        }
    }

    @Test
    void noServerIsAOneLineFailure() {
        Cli.Result c = Cli.run("pingpong", "127.0.1.1", "--bind", "127.0.1.2", "-p", "28518", "--timeout", "0.3");
        assertEquals(1, c.exit(), c.err());
        assertEquals(1, c.errLines().size(), c.err());
        assertTrue(c.err().contains("cannot connect to TCP 127.0.1.1:28518"), c.err());
    }
}
