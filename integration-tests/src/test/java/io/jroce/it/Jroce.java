package io.jroce.it;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/** Runs the built {@code jroce} jar as a separate process, the way a user does. */
final class Jroce {
    /** A finished or running jroce process with its output captured to files. */
    static final class Run implements AutoCloseable {
        final Process process;
        final Path out;
        final Path err;
        final List<String> args;

        Run(Process process, Path out, Path err, List<String> args) {
            this.process = process;
            this.out = out;
            this.err = err;
            this.args = args;
        }

        /** Waits for exit (killing the process after the timeout) and returns the exit code. */
        int await(long seconds) throws InterruptedException {
            if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                fail("jroce " + args + " did not finish in " + seconds + " s\nstdout:\n" + out() + "\nstderr:\n" + err());
            }
            return process.exitValue();
        }

        String out() {
            return read(out);
        }

        String err() {
            return read(err);
        }

        private static String read(Path p) {
            try {
                return Files.readString(p, StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "<" + e + ">";
            }
        }

        String describe() {
            return "jroce " + String.join(" ", args) + "\n--- stdout\n" + out() + "--- stderr\n" + err();
        }

        @Override
        public void close() {
            if (process.isAlive()) process.destroyForcibly();
        }
    }

    private Jroce() {
    }

    static Path jar() {
        Path jar = Path.of(System.getProperty("jroce.jar", "../cli/target/jroce.jar"));
        assertTrue(Files.isRegularFile(jar), "the jroce jar must be built first (mvn verify builds it): " + jar.toAbsolutePath());
        return jar;
    }

    static Run start(Path workDir, String... args) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "-jar", jar().toAbsolutePath().toString()));
        cmd.addAll(List.of(args));
        String tag = String.join("_", args).replaceAll("[^A-Za-z0-9_.-]", "_");
        if (tag.length() > 60) tag = tag.substring(0, 60);
        Path out = Files.createTempFile(workDir, tag + "-", ".out");
        Path err = Files.createTempFile(workDir, tag + "-", ".err");
        Process p = new ProcessBuilder(cmd).directory(workDir.toFile())
                .redirectOutput(out.toFile()).redirectError(err.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
                .start();
        return new Run(p, out, err, List.of(args));
    }
}
