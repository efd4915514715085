package io.jroce.cli.node;

import io.jroce.cli.node.SessionCompleter.Suggestion;
import org.jline.reader.Candidate;
import org.jline.reader.Completer;
import org.jline.reader.EndOfFileException;
import org.jline.reader.LineReader;
import org.jline.reader.LineReaderBuilder;
import org.jline.reader.UserInterruptException;
import org.jline.reader.impl.DefaultParser;
import org.jline.reader.impl.history.DefaultHistory;
import org.jline.terminal.Terminal;
import org.jline.terminal.TerminalBuilder;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Instant;

/**
 * The prompt at a terminal, through JLine: line editing, a history kept across sessions in a file (Up, Ctrl-R),
 * and Tab completion from {@link SessionCompleter}. The session's own numbered history ({@code history},
 * {@code !N}) stays the node's; JLine's event expansion is off so that {@code !N} reaches it unchanged.
 */
final class TerminalPrompt implements Prompt {
    /** Lines kept in memory and in the history file. */
    static final int HISTORY_LINES = 1000;
    /**
     * JNI first (JLine's native library, shipped inside its jar, so it works from the shaded jar), then exec
     * (stty in a child process). FFM needs Java 22; the node runs on 17.
     */
    static final String PROVIDERS = "jni,exec";

    private final Terminal terminal;
    private final LineReader reader;
    private final RecallHistory history;
    private final PrintWriter err;

    private TerminalPrompt(Terminal terminal, LineReader reader, RecallHistory history, PrintWriter err) {
        this.terminal = terminal;
        this.reader = reader;
        this.history = history;
        this.err = err;
    }

    /**
     * The prompt on the process's terminal, or null when JLine finds none (the caller falls back to a plain
     * prompt). {@code historyFile} null keeps the history for this session only.
     */
    static TerminalPrompt open(SessionCompleter completer, Path historyFile, PrintWriter err) {
        Terminal terminal;
        try {
            terminal = TerminalBuilder.builder().system(true).providers(PROVIDERS).dumb(false).build();
        } catch (IOException | RuntimeException e) {
            return null;
        }
        return on(terminal, completer, historyFile, err);
    }

    /** The prompt on {@code terminal}, which it closes when it is closed. */
    static TerminalPrompt on(Terminal terminal, SessionCompleter completer, Path historyFile, PrintWriter err) {
        DefaultParser parser = new DefaultParser();
        // a line is one statement: an open quote or a trailing backslash is the checker's error, not a continuation
        parser.setEofOnUnclosedQuote(false);
        parser.setEofOnEscapedNewLine(false);
        RecallHistory history = new RecallHistory();
        LineReaderBuilder builder = LineReaderBuilder.builder()
                .terminal(terminal)
                .appName("jroce")
                .parser(parser)
                .completer(adapter(completer))
                .history(history)
                .variable(LineReader.HISTORY_SIZE, HISTORY_LINES)
                .variable(LineReader.HISTORY_FILE_SIZE, HISTORY_LINES)
                .option(LineReader.Option.DISABLE_EVENT_EXPANSION, true);
        if (historyFile != null) builder.variable(LineReader.HISTORY_FILE, historyFile);
        return new TerminalPrompt(terminal, builder.build(), history, err);
    }

    private static Completer adapter(SessionCompleter completer) {
        return (reader, line, candidates) -> {
            String typed = line.word().substring(0, Math.min(line.wordCursor(), line.word().length()));
            for (Suggestion s : completer.complete(line.words(), line.wordIndex(), typed)) {
                candidates.add(new Candidate(s.value(), s.display(), null, null, null, null, s.complete()));
            }
        };
    }

    @Override
    public String read() {
        while (true) {
            try {
                return reader.readLine(TEXT);
            } catch (UserInterruptException e) {
                // Ctrl-C drops the line being typed, as in a shell; Ctrl-D or 'exit' leaves
            } catch (EndOfFileException e) {
                return null;
            }
        }
    }

    @Override
    public void recalled(String line) {
        history.addRecalled(line);
    }

    @Override
    public void close() {
        try {
            history.save();
        } catch (IOException e) {
            err.println("jroce node: cannot save the prompt history: " + e.getMessage());
        }
        try {
            terminal.close();
        } catch (IOException e) {
            // the terminal's modes are restored or the process is ending: nothing left to do
        }
    }

    /** JLine's history, except that a {@code !N} line is kept as the line it ran ({@link #addRecalled}). */
    private static final class RecallHistory extends DefaultHistory {
        @Override
        public void add(Instant time, String line) {
            if (line.strip().startsWith("!")) return;
            super.add(time, line);
        }

        void addRecalled(String line) {
            super.add(Instant.now(), line);
        }
    }
}
