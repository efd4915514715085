package io.jroce.cli.soak;

import io.jroce.cli.Cli;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code jroce soak}'s bad arguments: one line on stderr naming the option, exit 2, before any device opens. */
class SoakCommandTest {
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "-q 8                                               | a server needs --bind",
        "127.0.64.21 --bind 127.0.64.22 -q 0                | -q/--qp 0: must be 1..256",
        "127.0.64.21 --bind 127.0.64.22 -q 257              | -q/--qp 257: must be 1..256",
        "127.0.64.21 --bind 127.0.64.22 --depth 9           | --depth 9: must be 1..8",
        "127.0.64.21 --bind 127.0.64.22 -s 100              | -s/--size 100: must be a multiple of 8",
        "127.0.64.21 --bind 127.0.64.22 -s 32m              | -s/--size 33554432: must be a multiple of 8 from 8 to 16m",
        "127.0.64.21 --bind 127.0.64.22 -D 0                | invalid -D/--duration",
        "127.0.64.21 --bind 127.0.64.22 --interval 10ms     | invalid --interval",
        "127.0.64.21 --bind 127.0.64.22 --max-growth -1     | invalid --max-growth",
        "127.0.64.21 --bind 127.0.64.22 --jroce-extensions x | --jroce-extensions",
        "127.0.64.21 --bind 127.0.64.22 --chaos drop=2      | --chaos",
        "127.0.64.21 --bind 127.0.64.22 -p 0                | invalid -p/--port 0",
    })
    void aBadArgumentIsOneLineAndExitTwo(String args, String message) {
        String[] argv = ("soak " + args.strip()).split("\\s+");
        Cli.Result r = Cli.run(argv);
        assertEquals(2, r.exit(), r.err());
        assertEquals(1, r.errLines().size(), r.err());
        assertTrue(r.err().startsWith("jroce soak: "), r.err());
        assertTrue(r.err().contains(message.strip()), r.err());
        assertTrue(r.err().strip().endsWith("(see 'jroce soak --help')"), r.err());
        assertEquals("", r.out());
    }
}
