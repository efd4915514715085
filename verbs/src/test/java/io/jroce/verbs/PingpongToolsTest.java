package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * Debian's unmodified ibv_rc_pingpong, both sides through this module's libibverbs.so.1: each process embeds a
 * jroce device (its own loopback address) and runs the verbs there. {@code -c} makes each side check the
 * bytes it received. The two addresses are drawn from 127/8 at random so that parallel builds on one host
 * do not share UDP 4791; the seed is printed.
 */
class PingpongToolsTest {

    @Test
    void rcPingpongBothSidesThroughTheLibrary() throws Exception {
        rcPingpong(false);
    }

    @Test
    void rcPingpongWithCompletionEvents() throws Exception {
        rcPingpong(true);
    }

    private void rcPingpong(boolean events) throws Exception {
        long seed = Long.getLong("verbs.seed", System.nanoTime());
        System.out.println("PingpongToolsTest seed " + seed + " (-Dverbs.seed=" + seed + " repeats it)");
        Random random = new Random(seed);
        String server = "127." + (1 + random.nextInt(250)) + "." + random.nextInt(256) + ".1";
        String client = server.substring(0, server.length() - 1) + "2";
        int tcpPort = freeTcpPort();
        String tool = Tools.tool("ibv_rc_pingpong", "ibverbs-utils");
        String iters = "20";

        Map<String, String> env = new HashMap<>();
        env.put("JROCE_CLASSPATH", System.getProperty("java.class.path"));
        Path serverLog = Files.createTempFile("jroce-pingpong-server", ".log");
        Path clientLog = Files.createTempFile("jroce-pingpong-client", ".log");
        Process s = null;
        Process c = null;
        try {
            env.put("JROCE_ADDR", server);
            String[] args = events
                    ? new String[] {tool, "-d", "jroce0", "-g", "1", "-c", "-e", "-n", iters, "-p", "" + tcpPort}
                    : new String[] {tool, "-d", "jroce0", "-g", "1", "-c", "-n", iters, "-p", "" + tcpPort};
            s = Tools.start(env, serverLog, args);
            // the server opens the device (starting its JVM), then listens for the client's TCP exchange
            awaitListening(tcpPort, s, serverLog);

            env.put("JROCE_ADDR", client);
            String[] clientArgs = java.util.Arrays.copyOf(args, args.length + 1);
            clientArgs[args.length] = server;
            c = Tools.start(env, clientLog, clientArgs);

            boolean clientDone = c.waitFor(60, TimeUnit.SECONDS);
            boolean serverDone = s.waitFor(30, TimeUnit.SECONDS);
            String cOut = Files.readString(clientLog, StandardCharsets.UTF_8);
            String sOut = Files.readString(serverLog, StandardCharsets.UTF_8);
            String both = "client:\n" + cOut + "\nserver:\n" + sOut;
            assertTrue(clientDone && serverDone, "ibv_rc_pingpong did not finish\n" + both);
            assertEquals(0, c.exitValue(), both);
            assertEquals(0, s.exitValue(), both);
            assertTrue(cOut.contains(iters + " iters in"), both);
            assertTrue(sOut.contains(iters + " iters in"), both);
            // each side saw the other's GID: the address its device binds
            assertTrue(cOut.contains("remote address: LID 0x0000, QPN 0x"), both);
            assertTrue(cOut.contains("GID ::ffff:" + server), both);
            assertTrue(sOut.contains("GID ::ffff:" + client), both);
        } finally {
            if (c != null) c.destroyForcibly().waitFor();
            if (s != null) s.destroyForcibly().waitFor();
            Files.deleteIfExists(serverLog);
            Files.deleteIfExists(clientLog);
        }
    }

    private static int freeTcpPort() throws Exception {
        try (ServerSocket ss = new ServerSocket(0)) {
            return ss.getLocalPort();
        }
    }

    /** Waits until a TCP socket listens on {@code port} (/proc/net/tcp, state 0A), or the process ends. */
    private static void awaitListening(int port, Process p, Path log) throws Exception {
        String hexPort = String.format(":%04X ", port);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            for (String table : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
                for (String line : Files.readAllLines(Path.of(table))) {
                    String[] f = line.trim().split("\\s+");
                    if (f.length > 3 && f[1].endsWith(hexPort.trim()) && f[3].equals("0A")) return;
                }
            }
            if (!p.isAlive()) fail("the server ended before listening:\n" + Files.readString(log, StandardCharsets.UTF_8));
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2)); // re-read the table: no notification for a listen
        }
        fail("the server did not listen on TCP " + port + " within 60 s:\n" + Files.readString(log, StandardCharsets.UTF_8));
    }
}
