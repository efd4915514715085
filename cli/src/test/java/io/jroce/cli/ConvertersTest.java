package io.jroce.cli;

import io.jroce.endpoint.Mtu;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Sizes are written one way everywhere: a path MTU (-m/--mtu, the session's mtu=) takes k as -s and --socket-buffer do. */
class ConvertersTest {
    @Test
    void aPathMtuIsASize() {
        assertEquals(Mtu.MTU_4096, Converters.mtu("4k"));
        assertEquals(Mtu.MTU_1024, Converters.mtu("1K"));
        assertEquals(Mtu.MTU_2048, Converters.mtu("0x800"));
        assertEquals(Mtu.MTU_256, Converters.mtu("256"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Converters.mtu("1500"));
        assertTrue(e.getMessage().startsWith("'1500' is not a path MTU (256, 512, 1024, 2048 or 4096"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Converters.mtu("8k"));
        assertThrows(IllegalArgumentException.class, () -> Converters.mtu("4kb"));
    }

    @Test
    void everyCommandsMtuOptionTakesIt() {
        // the same converter behind every -m/--mtu: a bad value is refused by the parser with its message, 4k is not
        for (String[] args : new String[][] {{"perf", "write", "--mtu", "4k", "--no-such-option"}, {"pingpong", "-m", "4k", "--no-such-option"},
                {"demo", "--mtu", "4k", "--no-such-option"}, {"conform", "-m", "4k", "--no-such-option"},
                {"node", "--mtu", "4k", "--no-such-option"}, {"rping", "-m", "4k", "--no-such-option"}}) {
            Cli.Result r = Cli.run(args);
            assertEquals(2, r.exit(), String.join(" ", args));
            assertTrue(r.err().contains("Unknown option: '--no-such-option'"), String.join(" ", args) + ": " + r.err());
        }
    }
}
