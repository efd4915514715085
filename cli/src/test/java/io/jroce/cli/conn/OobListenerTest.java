package io.jroce.cli.conn;

import io.jroce.cli.BadPeers;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The listener behind every server role: peers that send garbage or nothing are dropped (one WARN each) and the
 * listener keeps waiting for a real peer until its own timeout. The "protocol" here: the client sends "HELLO".
 */
class OobListenerTest {
    private static final AtomicInteger PORT = new AtomicInteger(28640);
    private static final String HOST = "127.0.1.1";
    private static final byte[] HELLO = "HELLO".getBytes(StandardCharsets.US_ASCII);

    private static byte[] hello(OobSocket s) throws IOException {
        byte[] b = s.readFully(HELLO.length, "the greeting");
        if (!Arrays.equals(b, HELLO)) throw new IOException("peer " + s.peer() + " did not say HELLO");
        return b;
    }

    private static CompletableFuture<OobListener.Accepted<byte[]>> listen(int port, Duration timeout, Duration greeting) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return OobListener.accept(FakePeer.A, port, timeout, greeting, "test exchange", OobListenerTest::hello);
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    /** A real client: says HELLO, then reads one byte of answer. */
    private static Socket realClient(int port) throws IOException {
        Socket s = BadPeers.connect(HOST, port);
        s.getOutputStream().write(HELLO);
        s.getOutputStream().flush();
        return s;
    }

    /** A server without --timeout: it waits for its client until interrupted, however long its reads may take. */
    @Test
    void withoutAWaitTheServerOutlastsItsReadTimeoutAndTheClientIsServed() throws Exception {
        int port = PORT.getAndIncrement();
        Duration reads = Duration.ofMillis(100);
        CompletableFuture<OobListener.Accepted<byte[]>> f = CompletableFuture.supplyAsync(() -> {
            try {
                return OobListener.acceptWaiting(FakePeer.A, port, null, reads, "test exchange", OobListenerTest::hello);
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
        // five read timeouts later the listener still waits (a bounded wait of that length would have failed)
        assertThrows(java.util.concurrent.TimeoutException.class, () -> f.get(500, java.util.concurrent.TimeUnit.MILLISECONDS));
        try (Socket real = realClient(port); OobSocket got = FakePeer.await(f).socket()) {
            assertArrayEquals(HELLO, f.get().greeting());
            assertEquals(reads, got.timeout(), "the accepted connection reads with the read timeout");
        }
    }

    @Test
    void aGivenWaitEndsInAPeerTimeout() {
        int port = PORT.getAndIncrement();
        PeerTimeout e = assertThrows(PeerTimeout.class, () -> OobListener.acceptWaiting(FakePeer.A, port, Duration.ofMillis(200),
                Duration.ofSeconds(5), "test exchange", OobListenerTest::hello));
        assertTrue(e.getMessage().startsWith("no client connected to TCP 127.0.1.1:" + port + " within 200 ms"), e.getMessage());
    }

    @Test
    void aGarbagePeerIsDroppedAndTheRealClientThatFollowsIsServed() throws Exception {
        int port = PORT.getAndIncrement();
        try (BadPeers.ListenerLog log = new BadPeers.ListenerLog()) {
            var f = listen(port, Duration.ofSeconds(20), OobListener.GREETING_TIMEOUT);
            BadPeers.garbage(HOST, port); // returns once the listener closed it
            try (Socket real = realClient(port); OobSocket got = FakePeer.await(f).socket()) {
                OobListener.Accepted<byte[]> a = f.get();
                assertArrayEquals(HELLO, a.greeting());
                assertEquals(1, a.dropped());
                assertEquals(real.getLocalAddress().getHostAddress() + ":" + real.getLocalPort(), got.peer(), "the real client's connection won");
                got.write(new byte[] {42});
                assertEquals(42, real.getInputStream().read(), "the connection handed over is open");
            }
            List<String> lines = log.lines();
            assertEquals(1, lines.size(), lines.toString());
            assertTrue(lines.get(0).startsWith("TCP 127.0.1.1:" + port + ": dropped connection 1 from ") && lines.get(0).contains("which did not open the test exchange"),
                    lines.get(0));
        }
    }

    /** The silent peer is still pending (never dropped) when the real client is served: it did not hold the listener. */
    @Test
    void aSilentPeerDoesNotHoldUpTheRealClient() throws Exception {
        int port = PORT.getAndIncrement();
        try (BadPeers.ListenerLog log = new BadPeers.ListenerLog()) {
            var f = listen(port, Duration.ofSeconds(30), Duration.ofSeconds(30));
            try (Socket silent = BadPeers.connect(HOST, port); Socket real = realClient(port)) {
                OobListener.Accepted<byte[]> a = FakePeer.await(f);
                a.socket().close();
                assertEquals(0, a.dropped(), "served while the silent peer was still waiting for its greeting timeout");
                BadPeers.awaitClosed(silent); // the listener hung up on it when it was done
            }
            assertEquals(List.of(), log.lines(), "nobody was dropped as bad");
        }
    }

    @Test
    void onlyBadPeersUntilTheTimeoutFailsNamingHowManyWereDropped() throws Exception {
        int port = PORT.getAndIncrement();
        var f = listen(port, Duration.ofSeconds(3), Duration.ofMillis(300));
        BadPeers.garbage(HOST, port);
        BadPeers.garbage(HOST, port);
        try (Socket silent = BadPeers.connect(HOST, port)) {
            BadPeers.awaitClosed(silent); // dropped after the 300 ms greeting timeout
        }
        IOException e = assertThrows(IOException.class, () -> FakePeer.await(f));
        assertTrue(e.getMessage().contains("no client connected to TCP 127.0.1.1:" + port + " within 3 s; dropped 3 connections that did not "
                + "open the test exchange"), e.getMessage());
        assertTrue(!e.getMessage().contains("\n"), e.getMessage());
    }

    /** With every greeting slot held by a silent peer, the next client waits in the backlog, then is served. */
    @Test
    void pendingConnectionsAreBoundedAndTheNextClientWaitsForASlot() throws Exception {
        int port = PORT.getAndIncrement();
        var f = listen(port, Duration.ofSeconds(20), Duration.ofMillis(500));
        List<Socket> silent = new ArrayList<>();
        try {
            for (int i = 0; i < OobListener.MAX_PENDING; i++) silent.add(BadPeers.connect(HOST, port));
            try (Socket real = realClient(port)) {
                OobListener.Accepted<byte[]> a = FakePeer.await(f);
                a.socket().close();
                // unbounded, the real client would have been served at once, with nobody dropped yet
                assertTrue(a.dropped() >= 1, "the real client got a slot once a silent one timed out: " + a.dropped());
            }
        } finally {
            for (Socket s : silent) s.close();
        }
    }

    @Test
    void aListenerThatCannotBindSaysSo() throws Exception {
        int port = PORT.getAndIncrement();
        try (java.net.ServerSocket taken = new java.net.ServerSocket(port, 1, FakePeer.A)) {
            IOException e = assertThrows(IOException.class,
                    () -> OobListener.accept(FakePeer.A, port, Duration.ofSeconds(1), "test exchange", OobListenerTest::hello));
            assertTrue(e.getMessage().startsWith("cannot listen on TCP 127.0.1.1:" + port), e.getMessage());
        }
    }
}
