package io.jroce.cli;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MainTest {

    @Test
    void helpListsSubcommands() {
        Cli.Result r = Cli.run("--help");
        assertEquals(0, r.exit());
        assertTrue(r.out().contains("Usage: jroce"), r.out());
        assertTrue(r.out().contains("inspect"), r.out());
        assertEquals("", r.err());
        Cli.Result h = Cli.run("help", "inspect");
        assertEquals(0, h.exit());
        assertTrue(h.out().contains("Usage: jroce inspect"), h.out());
    }

    @Test
    void versionNamesTheProgram() {
        Cli.Result r = Cli.run("--version");
        assertEquals(0, r.exit());
        assertTrue(r.out().startsWith("jroce "), r.out());
    }

    @Test
    void noCommandIsAOneLineUsageError() {
        Cli.Result r = Cli.run();
        assertEquals(2, r.exit());
        assertEquals("", r.out());
        assertEquals(1, r.errLines().size(), r.err());
        assertTrue(r.err().startsWith("jroce: missing command, one of: inspect"), r.err());
        assertTrue(r.err().contains("(see 'jroce --help')"), r.err());
    }

    @Test
    void unknownCommandIsAOneLineUsageError() {
        Cli.Result r = Cli.run("frobnicate");
        assertEquals(2, r.exit());
        assertEquals(1, r.errLines().size(), r.err());
        assertTrue(r.err().startsWith("jroce: "), r.err());
    }

    @Test
    void describeKeepsFailuresOnOneLine() {
        assertEquals("x.pcap: broken", Main.describe(new java.io.IOException("x.pcap: broken")));
        assertEquals("IllegalStateException: a b", Main.describe(new IllegalStateException("a\n  b")));
        assertEquals("java.lang.NullPointerException", Main.describe(new NullPointerException()));
    }
}
