package io.jroce.cli;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * TCP peers that are not what a listener waits for: one that sends garbage, one that sends nothing. Each
 * connects as soon as the listener is up (a refusal is immediate, so it retries at once).
 */
public final class BadPeers {
    private BadPeers() {
    }

    /**
     * Connects to {@code host:port}, retrying refusals for up to 10 s. A connection reset while connecting is
     * retried too: a listener that is being set up can accept the handshake and reset it (seen under load).
     */
    public static Socket connect(String host, int port) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            Socket s = new Socket();
            try {
                s.connect(new InetSocketAddress(host, port), 1000);
                s.setSoTimeout(20_000);
                return s;
            } catch (SocketException | SocketTimeoutException e) {
                // refused (not listening yet), a reset before the connection was ours, or a connect that timed out
                // (a full backlog, or this JVM stalled for a second on a loaded machine)
                s.close();
                if (System.nanoTime() > deadline) throw e;
                Thread.onSpinWait();
            }
        }
    }

    /**
     * Connects, sends 128 bytes of 0xff (longer than the first message of every exchange) and returns once the
     * listener has closed the connection.
     */
    public static void garbage(String host, int port) throws IOException {
        byte[] junk = new byte[128];
        Arrays.fill(junk, (byte) 0xff);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            try (Socket s = connect(host, port)) {
                try {
                    s.getOutputStream().write(junk);
                    s.getOutputStream().flush();
                } catch (SocketException e) {
                    // reset before the listener took the connection (one being set up can do that): it saw nothing
                    if (System.nanoTime() > deadline) throw e;
                    continue;
                }
                awaitClosed(s);
                return;
            }
        }
    }

    /** Waits until the other side closes {@code s} (end of stream or a reset); fails after the socket's timeout. */
    public static void awaitClosed(Socket s) throws IOException {
        InputStream in = s.getInputStream();
        byte[] b = new byte[256];
        try {
            while (in.read(b) >= 0) {
                // a listener that dropped us sends nothing; keep reading until the end
            }
        } catch (SocketException e) {
            // reset: closed with our garbage unread
        }
    }

    /** Collects what the out-of-band listener logs, until {@link #close}d. */
    public static final class ListenerLog implements AutoCloseable {
        private final Logger logger = (Logger) LoggerFactory.getLogger("io.jroce.cli.conn.OobListener");
        private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

        public ListenerLog() {
            appender.start();
            logger.addAppender(appender);
        }

        /** The messages logged so far. */
        public List<String> lines() {
            synchronized (appender) { // AppenderBase.doAppend holds this lock while appending
                return appender.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
            }
        }

        @Override
        public void close() {
            logger.detachAppender(appender);
            appender.stop();
        }
    }
}
