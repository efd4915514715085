package io.jroce.cli.conn;

import java.io.IOException;

/**
 * The peer did not answer in time: no client connected, no reply, no completion. A command whose wait is set by
 * an option names that option when it reports one ({@code perf} and {@code pingpong}: {@code --timeout}).
 */
public final class PeerTimeout extends IOException {
    public PeerTimeout(String message) {
        super(message);
    }

    public PeerTimeout(String message, Throwable cause) {
        super(message, cause);
    }
}
