package io.jroce.cli.cmtools;

import io.jroce.cli.Cli;
import io.jroce.cli.Main;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.Writer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A jroce command run in-process on a thread of its own, whose stdout says when a line has appeared: a test starts
 * a client once its server has printed that it started, rather than after a guessed pause.
 */
final class Launch {
    private final StringBuffer out = new StringBuffer();
    private final StringWriter err = new StringWriter();
    private final CountDownLatch seen = new CountDownLatch(1);
    private final String awaited;
    private final CompletableFuture<Cli.Result> result;

    private Launch(String awaited, String... args) {
        this.awaited = awaited;
        Writer watching = new Writer() {
            @Override
            public void write(char[] b, int off, int len) {
                out.append(b, off, len);
                if (out.indexOf(awaited) >= 0) seen.countDown();
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        result = CompletableFuture.supplyAsync(() -> {
            int exit = Main.commandLine(new PrintWriter(watching), new PrintWriter(err)).execute(args);
            seen.countDown(); // ended without the line: the waiter sees the result
            return new Cli.Result(exit, out.toString(), err.toString());
        });
    }

    /** Starts {@code args}; {@link #awaitLine} waits for {@code line} on its stdout. */
    static Launch start(String line, String... args) {
        return new Launch(line, args);
    }

    /** Waits until the line appeared (true) or the command ended without it (false). */
    boolean awaitLine(Duration max) throws InterruptedException {
        if (!seen.await(max.toMillis(), TimeUnit.MILLISECONDS)) throw new AssertionError("no '" + awaited + "' within " + max + ": " + out);
        return out.indexOf(awaited) >= 0;
    }

    Cli.Result result(Duration max) throws Exception {
        return result.get(max.toMillis(), TimeUnit.MILLISECONDS);
    }
}
