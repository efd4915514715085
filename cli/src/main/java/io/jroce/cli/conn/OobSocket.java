package io.jroce.cli.conn;

import io.jroce.wire.IpText;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NoRouteToHostException;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * One out-of-band TCP connection, as ibv_rc_pingpong and perftest use: the server side comes from
 * {@link OobListener} (which waits for a peer that opens the exchange properly), the client connects.
 * Every blocking step has a timeout, so a silent or absent peer ends in an {@link IOException} whose
 * one-line message says what to do, never in a hang.
 *
 * <p>A connecting client retries a refused connection until its timeout, so it may be started before the
 * server (ibv_rc_pingpong would give up at once).
 */
public final class OobSocket implements ExchangeChannel {
    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;
    private final String peer;
    private Duration timeout;
    /** A byte {@link #poll} read ahead, or -1. */
    private int pushback = -1;

    OobSocket(Socket socket, Duration timeout) throws IOException {
        this.socket = socket;
        this.socket.setTcpNoDelay(true);
        this.in = socket.getInputStream();
        this.out = socket.getOutputStream();
        this.peer = IpText.withPort(socket.getInetAddress(), socket.getPort());
        this.timeout = timeout;
    }

    /**
     * Connects to {@code host:port}, retrying a refused connection until {@code timeout} has passed. When
     * {@code bind} is not null the local end is bound to it (port chosen by the system).
     */
    public static OobSocket connect(InetAddress host, int port, InetAddress bind, Duration timeout) throws IOException {
        checkTimeout(timeout);
        long deadline = System.nanoTime() + timeout.toNanos();
        InetSocketAddress where = new InetSocketAddress(host, port);
        long pauseNanos = TimeUnit.MILLISECONDS.toNanos(20);
        IOException refused = null;
        while (true) {
            Socket s = new Socket();
            try {
                if (bind != null) s.bind(new InetSocketAddress(bind, 0));
                long left = deadline - System.nanoTime();
                s.connect(where, (int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                return new OobSocket(s, timeout);
            } catch (ConnectException | NoRouteToHostException e) {
                closeQuietly(s);
                refused = e;
                long left = deadline - System.nanoTime();
                if (left <= 0) throw refused(where, timeout, e);
                LockSupport.parkNanos(Math.min(left, pauseNanos));
                pauseNanos = Math.min(pauseNanos * 2, TimeUnit.MILLISECONDS.toNanos(250));
            } catch (SocketException e) {
                // a reset while connecting: a listener being set up can complete the handshake and reset it (seen
                // under load); nothing was exchanged, so it is retried as a refusal is
                closeQuietly(s);
                if (!String.valueOf(e.getMessage()).contains("reset")) {
                    throw new IOException("cannot connect to TCP " + show(where) + ": " + e.getMessage(), e);
                }
                refused = e;
                long left = deadline - System.nanoTime();
                if (left <= 0) throw refused(where, timeout, e);
                LockSupport.parkNanos(Math.min(left, pauseNanos));
            } catch (SocketTimeoutException e) {
                closeQuietly(s);
                if (refused != null) throw refused(where, timeout, refused); // the last try ran out of time
                throw new PeerTimeout("no answer from TCP " + show(where) + " within " + human(timeout)
                        + ": check the host address and that a firewall lets the port through", e);
            } catch (IOException e) {
                closeQuietly(s);
                throw new IOException("cannot connect to TCP " + show(where) + ": " + e.getMessage(), e);
            }
        }
    }

    private static IOException refused(InetSocketAddress where, Duration timeout, IOException e) {
        return new PeerTimeout("cannot connect to TCP " + show(where) + " within " + human(timeout) + " ("
                + e.getMessage() + "): start the server side first and check the host and -p port", e);
    }

    /** Timeout for each following read (the time a silent peer is given). */
    public OobSocket timeout(Duration t) {
        checkTimeout(t);
        this.timeout = t;
        return this;
    }

    public Duration timeout() {
        return timeout;
    }

    /** "a.b.c.d:port" of the peer. */
    public String peer() {
        return peer;
    }

    public InetAddress peerAddress() {
        return socket.getInetAddress();
    }

    public InetAddress localAddress() {
        return socket.getLocalAddress();
    }

    /** Writes all of {@code b} and flushes. */
    @Override
    public void write(byte[] b) throws IOException {
        try {
            out.write(b);
            out.flush();
        } catch (IOException e) {
            throw new IOException("lost the TCP connection to " + peer + " while sending (" + e.getMessage()
                    + "): the peer gave up or crashed; see its output", e);
        }
    }

    /**
     * Reads exactly {@code n} bytes within the current timeout. {@code what} names the message for errors
     * ("the 52-byte ibv_rc_pingpong address").
     */
    public byte[] readFully(int n, String what) throws IOException {
        byte[] b = new byte[n];
        readFully(b, 0, n, what);
        return b;
    }

    public void readFully(byte[] b, int off, int n, String what) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        int got = 0;
        if (n > 0 && pushback >= 0) {
            b[off] = (byte) pushback;
            pushback = -1;
            got = 1;
        }
        while (got < n) {
            long left = deadline - System.nanoTime();
            if (left <= 0) throw silent(what, got, n, b, off);
            socket.setSoTimeout((int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            int r;
            try {
                r = in.read(b, off + got, n - got);
            } catch (SocketTimeoutException e) {
                throw silent(what, got, n, b, off);
            } catch (IOException e) {
                throw new IOException("lost the TCP connection to " + peer + " while waiting for " + what + " ("
                        + e.getMessage() + "): the peer gave up or crashed; see its output", e);
            }
            if (r < 0) {
                throw new EOFException("peer " + peer + " closed the connection after " + got + " of the " + n
                        + " bytes of " + what + ": it probably rejected our message (see its output) or speaks another protocol");
            }
            got += r;
        }
    }

    /**
     * Waits up to {@code wait} for the peer to send something, without consuming it: true if a byte is ready
     * (the next read returns it). An orderly close by the peer is an {@link java.io.EOFException}.
     */
    public boolean poll(Duration wait) throws IOException {
        if (pushback >= 0) return true;
        socket.setSoTimeout((int) Math.max(1, wait.toMillis()));
        try {
            int c = in.read();
            if (c < 0) {
                throw new EOFException("peer " + peer + " closed the connection: it gave up or failed; see its output");
            }
            pushback = c;
            return true;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (EOFException e) {
            throw e;
        } catch (IOException e) {
            throw new IOException("lost the TCP connection to " + peer + " (" + e.getMessage() + "): the peer gave up or crashed; see its output", e);
        }
    }

    private IOException silent(String what, int got, int n, byte[] b, int off) {
        String partial = got == 0 ? "nothing" : got + " of " + n + " bytes (" + HexFormat.ofDelimiter(" ")
                .formatHex(b, off, off + Math.min(got, 16)) + (got > 16 ? " ..." : "") + ")";
        return new PeerTimeout("peer " + peer + " sent " + partial + " of " + what + " within " + human(timeout)
                + ": it is stuck or speaks another protocol or version; check the program on the other side");
    }

    @Override
    public void close() {
        closeQuietly(socket);
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // nothing to do
        }
    }

    private static void checkTimeout(Duration t) {
        if (t == null || t.isNegative() || t.isZero()) throw new IllegalArgumentException("timeout must be positive: " + t);
    }

    /** The first line of an exception message (a WARN line stays one line). */
    static String oneLine(String message) {
        if (message == null) return "no detail";
        int nl = message.indexOf('\n');
        return nl < 0 ? message : message.substring(0, nl);
    }

    static String show(InetSocketAddress a) {
        return a.getAddress() == null ? a.getHostString() + ":" + a.getPort() : IpText.withPort(a.getAddress(), a.getPort());
    }

    /** "5 s", "250 ms". */
    static String human(Duration t) {
        long ms = t.toMillis();
        if (ms % 1000 == 0) return ms / 1000 + " s";
        if (ms >= 1000) return String.format("%.1f s", ms / 1000.0);
        return ms + " ms";
    }
}
