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
        try (Jroce.Run server = Jroce.start(work, "rping", "-s", "-a", SERVER, "-p", "7181", "-S", "64");
             Jroce.Run client = Jroce.start(work, "rping", "-c", "-a", SERVER, "--bind", CLIENT, "-p", "7181", "-S", "64", "-C", "0",
                     "-v", "--timeout", "30")) {
            awaitPings(client, 5);
            server.process.destroy(); // SIGTERM
            assertTrue(server.process.waitFor(10, TimeUnit.SECONDS), "the server did not exit on SIGTERM");
            long t0 = System.nanoTime();
            assertEquals(0, client.await(30), client.describe());
            double s = (System.nanoTime() - t0) / 1e9;
            assertTrue(s < DISCONNECT_SECONDS, "the client took " + s + " s to see the disconnect: " + client.describe());
            assertTrue(client.err().contains("the server disconnected"), client.describe());
        }
    }

    @Test
    void aClientStoppedWithSigtermDisconnectsFromItsServer() throws Exception {
        try (Jroce.Run server = Jroce.start(work, "rping", "-s", "-a", SERVER, "-p", "7182", "-S", "64");
             Jroce.Run client = Jroce.start(work, "rping", "-c", "-a", SERVER, "--bind", CLIENT, "-p", "7182", "-S", "64", "-C", "0",
                     "-v", "--timeout", "30")) {
            awaitPings(client, 5);
            client.process.destroy(); // SIGTERM
            assertTrue(client.process.waitFor(10, TimeUnit.SECONDS), "the client did not exit on SIGTERM");
            long t0 = System.nanoTime();
            assertEquals(0, server.await(30), server.describe());
            double s = (System.nanoTime() - t0) / 1e9;
            assertTrue(s < DISCONNECT_SECONDS, "the server took " + s + " s to see the disconnect: " + server.describe());
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
