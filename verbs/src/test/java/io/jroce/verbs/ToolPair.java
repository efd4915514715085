package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A verbs tool run as server and client, each process with its own jroce device through this module's
 * library. The two addresses are drawn from 127/8 at random (seeded; the seed is printed) so that parallel
 * builds on one host do not share UDP 4791, and the tools' TCP exchange port is a free one. Either side may
 * instead be a Java command ({@link #jroce}), started without the library's environment. The client
 * starts once the server listens on that port (its device is open by then).
 */
final class ToolPair {
    final String serverAddress;
    final String clientAddress;
    final int tcpPort;
    /** More environment for the client only (JROCE_JAVA_OPTS with a capture, say). */
    Map<String, String> clientEnv = Map.of();

    record Result(int serverExit, String serverOut, int clientExit, String clientOut) {
        String both() {
            return "client (exit " + clientExit + "):\n" + clientOut + "\nserver (exit " + serverExit + "):\n" + serverOut;
        }
    }

    ToolPair(String testName) throws Exception {
        long seed = Long.getLong("verbs.seed", System.nanoTime());
        System.out.println(testName + ": seed " + seed + " (-Dverbs.seed=" + seed + " repeats the addresses)");
        Random random = new Random(seed);
        if (System.getProperty("verbs.net") != null) { // a /24 of the caller's (Tools.net): .101 ... .200
            int host = 101 + 2 * random.nextInt(50);
            serverAddress = Tools.addr(host);
            clientAddress = Tools.addr(host + 1);
        } else {
            serverAddress = "127." + (1 + random.nextInt(250)) + "." + random.nextInt(256) + ".1";
            clientAddress = serverAddress.substring(0, serverAddress.length() - 1) + "2";
        }
        tcpPort = freeTcpPort();
    }

    /**
     * A TCP port free now: in {@code -Dverbs.tcpPorts=FIRST-LAST} when given (the first one free there), else any the
     * system gives.
     */
    private static int freeTcpPort() throws Exception {
        String range = System.getProperty("verbs.tcpPorts");
        if (range == null) {
            try (ServerSocket ss = new ServerSocket(0)) {
                return ss.getLocalPort();
            }
        }
        String[] r = range.split("-");
        for (int p = Integer.parseInt(r[0].trim()); p <= Integer.parseInt(r[1].trim()); p++) {
            try (ServerSocket ss = new ServerSocket(p)) {
                return p;
            } catch (java.io.IOException busy) {
                // the next one
            }
        }
        throw new IllegalStateException("no free TCP port in " + range);
    }

    /** Runs {@code args} on both sides, the client with the server's address appended; both must end in time. */
    Result run(List<String> args, long timeoutSeconds) throws Exception {
        List<String> clientArgs = new ArrayList<>(args);
        clientArgs.add(serverAddress);
        return run(args, clientArgs, timeoutSeconds);
    }

    /** Runs the two commands as given (the client's names the server); both must end in time. */
    Result run(List<String> args, List<String> clientArgs, long timeoutSeconds) throws Exception {
        Map<String, String> env = new HashMap<>();
        env.put("JROCE_CLASSPATH", System.getProperty("java.class.path"));
        Path serverLog = Files.createTempFile("jroce-tool-server", ".log");
        Path clientLog = Files.createTempFile("jroce-tool-client", ".log");
        Process s = null;
        Process c = null;
        try {
            env.put("JROCE_ADDR", serverAddress);
            s = Tools.start(env, serverLog, !isJava(args), args.toArray(String[]::new));
            awaitListening(s, serverLog);
            env.put("JROCE_ADDR", clientAddress);
            env.putAll(clientEnv);
            c = Tools.start(env, clientLog, !isJava(clientArgs), clientArgs.toArray(String[]::new));
            boolean clientDone = c.waitFor(timeoutSeconds, TimeUnit.SECONDS);
            boolean serverDone = s.waitFor(clientDone ? 30 : 1, TimeUnit.SECONDS);
            if (!clientDone) c.destroyForcibly().waitFor();
            if (!serverDone) s.destroyForcibly().waitFor();
            Result r = new Result(s.exitValue(), Files.readString(serverLog, StandardCharsets.UTF_8),
                    c.exitValue(), Files.readString(clientLog, StandardCharsets.UTF_8));
            assertTrue(clientDone && serverDone, String.join(" ", args) + " did not finish in time\n" + r.both());
            return r;
        } finally {
            if (c != null) c.destroyForcibly().waitFor();
            if (s != null) s.destroyForcibly().waitFor();
            Files.deleteIfExists(serverLog);
            Files.deleteIfExists(clientLog);
        }
    }

    /** A Java command (jroce pingpong, jroce exec) gets no library environment: it needs none, or sets it itself. */
    private static boolean isJava(List<String> cmd) {
        return cmd.get(0).endsWith("/java");
    }

    /** The jroce command (the cli module, from this test's class path) with {@code args}. */
    static List<String> jroce(String... args) {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), "io.jroce.cli.Main"));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** Waits until a TCP socket listens on the port (/proc/net/tcp, state 0A), or the server ends. */
    private void awaitListening(Process p, Path log) throws Exception {
        String hexPort = String.format(":%04X", tcpPort);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            for (String table : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
                for (String line : Files.readAllLines(Path.of(table))) {
                    String[] f = line.trim().split("\\s+");
                    if (f.length > 3 && f[1].endsWith(hexPort) && f[3].equals("0A")) return;
                }
            }
            if (!p.isAlive()) fail("the server ended before listening:\n" + Files.readString(log, StandardCharsets.UTF_8));
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2)); // re-read the table: a listen raises no event here
        }
        fail("the server did not listen on TCP " + tcpPort + " within 60 s:\n" + Files.readString(log, StandardCharsets.UTF_8));
    }
}
