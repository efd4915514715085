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
        // -d: the server prints rdma_listen once it listens; the client starts after that, as a user starts rping's
        // client after its server (a REQ before the listen is rejected, REJ 8, and rping does not retry it)
        try (Jroce.Run server = Jroce.start(work, "rping", "-s", "-d", "-a", SERVER, "-p", p, "-S", "64");
             Jroce.Run client = startWhenListening(server, "rping", "-c", "-a", SERVER, "--bind", CLIENT, "-p", p, "-S", "64",
                     "-C", "0", "-v", "--timeout", "30")) {
            awaitPings(client, 5);
            Jroce.Run stopped = stopServer ? server : client;
            Jroce.Run other = stopServer ? client : server;
            String stoppedName = stopServer ? "server" : "client";
            String otherName = stopServer ? "client" : "server";
            stopped.process.destroy(); // SIGTERM
            assertTrue(stopped.process.waitFor(10, TimeUnit.SECONDS), "the " + stoppedName + " did not exit on SIGTERM");
            long t0 = System.nanoTime();
            int rc = other.await(30);
            double s = (System.nanoTime() - t0) / 1e9;
            // the other side ends on the DREQ: exit 0 between pings; exit 1 "peer disconnected" when the DREQ cut off a
            // transfer it was waiting for (rping's own server then fails its "wait for RDMA_WRITE_COMPLETE" alike).
            // Without the DREQ it would wait for its retries to run out (RETRY_EXC_ERR, several seconds)
            assertTrue(rc == 0 || rc == 1 && other.err().contains("peer disconnected"), "exit " + rc + ": " + other.describe());
            assertTrue(s < DISCONNECT_SECONDS, "the " + otherName + " took " + s + " s to see the disconnect: " + other.describe());
            if (stopServer) assertTrue(client.err().contains("the server disconnected"), client.describe());
        }
    }

    /** Starts the client once {@code server} (rping -s -d) has printed rdma_listen, or fails after 60 s. */
    private Jroce.Run startWhenListening(Jroce.Run server, String... client) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!server.out().contains("rdma_listen")) {
            assertTrue(server.process.isAlive(), "the server ended early: " + server.describe());
            assertTrue(System.nanoTime() < deadline, "the server did not listen within 60 s: " + server.describe());
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
        return Jroce.start(work, client);
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
