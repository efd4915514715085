package io.jroce.cli.rping;

import io.jroce.endpoint.Device;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.RcConnect;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** rping's data protocol between two jroce devices whose QPs {@link RcConnect} connected (no CM). */
class RpingSessionTest {
    private static final InetAddress A = ip("127.77.53.1");
    private static final InetAddress B = ip("127.77.53.2");

    @ParameterizedTest
    @ValueSource(ints = {64, 4096, RpingSession.MIN_SIZE, RpingSession.MAX_SIZE})
    void pingsVerifyAndPrintRpingsLines(int size) throws Exception {
        StringWriter cOut = new StringWriter();
        StringWriter sOut = new StringWriter();
        try (Device a = Device.open(A); Device b = Device.open(B);
             RpingSession server = new RpingSession(a.allocPd(), true, new RpingSession.Options(size, true, true, false), new PrintWriter(sOut), new PrintWriter(System.err));
             RpingSession client = new RpingSession(b.allocPd(), false, new RpingSession.Options(size, true, true, false), new PrintWriter(cOut), new PrintWriter(System.err))) {
            connect(server, client);
            AtomicBoolean gone = new AtomicBoolean();
            server.disconnectedWhen(gone::get);
            CompletableFuture<Void> srv = CompletableFuture.runAsync(() -> run(server::runServer));
            assertTrue(client.runClient(3));
            gone.set(true);
            srv.get(10, TimeUnit.SECONDS);
        }
        List<String> lines = cOut.toString().lines().toList();
        assertEquals(3, lines.size(), cOut.toString());
        String first = expected(0, 65, size);
        assertEquals("ping data: " + first, lines.get(0));
        assertEquals("ping data: " + expected(2, 67, size), lines.get(2));
        assertEquals(size - 1, first.length());
        assertEquals("server ping data: " + first, sOut.toString().lines().findFirst().orElseThrow());
    }

    @Test
    void serverRefusesAnAdvertisementLargerThanItsBuffer() throws Exception {
        try (Device a = Device.open(A); Device b = Device.open(B);
             RpingSession server = new RpingSession(a.allocPd(), true, new RpingSession.Options(64, false, false, false), new PrintWriter(new StringWriter()), new PrintWriter(System.err));
             RpingSession client = new RpingSession(b.allocPd(), false, new RpingSession.Options(128, false, false, false), new PrintWriter(new StringWriter()), new PrintWriter(System.err))) {
            connect(server, client);
            CompletableFuture<Void> srv = CompletableFuture.runAsync(() -> run(server::runServer));
            CompletableFuture<Void> cli = CompletableFuture.runAsync(() -> run(() -> assertEquals(false, client.runClient(1))));
            Throwable t = assertThrows(Exception.class, () -> srv.get(10, TimeUnit.SECONDS));
            assertTrue(String.valueOf(t.getCause()).contains("-S must match"), String.valueOf(t));
            AtomicBoolean gone = new AtomicBoolean();
            client.disconnectedWhen(gone::get);
            gone.set(true);
            cli.get(10, TimeUnit.SECONDS); // rping's client ends quietly (exit 0) when the server disconnects
            assertEquals(QpState.RTS, server.qp().state());
        }
    }

    /** rping's start buffer: "rdma-ping-N: " then letters from {@code start} rotating through 'A'..'z', NUL-terminated. */
    static String expected(int ping, int start, int size) {
        StringBuilder sb = new StringBuilder("rdma-ping-" + ping + ": ");
        int c = start;
        while (sb.length() < size - 1) {
            sb.append((char) c);
            if (++c > 122) c = 65;
        }
        return sb.toString();
    }

    private static void connect(RpingSession server, RpingSession client) {
        RcConnect.Params p = RcConnect.Params.defaults();
        RcConnect.toInit(server.qp(), p);
        RcConnect.toInit(client.qp(), p);
        server.postFirstRecv();
        client.postFirstRecv();
        RcConnect.connectPair(server.qp(), 0x100, client.qp(), 0x200, p);
    }

    interface Body {
        void run() throws IOException, InterruptedException;
    }

    private static void run(Body b) {
        try {
            b.run();
        } catch (IOException | InterruptedException e) {
            throw new RuntimeException(e);
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
