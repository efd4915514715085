package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * Debian's unmodified rping (rdmacm-utils, linked against rdma-core's librdmacm.so.1 and libibverbs.so.1) through
 * this module's libraries: both sides through them, and against {@code jroce rping} in both roles. Ten pings of
 * 64 bytes, printed on both sides ({@code -v}) and checked by the client ({@code -V}: a mismatch fails it). Each
 * side's device binds its own address of 127.0.63.0/24. The client starts once the server listens: our library
 * says so with {@code JROCE_VERBS_LOG=debug}, {@code jroce rping -d} prints rping's "rdma_listen" line.
 */
class RpingToolsTest {
    private static final int COUNT = 10;
    private static final String LIBRARY_LISTENING = "jroce: rdma_listen: listening on port 7174";
    private static final String JROCE_LISTENING = "rdma_listen";

    @Test
    void bothSidesThroughTheLibrary() throws Exception {
        String server = "127.0.63.1";
        String client = "127.0.63.2";
        Outputs o = run(rping(server, "-s", "-a", server, "-v", "-C", "" + COUNT), LIBRARY_LISTENING,
                rping(client, "-c", "-a", server, "-v", "-V", "-C", "" + COUNT));
        check(o);
    }

    @Test
    void toolClientAgainstJroceServer() throws Exception {
        String server = "127.0.63.3";
        String client = "127.0.63.4";
        Outputs o = run(new Side(server, ToolPair.jroce("rping", "-s", "-a", server, "-d", "-v", "-C", "" + COUNT, "--timeout", "60")),
                JROCE_LISTENING, rping(client, "-c", "-a", server, "-v", "-V", "-C", "" + COUNT));
        check(o);
    }

    @Test
    void jroceClientAgainstToolServer() throws Exception {
        String server = "127.0.63.5";
        String client = "127.0.63.6";
        Outputs o = run(rping(server, "-s", "-a", server, "-v", "-C", "" + COUNT), LIBRARY_LISTENING,
                new Side(client, ToolPair.jroce("rping", "-c", "-a", server, "-I", client, "-v", "-V", "-C", "" + COUNT, "--timeout", "60")));
        check(o);
    }

    /** Both sides printed every ping, in order, and ended well. */
    private static void check(Outputs o) {
        assertEquals(0, o.clientExit, o.both());
        assertEquals(0, o.serverExit, o.both());
        List<String> client = lines(o.client, "ping data: rdma-ping-");
        List<String> server = lines(o.server, "server ping data: rdma-ping-");
        assertEquals(COUNT, client.size(), o.both());
        assertEquals(COUNT, server.size(), o.both());
        for (int i = 0; i < COUNT; i++) {
            // rping's pattern: "rdma-ping-N: " then letters from 'A' + N, 64 bytes with the terminating NUL
            String data = "rdma-ping-" + i + ": " + (char) ('A' + i);
            assertTrue(client.get(i).startsWith("ping data: " + data) && client.get(i).length() == "ping data: ".length() + 63, o.both());
            assertTrue(server.get(i).startsWith("server ping data: " + data), o.both());
        }
    }

    private static List<String> lines(String out, String prefix) {
        List<String> l = new ArrayList<>();
        for (String s : out.lines().toList()) if (s.startsWith(prefix)) l.add(s);
        return l;
    }

    private record Side(String address, List<String> command) {
        boolean isJava() {
            return command.get(0).endsWith("/java");
        }
    }

    private record Outputs(int serverExit, String server, int clientExit, String client) {
        String both() {
            return "client (exit " + clientExit + "):\n" + client + "\nserver (exit " + serverExit + "):\n" + server;
        }
    }

    /** Debian's rping through the library, its device on {@code address}. */
    private static Side rping(String address, String... args) {
        List<String> cmd = new ArrayList<>(List.of(Tools.tool("rping", "rdmacm-utils")));
        cmd.addAll(List.of(args));
        return new Side(address, cmd);
    }

    /** Starts the server, waits for {@code ready} in its output, runs the client; both must end within 60 s. */
    private static Outputs run(Side server, String ready, Side client) throws Exception {
        Path serverLog = Files.createTempFile("jroce-rping-server", ".log");
        Path clientLog = Files.createTempFile("jroce-rping-client", ".log");
        Process s = null;
        Process c = null;
        try {
            s = Tools.start(env(server), serverLog, !server.isJava(), server.command().toArray(String[]::new));
            awaitLine(s, serverLog, ready);
            c = Tools.start(env(client), clientLog, !client.isJava(), client.command().toArray(String[]::new));
            boolean clientDone = c.waitFor(60, TimeUnit.SECONDS);
            boolean serverDone = s.waitFor(clientDone ? 30 : 1, TimeUnit.SECONDS);
            if (!clientDone) c.destroyForcibly().waitFor();
            if (!serverDone) s.destroyForcibly().waitFor();
            Outputs o = new Outputs(s.exitValue(), Files.readString(serverLog, StandardCharsets.UTF_8),
                    c.exitValue(), Files.readString(clientLog, StandardCharsets.UTF_8));
            assertTrue(clientDone && serverDone, "rping did not finish in time\n" + o.both());
            return o;
        } finally {
            if (c != null) c.destroyForcibly().waitFor();
            if (s != null) s.destroyForcibly().waitFor();
            Files.deleteIfExists(serverLog);
            Files.deleteIfExists(clientLog);
        }
    }

    private static Map<String, String> env(Side side) {
        return Map.of("JROCE_ADDR", side.address(), "JROCE_CLASSPATH", System.getProperty("java.class.path"),
                "JROCE_VERBS_LOG", "debug");
    }

    /** Waits until the server's output has a line starting with {@code ready}, or the server ends. */
    private static void awaitLine(Process p, Path log, String ready) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            String out = Files.readString(log, StandardCharsets.UTF_8);
            if (out.lines().anyMatch(l -> l.startsWith(ready))) return;
            if (!p.isAlive()) fail("the server ended before listening:\n" + out);
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2)); // re-read the log: a line written raises no event here
        }
        fail("the server did not listen within 60 s:\n" + Files.readString(log, StandardCharsets.UTF_8));
    }
}
