package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs Debian's verbs tools (ibverbs-utils, perftest) with this module's libibverbs.so.1 first on the library path. */
final class Tools {
    private Tools() {}

    /**
     * The /24 of loopback addresses the tests' devices bind: {@code -Dverbs.net} (three octets), by default 127.0.63. Each
     * test has host numbers of its own in it ({@link #addr}); {@link ToolPair} draws its pairs from .101 to .200 there.
     */
    static String net() {
        return System.getProperty("verbs.net", "127.0.63");
    }

    /** Host {@code host} of {@link #net}. */
    static String addr(int host) {
        return net() + "." + host;
    }

    /**
     * The rdma_cm port the tests' servers listen on ({@code -Dverbs.cmPort}, by default {@code dflt}): rdma_cm ports are
     * each device's own, and every test's devices have addresses of their own, so one number serves all.
     */
    static int cmPort(int dflt) {
        return Integer.getInteger("verbs.cmPort", dflt);
    }

    /** The directory make built the library into (the pom passes it as verbs.native). */
    static Path nativeDir() {
        String dir = System.getProperty("verbs.native");
        if (dir == null) fail("system property verbs.native is not set: run the test through Maven");
        Path p = Path.of(dir);
        assertTrue(Files.isRegularFile(p.resolve("libibverbs.so.1")), "no libibverbs.so.1 in " + p + ": did make run?");
        return p;
    }

    /** The tool's absolute path; a clear failure when the package that ships it is missing (.ci/run installs it). */
    static String tool(String name, String debianPackage) {
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(":")) {
            Path p = Path.of(dir, name);
            if (Files.isExecutable(p)) return p.toString();
        }
        return fail(name + " is not installed: apt-get install " + debianPackage);
    }

    /** Starts the tool with our library and the given environment (JROCE_ADDR ...); stdout and stderr go to {@code log}. */
    static Process start(Map<String, String> env, Path log, String... command) throws IOException {
        return start(env, log, true, command);
    }

    /**
     * As {@link #start(Map, Path, String...)}; without {@code withLibrary} neither LD_LIBRARY_PATH nor JROCE_ADDR is
     * set (a Java command, or {@code jroce exec}, which must set them itself).
     */
    static Process start(Map<String, String> env, Path log, boolean withLibrary, String... command) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(List.of(command)).redirectErrorStream(true).redirectOutput(log.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        pb.environment().remove("JROCE_ADDR");
        pb.environment().remove("LD_LIBRARY_PATH");
        if (withLibrary) {
            pb.environment().put("LD_LIBRARY_PATH", nativeDir().toString());
            pb.environment().putAll(env);
        } else {
            env.forEach((k, v) -> {
                if (!k.equals("JROCE_ADDR") && !k.equals("LD_LIBRARY_PATH")) pb.environment().put(k, v);
            });
        }
        return pb.start();
    }

    record Result(int exit, String output) {}

    /** Runs the tool to its end (at most {@code timeoutSeconds}) and returns its exit status and output. */
    static Result run(Map<String, String> env, long timeoutSeconds, String... command) throws Exception {
        Path log = Files.createTempFile("jroce-verbs-tool", ".log");
        try {
            Process p = start(env, log, !command[0].endsWith("/java"), command);
            boolean ended = p.waitFor(timeoutSeconds, TimeUnit.SECONDS);
            if (!ended) p.destroyForcibly().waitFor();
            String out = Files.readString(log, StandardCharsets.UTF_8);
            if (!ended) fail(String.join(" ", command) + " did not end within " + timeoutSeconds + " s; output:\n" + out);
            return new Result(p.exitValue(), out);
        } finally {
            Files.deleteIfExists(log);
        }
    }

    static List<String> lines(String output) {
        return new ArrayList<>(output.lines().toList());
    }
}
