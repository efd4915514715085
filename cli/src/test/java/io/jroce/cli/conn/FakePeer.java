package io.jroce.cli.conn;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.UnknownHostException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Test-side peers written directly on java.net sockets (not on the classes under test), each speaking one
 * side of an exchange the way the C tools do. Addresses 127.0.1.1 / 127.0.1.2 only.
 */
final class FakePeer {
    static final InetAddress A = addr("127.0.1.1");
    static final InetAddress B = addr("127.0.1.2");

    private FakePeer() {
    }

    static InetAddress addr(String s) {
        try {
            return InetAddress.getByName(s);
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    /** What a fake peer does on its accepted or connected socket. */
    @FunctionalInterface
    interface Script {
        void run(DataInputStream in, OutputStream out) throws Exception;
    }

    /** A listening fake server; {@link #run} accepts one client in the background. */
    static final class Server implements AutoCloseable {
        final ServerSocket socket;

        Server(InetAddress bind) throws IOException {
            socket = new ServerSocket();
            socket.setReuseAddress(true);
            socket.bind(new InetSocketAddress(bind, 0), 1);
        }

        int port() {
            return socket.getLocalPort();
        }

        CompletableFuture<Void> run(Script script) {
            return CompletableFuture.runAsync(() -> {
                try (Socket s = socket.accept()) {
                    s.setSoTimeout(10_000);
                    script.run(new DataInputStream(s.getInputStream()), s.getOutputStream());
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    /** A fake client connecting (with retries while the server under test is not yet listening). */
    static CompletableFuture<Void> client(InetAddress host, int port, Script script) {
        return CompletableFuture.runAsync(() -> {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (true) {
                try (Socket s = new Socket()) {
                    s.connect(new InetSocketAddress(host, port), 1000);
                    s.setSoTimeout(10_000);
                    script.run(new DataInputStream(s.getInputStream()), s.getOutputStream());
                    return;
                } catch (java.net.ConnectException e) {
                    // the server under test is not listening yet: try again at once (refusals are immediate)
                    if (System.nanoTime() > deadline) throw new IllegalStateException(e);
                    Thread.onSpinWait();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }
        });
    }

    static byte[] read(InputStream in, int n) throws IOException {
        byte[] b = new byte[n];
        new DataInputStream(in).readFully(b);
        return b;
    }

    /** True if the stream is at its end (the peer closed). */
    static boolean atEof(InputStream in) throws IOException {
        return in.read() < 0;
    }

    static <T> T await(CompletableFuture<T> f) throws Exception {
        try {
            return f.get(20, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof Error err) throw err;
            if (c instanceof IllegalStateException && c.getCause() instanceof Exception x) throw x;
            if (c instanceof Exception x) throw x;
            throw e;
        } catch (TimeoutException e) {
            throw new AssertionError("fake peer did not finish within 20 s", e);
        }
    }
}
