package io.jroce.cli.conform;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * {@code --restart-hook CMD}: a shell command run before each reconnect, e.g. one that starts the perftest server
 * again on the peer; it must finish within the timeout and exit 0.
 */
final class HookCommand {
    private final String command;
    private final Duration timeout;

    HookCommand(String command, Duration timeout) {
        this.command = command;
        this.timeout = timeout;
    }

    void run() throws IOException {
        Process p = new ProcessBuilder("/bin/sh", "-c", command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try {
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                throw new IOException("--restart-hook did not finish within " + timeout.toSeconds() + " s: " + command);
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted");
        }
        if (p.exitValue() != 0) throw new IOException("--restart-hook exited with " + p.exitValue() + ": " + command);
    }
}
