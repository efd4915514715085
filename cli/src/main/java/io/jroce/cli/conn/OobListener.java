package io.jroce.cli.conn;

import io.jroce.endpoint.AccessList;
import io.jroce.wire.IpText;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The server side of an out-of-band exchange: listens until one peer opens the exchange properly, or the
 * overall timeout. Every protocol we serve (ibv_rc_pingpong, perftest, the jroce handshake) has the client
 * speak first, so a connection counts as a real peer once its first message has been read and checked
 * ({@link Greeting}). A connection that sends garbage, another protocol, or nothing within
 * {@link #GREETING_TIMEOUT} is logged (one WARN line), counted and closed, and the listener goes on waiting.
 *
 * <p>Each accepted connection's greeting is read on its own thread, so a silent peer never delays the accept of
 * the next one; at most {@link #MAX_PENDING} are read at once, further clients wait (connected, in the listen
 * backlog) until a slot frees.
 */
public final class OobListener {
    private static final Logger log = LoggerFactory.getLogger(OobListener.class);
    /** How long a connected peer has to send its first message (never more than what is left of the overall timeout). */
    public static final Duration GREETING_TIMEOUT = Duration.ofSeconds(5);
    /** The wait of a server that waits for its client until interrupted. */
    private static final Duration FOREVER = Duration.ofDays(36_500);
    /** Connections whose first message is being read at once. */
    public static final int MAX_PENDING = 4;

    /** The networks a listener accepts connections from (--allow); every other connection is closed at once. */
    private static volatile AccessList allowed = AccessList.ALL;

    private OobListener() {
    }

    /**
     * Admits TCP peers only from {@code list} from now on (a jroce command opens one device, whose --allow this is).
     * A refused connection is closed before anything is read from it and takes no greeting slot.
     */
    public static void allow(AccessList list) {
        allowed = list;
    }

    /** Reads and checks a connection's first message; an {@link IOException} marks the peer as not one of ours. */
    @FunctionalInterface
    public interface Greeting<T> {
        T read(OobSocket s) throws IOException;
    }

    /**
     * The connection that opened the exchange, its first message, and how many other connections were dropped
     * before it. The socket's read timeout is the overall timeout again.
     */
    public record Accepted<T>(OobSocket socket, T greeting, int dropped) {
    }

    /**
     * Listens on {@code bind:port} ({@code bind} null or the wildcard: every interface) until a connection's
     * greeting passes, within {@code timeout}, then stops listening. {@code protocol} names the exchange in
     * messages ("ibv_rc_pingpong exchange").
     */
    public static <T> Accepted<T> accept(InetAddress bind, int port, Duration timeout, String protocol, Greeting<T> greeting)
            throws IOException {
        return accept(bind, port, timeout, timeout, GREETING_TIMEOUT, protocol, greeting);
    }

    /**
     * As {@link #accept(InetAddress, int, Duration, String, Greeting)}, but waits up to {@code wait} for a client,
     * or until interrupted when {@code wait} is null (as the C tools' servers do); {@code timeout} is the read
     * timeout of the accepted connection.
     */
    public static <T> Accepted<T> acceptWaiting(InetAddress bind, int port, Duration wait, Duration timeout, String protocol,
                                                Greeting<T> greeting) throws IOException {
        return accept(bind, port, wait, timeout, GREETING_TIMEOUT, protocol, greeting);
    }

    static <T> Accepted<T> accept(InetAddress bind, int port, Duration timeout, Duration greetingTimeout, String protocol,
                                  Greeting<T> greeting) throws IOException {
        return accept(bind, port, timeout, timeout, greetingTimeout, protocol, greeting);
    }

    private static <T> Accepted<T> accept(InetAddress bind, int port, Duration wait, Duration timeout, Duration greetingTimeout,
                                          String protocol, Greeting<T> greeting) throws IOException {
        if (timeout == null || timeout.isNegative() || timeout.isZero()) throw new IllegalArgumentException("timeout must be positive: " + timeout);
        if (wait != null && (wait.isNegative() || wait.isZero())) throw new IllegalArgumentException("wait must be positive: " + wait);
        // no wait: a deadline no run reaches (a century), compared by difference so it cannot overflow
        long deadline = System.nanoTime() + (wait != null ? wait : FOREVER).toNanos();
        InetSocketAddress where = bind == null ? new InetSocketAddress(port) : new InetSocketAddress(bind, port);
        String shown = OobSocket.show(where);
        Round<T> round = new Round<>(shown, wait, timeout, greetingTimeout, deadline, protocol, greeting);
        try (ServerSocket server = new ServerSocket()) {
            server.setReuseAddress(true);
            try {
                server.bind(where, 2 * MAX_PENDING);
            } catch (IOException e) {
                // a BindException: the port (or address) the user named cannot be used, which commands report as such
                java.net.BindException b = new java.net.BindException("cannot listen on TCP " + shown + " (" + e.getMessage()
                        + "): choose another port with -p or stop the program using it");
                b.initCause(e);
                throw b;
            }
            Thread acceptor = new Thread(() -> round.acceptLoop(server), "oob-accept-" + port);
            acceptor.setDaemon(true);
            acceptor.start();
            try {
                return round.await();
            } finally {
                acceptor.interrupt(); // if it waits for a slot; closing the socket ends an accept
            }
        } finally {
            round.finish();
        }
    }

    /** One listening period: the acceptor and greeting threads report to {@link #events}. */
    private static final class Round<T> {
        final String where;
        /** How long we wait for a client; null: until interrupted. */
        final Duration wait;
        final Duration timeout;
        final Duration greetingTimeout;
        final long deadline;
        final String protocol;
        final Greeting<T> greeting;
        /** An {@link Accepted} (the winner) or an {@link IOException} (the listening socket failed). */
        final BlockingQueue<Object> events = new LinkedBlockingQueue<>();
        final Set<Socket> pending = ConcurrentHashMap.newKeySet();
        final Semaphore slots = new Semaphore(MAX_PENDING);
        final AtomicInteger dropped = new AtomicInteger();
        /** Set once: by the winner, or by the waiter giving up. */
        final AtomicBoolean decided = new AtomicBoolean();

        Round(String where, Duration wait, Duration timeout, Duration greetingTimeout, long deadline, String protocol,
              Greeting<T> greeting) {
            this.where = where;
            this.wait = wait;
            this.timeout = timeout;
            this.greetingTimeout = greetingTimeout;
            this.deadline = deadline;
            this.protocol = protocol;
            this.greeting = greeting;
        }

        /** Accepts only while a greeting slot is free: further clients wait in the backlog, connected, until one frees. */
        void acceptLoop(ServerSocket server) {
            while (!server.isClosed()) {
                try {
                    slots.acquire();
                } catch (InterruptedException e) {
                    return; // the listener is done
                }
                Socket s;
                try {
                    s = server.accept();
                } catch (IOException e) {
                    if (!server.isClosed()) events.offer(e);
                    return;
                }
                AccessList list = allowed;
                if (decided.get() || !list.allows(s.getInetAddress())) {
                    if (!decided.get()) list.refused(s.getInetAddress(), "a TCP connection to " + where);
                    close(s);
                    slots.release();
                    continue;
                }
                pending.add(s);
                Thread t = new Thread(() -> greet(s), "oob-greeting-" + s.getPort());
                t.setDaemon(true);
                t.start();
            }
        }

        private void greet(Socket s) {
            try {
                OobSocket o = new OobSocket(s, timeout);
                long left = deadline - System.nanoTime();
                o.timeout(Duration.ofNanos(Math.max(TimeUnit.MILLISECONDS.toNanos(1), Math.min(greetingTimeout.toNanos(), left))));
                T first = greeting.read(o);
                o.timeout(timeout);
                if (decided.compareAndSet(false, true)) {
                    pending.remove(s);
                    events.offer(new Accepted<>(o, first, dropped.get()));
                } else {
                    close(s); // another peer won, or the listener gave up meanwhile
                }
            } catch (IOException | RuntimeException e) {
                drop(s, OobSocket.oneLine(e.getMessage()));
            } finally {
                pending.remove(s);
                slots.release();
            }
        }

        private void drop(Socket s, String why) {
            if (!decided.get()) {
                int n = dropped.incrementAndGet();
                log.warn("TCP {}: dropped connection {} from {}:{}, which did not open the {}: {}", where, n,
                        IpText.of(s.getInetAddress()), s.getPort(), protocol, why);
            }
            close(s);
        }

        Accepted<T> await() throws IOException {
            try {
                while (true) {
                    long left = deadline - System.nanoTime();
                    Object ev = left > 0 ? events.poll(left, TimeUnit.NANOSECONDS) : null;
                    if (ev == null) {
                        if (decided.compareAndSet(false, true)) throw timedOut();
                        ev = events.take(); // a winner is being handed over right now
                    }
                    if (ev instanceof IOException e) {
                        throw new IOException("listening on TCP " + where + " failed: " + e.getMessage(), e);
                    }
                    @SuppressWarnings("unchecked")
                    Accepted<T> a = (Accepted<T>) ev;
                    return a;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                decided.set(true);
                throw new InterruptedIOException("interrupted while waiting on TCP " + where);
            }
        }

        private IOException timedOut() {
            int n = dropped.get();
            String bad = n == 0 ? "" : "; dropped " + n + (n == 1 ? " connection that" : " connections that")
                    + " did not open the " + protocol + " (garbage, another protocol, or nothing; see the warnings)";
            return new PeerTimeout("no client connected to TCP " + where + " within " + OobSocket.human(wait) + bad
                    + ": start the client side (with this host's address) or allow more time");
        }

        /** Closes the connections still being read; the listening socket is closed by the caller. */
        void finish() {
            decided.set(true);
            for (Socket s : pending) close(s);
            for (Object ev; (ev = events.poll()) != null; ) {
                if (ev instanceof Accepted<?> a) a.socket().close(); // a winner nobody took (the listener failed first)
            }
        }

        private static void close(Socket s) {
            try {
                s.close();
            } catch (IOException ignored) {
                // nothing to do
            }
        }
    }
}
