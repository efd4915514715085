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
            boolean serverDone = s.waitFor(clientDone ? 30 : 1, TimeUnit.SECONDS);
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
