package io.jroce.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** --allow on every command that opens a device: a bad network is a one-line usage error (exit 2) before any traffic. */
class AllowOptionTest {
    @TempDir
    Path dir;

    @Test
    void aBadNetworkIsOneLineAndExitTwoOnEveryDeviceCommand() throws Exception {
        Path script = Files.writeString(dir.resolve("s.jroce"), "echo hi\n");
        String[][] commands = {
            {"node", "--bind", "127.0.77.1", "--script", script.toString()},
            {"perf", "write", "--bind", "127.0.77.1"},
            {"pingpong", "--bind", "127.0.77.1"},
            {"rping", "-s", "-a", "127.0.77.1"},
        };
        for (String bad : new String[] {"10.0.0.1/8", "10.0.0.0/33", "example.com", "fd00::/200", "10.0.0.0/8,,"}) {
            for (String[] c : commands) {
                String[] args = new String[c.length + 2];
                System.arraycopy(c, 0, args, 0, c.length);
                args[c.length] = "--allow";
                args[c.length + 1] = bad;
                Cli.Result r = Cli.run(args);
                String shown = String.join(" ", args) + "\n" + r.out() + r.err();
                assertEquals(2, r.exit(), shown);
                assertEquals(1, r.err().strip().lines().count(), shown);
                assertTrue(r.err().contains("--allow: "), shown);
            }
        }
    }

    @Test
    void everyDeviceCommandDocumentsTheOption() {
        for (String[] c : new String[][] {{"node", "--help"}, {"perf", "--help"}, {"pingpong", "--help"}}) {
            Cli.Result r = Cli.run(c);
            assertEquals(0, r.exit(), r.err());
            assertTrue(r.out().contains("--allow=CIDR"), String.join(" ", c) + "\n" + r.out());
        }
    }
}
