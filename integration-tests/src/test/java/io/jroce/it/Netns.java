package io.jroce.it;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** Shell and network-namespace helpers of the tests that build their own test hosts (netns, veth, nft, tc). */
final class Netns {
    private Netns() {
    }

    /** Starts {@code cmd} inside namespace {@code ns}; its output goes to {@code work/NAME.out} and {@code .err}. */
    static Process start(Path work, String ns, String name, String... cmd) throws IOException {
        List<String> full = new ArrayList<>(List.of("ip", "netns", "exec", ns));
        full.addAll(List.of(cmd));
        return new ProcessBuilder(full).directory(work.toFile())
                .redirectOutput(work.resolve(name + ".out").toFile())
                .redirectError(work.resolve(name + ".err").toFile())
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
                .start();
    }

    /** What a process started by {@link #start} printed, for assertion messages. */
    static String output(Path work, String name) throws IOException {
        return "--- " + name + " stdout\n" + Files.readString(work.resolve(name + ".out"))
                + "--- " + name + " stderr\n" + Files.readString(work.resolve(name + ".err"));
    }

    /** The exit status, or -1 (and the process killed) if it did not end within the time. */
    static int waitFor(Process p, long seconds) throws InterruptedException {
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            return -1;
        }
        return p.exitValue();
    }

    static boolean isRoot() {
        return "root".equals(System.getProperty("user.name"));
    }

    static boolean onPath(String tool) {
        for (String dir : System.getenv("PATH").split(":")) {
            if (Files.isExecutable(Path.of(dir, tool))) return true;
        }
        return Files.isExecutable(Path.of("/usr/sbin", tool)) || Files.isExecutable(Path.of("/sbin", tool));
    }

    /** Runs a shell command line; fails the test with its output if it exits non-zero. */
    static String sh(String line) throws Exception {
        String out = run(List.of("sh", "-c", line), 30);
        assertTrue(out.startsWith("0\n"), "command failed: " + line + "\n" + out);
        return out.substring(2);
    }

    /** Runs a command; returns its exit status, a newline and its output ("timeout" if it did not end in time). */
    static String run(List<String> cmd, long seconds) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return "timeout\n";
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        return p.exitValue() + "\n" + out;
    }
}
