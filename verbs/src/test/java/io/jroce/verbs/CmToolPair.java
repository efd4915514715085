package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A server and a client that connect through the RDMA connection manager (no TCP port to watch): each is a tool
 * through this module's libraries or a Java command, its device on its own address. The client starts once a line
 * of the server's output says it listens: our librdmacm prints {@link #LIBRARY_LISTENING} under
 * {@code JROCE_VERBS_LOG=debug}, which every side gets.
 */
final class CmToolPair {
    private CmToolPair() {}

    /** What librdmacm prints, with JROCE_VERBS_LOG=debug, once rdma_listen has succeeded; the port follows. */
    static final String LIBRARY_LISTENING = "jroce: rdma_listen: listening on port ";

    record Side(String address, List<String> command) {
        boolean isJava() {
            return command.get(0).endsWith("/java");
        }
    }

    record Outputs(int serverExit, String server, int clientExit, String client) {
        String both() {
            return "client (exit " + clientExit + "):\n" + client + "\nserver (exit " + serverExit + "):\n" + server;
        }
    }

    /** Starts the server, waits for {@code ready} in its output, runs the client; both must end within 60 s. */
    static Outputs run(Side server, String ready, Side client) throws Exception {
        return run(server, ready, client, false);
    }

    /**
     * As {@link #run(Side, String, Side)}; with {@code endServer} the server is ended as soon as the client has ended
     * (its exit status is then the one the forced end gives), for a client that fails and leaves its server waiting.
     */
    static Outputs run(Side server, String ready, Side client, boolean endServer) throws Exception {
        Path serverLog = Files.createTempFile("jroce-cm-server", ".log");
        Path clientLog = Files.createTempFile("jroce-cm-client", ".log");
        Process s = null;
        Process c = null;
        try {
            s = Tools.start(env(server), serverLog, !server.isJava(), server.command().toArray(String[]::new));
            awaitLine(s, serverLog, ready);
            c = Tools.start(env(client), clientLog, !client.isJava(), client.command().toArray(String[]::new));
            boolean clientDone = c.waitFor(60, TimeUnit.SECONDS);
            if (clientDone && endServer) s.destroyForcibly();
            // a server whose client failed may wait for it for ever: a few seconds to end, not thirty
            boolean serverDone = s.waitFor(clientDone ? (c.exitValue() == 0 ? 30 : 3) : 1, TimeUnit.SECONDS);
            if (!clientDone) c.destroyForcibly().waitFor();
            if (!serverDone) s.destroyForcibly().waitFor();
            Outputs o = new Outputs(s.exitValue(), Files.readString(serverLog, StandardCharsets.UTF_8),
                    c.exitValue(), Files.readString(clientLog, StandardCharsets.UTF_8));
            assertTrue(clientDone && serverDone, String.join(" ", client.command()) + " did not finish in time\n" + o.both());
            return o;
        } finally {
            if (c != null) c.destroyForcibly().waitFor();
            if (s != null) s.destroyForcibly().waitFor();
            Files.deleteIfExists(serverLog);
            Files.deleteIfExists(clientLog);
        }
    }

    /** What perftest prints when its test connection is rejected because the server's listener was not up yet. */
    static final String REJ8 = "RDMA_CM_EVENT_REJECTED; error: 8";

    /** How many times a perftest -R pair runs at most when its client keeps losing perftest's own race. */
    static final int PERFTEST_CM_TRIES = 4;

    /**
     * As {@link #run(Side, String, Side)} for perftest with {@code -R} on both sides, whose own race a client can lose:
     * after the exchange on its first connection, the server opens a second listener for the test QPs while the
     * client connects them, and a REQ that comes first gets REJ 8 (no listener; cm.c cm_req_handler does the same).
     * perftest's later versions retry that connection with new ids; Debian's 4.5-0.17 retries on the ids it has
     * destroyed, which fails. On this host about one pair in eight loses the race, so a client that failed that way
     * is run again with a new server, up to {@link #PERFTEST_CM_TRIES} times, and the test's output says so.
     */
    static Outputs runPerftestCm(Side server, String ready, Side client) throws Exception {
        for (int attempt = 1; ; attempt++) {
            Outputs o = null;
            try {
                o = run(server, ready, client);
            } catch (AssertionError e) {
                if (attempt == PERFTEST_CM_TRIES || e.getMessage() == null || !e.getMessage().contains(REJ8)) throw e;
            }
            if (o != null && (o.clientExit() == 0 || !o.client().contains(REJ8) || attempt == PERFTEST_CM_TRIES)) return o;
            System.out.println(String.join(" ", client.command()) + ": the test connection was rejected (REJ 8) before the "
                    + "server's second rdma_listen, perftest -R's own race; run again (" + attempt + " of " + PERFTEST_CM_TRIES + ")");
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
