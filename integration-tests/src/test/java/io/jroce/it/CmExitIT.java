package io.jroce.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A jroce process stopped with SIGTERM while an rdma_cm connection is up ends it the way the kernel ends a
 * stopped verbs program's connections: its connection manager sends the DREQ before the process exits, so the
 * peer's rping sees the disconnect at once and exits as rping does (0), instead of failing on its QP's retries.
 */
class CmExitIT {
    private static final String SERVER = "127.0.16.1";
    private static final String CLIENT = "127.0.16.2";
    /** Far below the retry budget of the QP (7 retries of 0.5 s and more): only a DREQ ends the peer this soon. */
    private static final long DISCONNECT_SECONDS = 3;

    @TempDir
    Path work;

    @Test
    void aServerStoppedWithSigtermDisconnectsItsClient() throws Exception {
        stopOneSideWithSigterm(7181, true);
    }

    @Test
    void aClientStoppedWithSigtermDisconnectsFromItsServer() throws Exception {
        stopOneSideWithSigterm(7182, false);
    }

    /**
     * An rping server and client on {@code port}; once the client has pinged, the server ({@code stopServer}) or the
     * client gets SIGTERM, and the other side must exit 0 within {@link #DISCONNECT_SECONDS}.
     */
    private void stopOneSideWithSigterm(int port, boolean stopServer) throws Exception {
        String p = Integer.toString(port);
        try (Jroce.Run server = Jroce.start(work, "rping", "-s", "-a", SERVER, "-p", p, "-S", "64");
             Jroce.Run client = Jroce.start(work, "rping", "-c", "-a", SERVER, "--bind", CLIENT, "-p", p, "-S", "64", "-C", "0",
                     "-v", "--timeout", "30")) {
            awaitPings(client, 5);
            Jroce.Run stopped = stopServer ? server : client;
            Jroce.Run other = stopServer ? client : server;
            String stoppedName = stopServer ? "server" : "client";
            String otherName = stopServer ? "client" : "server";
            stopped.process.destroy(); // SIGTERM
            assertTrue(stopped.process.waitFor(10, TimeUnit.SECONDS), "the " + stoppedName + " did not exit on SIGTERM");
            long t0 = System.nanoTime();
            assertEquals(0, other.await(30), other.describe());
            double s = (System.nanoTime() - t0) / 1e9;
            assertTrue(s < DISCONNECT_SECONDS, "the " + otherName + " took " + s + " s to see the disconnect: " + other.describe());
            if (stopServer) assertTrue(client.err().contains("the server disconnected"), client.describe());
        }
    }

    /** Waits until the client has printed {@code n} pings (rping -v), or fails after 60 s. */
    private static void awaitPings(Jroce.Run client, int n) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (client.out().split("ping data: ", -1).length - 1 < n) {
            assertTrue(client.process.isAlive(), "the client ended early: " + client.describe());
            assertTrue(System.nanoTime() < deadline, "no " + n + " pings within 60 s: " + client.describe());
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
    }
}
