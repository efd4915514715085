package io.jroce.cli.node;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;

/** Where the lines of an interactive session come from: a terminal ({@link TerminalPrompt}) or a plain stream. */
interface Prompt extends AutoCloseable {
    String TEXT = "jroce> ";

    /** The next line, or null at the end of input. */
    String read() throws IOException;

    /** The line that a {@code !N} recalled and ran: the history keeps it rather than the {@code !N}. */
    default void recalled(String line) {
    }

    @Override
    default void close() {
    }

    /** The prompt without line editing: the text on {@code out}, lines read from {@code in} as they come. */
    final class Plain implements Prompt {
        private final BufferedReader in;
        private final PrintWriter out;

        Plain(InputStream in, PrintWriter out) {
            this.in = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            this.out = out;
        }

        @Override
        public String read() throws IOException {
            out.print(TEXT);
            out.flush();
            return in.readLine();
        }
    }
}
