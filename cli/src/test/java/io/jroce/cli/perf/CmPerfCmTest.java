package io.jroce.cli.perf;

import io.jroce.cli.rping.MemoryCm;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.DeviceConfig;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QueuePair;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** perf -R's connection-manager steps (CmPerfCm) over the in-memory QP 1 network, server and clients in one JVM. */
class CmPerfCmTest {
    private static final InetAddress S = ip("127.77.53.61");
    private static final InetAddress C = ip("127.77.53.62");
    private static final Duration T = Duration.ofSeconds(10);
    private static final int PORT = 29311;

    /**
     * A client that leaves after its exchange connection (perf gives up, or is killed) while the server waits for
     * its test connections: the server must fail then, not take the next client's exchange request as the first
     * test connection of the one that left (the server would then wait for a second one that never comes, and the
     * next client's exchange would be connected to a test QP).
     */
    @Test
    void theServerDoesNotTakeTheNextClientsExchangeAsATestConnection() throws Exception {
        try (MemoryCm net = MemoryCm.install();
             Node server = new Node(S, null);
             CmPerfCm srvCm = server.cm()) {
            CompletableFuture<Void> exchange = CompletableFuture.runAsync(() -> io(() -> srvCm.connectExchange(server.qp(), 0)));
            try (Node first = new Node(C, S); CmPerfCm cm1 = first.cm()) {
                connectExchange(first, cm1);
                exchange.get(T.toSeconds(), TimeUnit.SECONDS);
            }
            CompletableFuture<Void> tests = CompletableFuture.runAsync(() -> io(() -> srvCm.connectTests(List.of(server.qp(), server.qp()), 0)));
            // the first client closed its ids: its exchange connection got a DREQ; a second client comes
            ExecutionException failed = assertThrows(ExecutionException.class, () -> tests.get(T.toSeconds(), TimeUnit.SECONDS));
            assertTrue(String.valueOf(failed.getCause().getCause()).contains("exchange connection ended"), String.valueOf(failed.getCause()));
            try (Node second = new Node(C, S); CmPerfCm cm2 = second.cm()) {
                QueuePair qp = second.qp();
                IOException e = assertThrows(IOException.class, () -> cm2.connectExchange(qp, 0));
                assertTrue(e.getMessage().contains("REJECTED"), e.getMessage());
            }
        }
    }

    /**
     * A client whose test REQ reaches the server after the exchange connection and before the server turns to its
     * test QPs (perftest's client connects them as soon as its sync is done): the server must hold the request and
     * accept it, not reject it with REJ 8 as a server without a listener would (perftest releases whose client does
     * not retry then fail). The server turns to its test QPs only once its agent has handled the REQ.
     */
    @Test
    void aTestRequestThatComesBeforeTheServerListensForItWaitsForTheServer() throws Exception {
        try (MemoryCm net = MemoryCm.install();
             Node server = new Node(S, null);
             CmPerfCm srvCm = server.cm();
             Node client = new Node(C, S);
             CmPerfCm cm = client.cm()) {
            CompletableFuture<Void> exchange = CompletableFuture.runAsync(() -> io(() -> srvCm.connectExchange(server.qp(), 0)));
            connectExchange(client, cm);
            exchange.get(T.toSeconds(), TimeUnit.SECONDS);
            long madsIn = srvCm.counters().madsIn();
            long rejSent = srvCm.counters().rejSent();
            QueuePair clientQp = client.qp();
            CompletableFuture<Void> clientTests = CompletableFuture.runAsync(() -> io(() -> cm.connectTests(List.of(clientQp), 0)));
            long deadline = System.nanoTime() + T.toNanos();
            while (srvCm.counters().madsIn() == madsIn) { // the agent handles a MAD before it answers counters()
                assertTrue(System.nanoTime() < deadline, "the client's REQ never reached the server");
                LockSupport.parkNanos(1_000_000);
            }
            QueuePair serverQp = server.qp();
            srvCm.connectTests(List.of(serverQp), 0);
            clientTests.get(T.toSeconds(), TimeUnit.SECONDS);
            assertEquals(rejSent, srvCm.counters().rejSent(), "the early REQ was rejected");
            assertEquals(QpState.RTS, serverQp.state());
            assertEquals(QpState.RTS, clientQp.state());
        }
    }

    /** Same, with the second client arriving while the server still listens for the first one's test connections. */
    @Test
    void aRequestQueuedWhenTheServerGivesUpIsRejected() throws Exception {
        try (MemoryCm net = MemoryCm.install();
             Node server = new Node(S, null);
             CmPerfCm srvCm = server.cm()) {
            CompletableFuture<Void> exchange = CompletableFuture.runAsync(() -> io(() -> srvCm.connectExchange(server.qp(), 0)));
            Node first = new Node(C, S);
            CmPerfCm cm1 = first.cm();
            connectExchange(first, cm1);
            exchange.get(T.toSeconds(), TimeUnit.SECONDS);
            CompletableFuture<Void> tests = CompletableFuture.runAsync(() -> io(() -> srvCm.connectTests(List.of(server.qp(), server.qp()), 0)));
            cm1.close();
            first.close();
            try (Node second = new Node(C, S); CmPerfCm cm2 = second.cm()) {
                QueuePair qp = second.qp();
                IOException e = assertThrows(IOException.class, () -> cm2.connectExchange(qp, 0));
                assertTrue(e.getMessage().contains("REJECTED"), e.getMessage());
                assertEquals(QpState.ERR, qp.state());
            }
            ExecutionException failed = assertThrows(ExecutionException.class, () -> tests.get(T.toSeconds(), TimeUnit.SECONDS));
            assertInstanceOf(IOException.class, failed.getCause().getCause());
        }
    }

    /**
     * The client's exchange connection, once the server (started on another thread) listens: a REQ that comes first
     * is rejected (REJ 8), and is made again with a new QP, as a user would start the client again.
     */
    private static void connectExchange(Node client, CmPerfCm cm) throws IOException {
        long deadline = System.nanoTime() + T.toNanos();
        while (true) {
            try {
                cm.connectExchange(client.qp(), 0);
                return;
            } catch (IOException e) {
                if (!e.getMessage().contains("nobody listens") || System.nanoTime() > deadline) throw e;
            }
        }
    }

    private interface IoAction {
        void run() throws IOException;
    }

    private static void io(IoAction a) {
        try {
            a.run();
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    /** A device with a PD and a CQ; {@link #qp} makes RC QPs in RESET. */
    private static final class Node implements AutoCloseable {
        final Device dev;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final InetAddress peer;

        Node(InetAddress local, InetAddress peer) throws IOException {
            this.dev = Device.open(new DeviceConfig(local).port(0));
            this.pd = dev.allocPd();
            this.cq = dev.createCq(64);
            this.peer = peer;
        }

        QueuePair qp() {
            return pd.createQp(new QpInitAttr(cq));
        }

        CmPerfCm cm() throws IOException {
            return new CmPerfCm(dev, Mtu.MTU_1024, peer, PORT, T);
        }

        @Override
        public void close() {
            dev.close();
        }
    }

    private static InetAddress ip(String s) {
        try {
            return InetAddress.getByName(s);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
