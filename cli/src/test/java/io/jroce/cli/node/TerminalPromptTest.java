package io.jroce.cli.node;

import io.jroce.cli.node.SessionCompleter.Kind;
import org.jline.terminal.Terminal;
import org.jline.terminal.Size;
import org.jline.terminal.impl.ExternalTerminal;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The JLine prompt driven through a terminal made of byte streams (keys in, screen out): Tab completes through
 * the session's completer, and the history file carries lines from one prompt to the next.
 */
class TerminalPromptTest {
    /** The Up key as an xterm in keypad mode (terminfo kcuu1) sends it. */
    private static final String UP = "\033OA";

    @TempDir
    Path dir;

    private final StringWriter errText = new StringWriter();

    private TerminalPrompt prompt(String keys, Path history) throws IOException {
        Terminal t = new ExternalTerminal("test", "xterm", new ByteArrayInputStream(keys.getBytes(StandardCharsets.UTF_8)),
                new ByteArrayOutputStream(), StandardCharsets.UTF_8);
        t.setSize(new Size(120, 40));
        SessionCompleter completer = new SessionCompleter(Map.of(Kind.REGION, List.<String>of("buf"), Kind.CQ, List.<String>of(),
                Kind.QP, List.<String>of(), Kind.REMOTE, List.<String>of())::get);
        return TerminalPrompt.on(t, completer, history, new PrintWriter(errText, true));
    }

    /** Every line the prompt returns until the keys run out. */
    private static List<String> lines(TerminalPrompt p) {
        List<String> out = new ArrayList<>();
        for (String line = p.read(); line != null; line = p.read()) out.add(line);
        return out;
    }

    @Test
    void tabCompletesVerbsNamesAndKeys() throws IOException {
        try (TerminalPrompt p = prompt("compa\tb\t\rmr x si\t4k\r", null)) {
            assertEquals(List.of("compare buf ", "mr x size=4k"), lines(p));
        }
    }

    @Test
    void theHistoryFileCarriesLinesToTheNextSession() throws IOException {
        Path file = dir.resolve("history");
        try (TerminalPrompt p = prompt("mr buf size=4k\r!1\recho \"a\\tb\" \\$x\r", file)) {
            assertEquals("mr buf size=4k", p.read());
            assertEquals("!1", p.read());
            p.recalled("mr buf size=4k");
            assertEquals("echo \"a\\tb\" \\$x", p.read(), "the line as typed: escapes are the session's to read");
            assertNull(p.read());
        }
        String saved = Files.readString(file);
        assertTrue(saved.contains("mr buf size=4k"), saved);
        assertTrue(!saved.contains("!1"), "a recall is kept as the line it ran:\n" + saved);
        // the next session: Up recalls the last line of the last one, Up Up the one before
        try (TerminalPrompt p = prompt(UP + "\r" + UP + UP + UP + "\r", file)) {
            assertEquals(List.of("echo \"a\\tb\" \\$x", "mr buf size=4k"), lines(p));
        }
        assertEquals("", errText.toString());
    }

    @Test
    void bangLinesAreTheSessionsNotJLines() throws IOException {
        // with JLine's event expansion on, "!!" would be replaced by the previous line before the session saw it
        try (TerminalPrompt p = prompt("echo one\r!!\r", null)) {
            assertEquals(List.of("echo one", "!!"), lines(p));
        }
    }

    @Test
    void historyFileComesFromTheOptionThenTheEnvironmentThenHome() {
        assertEquals(Path.of("/home/u/.jroce_history"), NodeCommand.historyPath(null, null, "/home/u"));
        assertEquals(Path.of("/tmp/h"), NodeCommand.historyPath(null, "/tmp/h", "/home/u"));
        assertEquals(Path.of("/tmp/o"), NodeCommand.historyPath("/tmp/o", "/tmp/h", "/home/u"));
        assertNull(NodeCommand.historyPath("none", "/tmp/h", "/home/u"));
        assertNull(NodeCommand.historyPath(null, "", "/home/u"));
        assertNull(NodeCommand.historyPath(null, "none", "/home/u"));
    }
}
