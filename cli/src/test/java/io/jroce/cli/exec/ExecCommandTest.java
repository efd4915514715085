package io.jroce.cli.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jroce.cli.Cli;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code jroce exec}: what the program gets (library path, JROCE_ADDR, its own arguments unread, its exit
 * status) and the one-line usage errors. The library here is a stand-in file: that a real program runs on the
 * real library is the verbs module's test (ExecToolsTest).
 */
class ExecCommandTest {
    @TempDir
    Path tmp;

    /** lib/libibverbs.so.1 and jroce-verbs.jar beside lib/, as the build lays them out. */
    private Path layout() throws Exception {
        Path lib = Files.createDirectories(tmp.resolve("native"));
        Files.writeString(lib.resolve(ExecCommand.LIBRARY), "stand-in");
        Files.writeString(tmp.resolve(ExecCommand.JAR), "stand-in");
        return lib;
    }

    @Test
    void programGetsTheLibraryPathTheAddressItsArgumentsAndGivesItsStatus() throws Exception {
        Path lib = layout();
        Path out = tmp.resolve("seen");
        // -d is the program's option: nothing after the program is read by jroce
        Cli.Result r = Cli.run("exec", "--bind", "127.0.0.1", "--lib", lib.toString(), "sh", "-c",
                "printf '%s|%s|%s' \"$JROCE_ADDR\" \"${LD_LIBRARY_PATH%%:*}\" \"$1\" > " + out + "; exit 7", "sh", "-d");
        assertEquals(7, r.exit(), r.err());
        assertEquals("127.0.0.1|" + lib.toAbsolutePath() + "|-d", Files.readString(out));
    }

    /** jroce stopped by SIGTERM ends the program it runs (left behind, it would hold the device's UDP port). */
    @Test
    void theProgramEndsWhenJroceIsStopped() throws Exception {
        Path lib = layout();
        Path pidFile = tmp.resolve("pid");
        String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        java.nio.file.WatchService watch = tmp.getFileSystem().newWatchService();
        tmp.register(watch, java.nio.file.StandardWatchEventKinds.ENTRY_CREATE);
        Process jroce = new ProcessBuilder(javaBin, "-cp", System.getProperty("java.class.path"), "io.jroce.cli.Main", "exec",
                "--bind", "127.0.0.1", "--lib", lib.toString(), "sh", "-c", "echo $$ > " + pidFile + ".tmp && mv " + pidFile
                + ".tmp " + pidFile + " && exec sleep 120").redirectErrorStream(true).redirectOutput(tmp.resolve("out").toFile()).start();
        try {
            long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
            while (!Files.exists(pidFile)) { // the program writes it by rename: one creation event when it is whole
                assertTrue(jroce.isAlive() && System.nanoTime() < deadline, "the program did not start: " + Files.readString(tmp.resolve("out")));
                java.nio.file.WatchKey key = watch.poll(1, java.util.concurrent.TimeUnit.SECONDS);
                if (key != null) {
                    key.pollEvents();
                    key.reset();
                }
            }
            ProcessHandle program = ProcessHandle.of(Long.parseLong(Files.readString(pidFile).trim())).orElseThrow();
            jroce.destroy(); // SIGTERM to jroce only, as kill PID does
            try {
                program.onExit().get(30, java.util.concurrent.TimeUnit.SECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                throw new AssertionError("the program still runs 30 s after jroce was stopped: " + program.info() + "; jroce "
                        + (jroce.isAlive() ? "runs" : "exited " + jroce.exitValue()) + ": " + Files.readString(tmp.resolve("out")), e);
            }
            assertTrue(jroce.waitFor(30, java.util.concurrent.TimeUnit.SECONDS), "jroce ended");
        } finally {
            jroce.destroyForcibly();
            watch.close();
        }
    }

    @Test
    void doubleDashBeforeTheProgramIsAccepted() throws Exception {
        Path lib = layout();
        Cli.Result r = Cli.run("exec", "--bind", "::1", "--lib", lib.toString(), "--", "sh", "-c", "exit 0");
        assertEquals(0, r.exit(), r.err());
    }

    @Test
    void bracketedIpv6IsPassedAsALiteral() throws Exception {
        Path lib = layout();
        Path out = tmp.resolve("seen");
        Cli.Result r = Cli.run("exec", "--bind", "[::1]", "--lib", lib.toString(), "sh", "-c", "printf %s \"$JROCE_ADDR\" > " + out);
        assertEquals(0, r.exit(), r.err());
        assertEquals("0:0:0:0:0:0:0:1", Files.readString(out));
    }

    @Test
    void missingLibraryIsAUsageError() {
        Cli.Result r = Cli.run("exec", "--bind", "127.0.0.1", "--lib", tmp.toString(), "true");
        assertEquals(2, r.exit());
        assertEquals(1, r.errLines().size(), r.err());
        assertTrue(r.err().startsWith("jroce exec: no libibverbs.so.1 in "), r.err());
    }

    @Test
    void badAddressIsAUsageError() throws Exception {
        Path lib = layout();
        Cli.Result r = Cli.run("exec", "--bind", "not-an-address", "--lib", lib.toString(), "true");
        assertEquals(2, r.exit());
        assertTrue(r.err().startsWith("jroce exec: --bind: "), r.err());
    }

    @Test
    void programThatCannotRunIsAUsageError() throws Exception {
        Path lib = layout();
        Cli.Result r = Cli.run("exec", "--bind", "127.0.0.1", "--lib", lib.toString(), tmp.resolve("no-such-program").toString());
        assertEquals(2, r.exit());
        assertEquals(1, r.errLines().size(), r.err());
        assertTrue(r.err().startsWith("jroce exec: cannot run '"), r.err());
    }

    @Test
    void missingProgramIsAUsageError() throws Exception {
        Path lib = layout();
        Cli.Result r = Cli.run("exec", "--bind", "127.0.0.1", "--lib", lib.toString());
        assertEquals(2, r.exit());
        assertEquals(1, r.errLines().size(), r.err());
    }
}
