package io.jroce.cli.conn;

import java.io.Closeable;
import java.io.IOException;
import java.time.Duration;

/**
 * Where perftest's exchanges travel: a TCP socket ({@link OobSocket}, the default) or, with {@code -R}, SEND/RECV
 * over an RC QP that the connection manager connected ({@link QpChannel}). Each exchange is symmetric and of a
 * fixed size, so a message boundary on the QP is the same as a {@code readFully} on the socket.
 */
public interface ExchangeChannel extends Closeable {
    /** Sends all of {@code b}. */
    void write(byte[] b) throws IOException;

    /**
     * Sends the session's last message, after which the peer, having read it, disconnects. Over a QP the peer's
     * disconnect request can overtake the acknowledgement of this SEND and flush it ({@link QpChannel#writeLast}).
     */
    default void writeLast(byte[] b) throws IOException {
        write(b);
    }

    /** Receives exactly {@code n} bytes within the current timeout; {@code what} names them in errors. */
    byte[] readFully(int n, String what) throws IOException;

    /** Waits up to {@code wait} for the peer's next message without consuming it. */
    boolean poll(Duration wait) throws IOException;

    /** The timeout of each following read. */
    ExchangeChannel timeout(Duration t);

    /** The peer, for messages. */
    String peer();

    @Override
    void close();
}
