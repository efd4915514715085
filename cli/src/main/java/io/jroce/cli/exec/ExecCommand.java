package io.jroce.cli.exec;

import io.jroce.cli.Converters;
import io.jroce.cli.DeviceOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.IModelTransformer;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code jroce exec [--bind ADDR] [--lib DIR] [--] PROGRAM ARGS...}: runs an unmodified verbs program with jroce's
 * libibverbs.so.1 and librdmacm.so.1 first on its library path and the device's address in JROCE_ADDR, so the program finds one
 * device, jroce0, whose verbs run in a jroce endpoint inside the program's own process (the library starts a
 * Java VM there). The program inherits this terminal (stdin, stdout, stderr); jroce exits with its status.
 */
@Command(name = "exec",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        modelTransformer = ExecCommand.StopAtProgram.class,
        description = {
            "Runs a verbs program (ibv_rc_pingpong, ib_write_bw, rping, ...) on a jroce device in its own process: jroce's "
                    + "libibverbs.so.1 and librdmacm.so.1 first on LD_LIBRARY_PATH, the device's address in JROCE_ADDR. The program sees one device, jroce0; GID 1 is the address "
                    + "(ibv_rc_pingpong -g 1, perftest -x 1).",
            "Example: jroce exec --bind 127.0.0.1 -- ib_write_bw -d jroce0 -x 1 -F",
            "Exit status: the program's; 2 on bad usage (no address or one not of this machine, no library, no such program)."
        })
public final class ExecCommand implements Callable<Integer> {
    static final String LIBRARY = "libibverbs.so.1";
    static final String JAR = "jroce-verbs.jar";

    @Spec
    CommandSpec spec;

    @Option(names = "--bind", paramLabel = "ADDR", description = "IPv4 or IPv6 address of the program's device (UDP 4791 there); "
            + "an address of this host. Default: JROCE_ADDR from the environment.")
    String bind;

    @Option(names = "--lib", paramLabel = "DIR", description = "Directory of jroce's " + LIBRARY + " (with " + JAR + " in the directory "
            + "above it). Default: native/ beside jroce.jar, else the build's verbs/target/native.")
    Path lib;

    @Parameters(index = "0..*", arity = "1..*", paramLabel = "PROGRAM", description = "The program and its arguments. Everything from "
            + "the program on is passed to it unread, so its own options need no '--'.")
    List<String> command;

    /** Everything after the first positional parameter (the program) belongs to the program. */
    public static final class StopAtProgram implements IModelTransformer {
        @Override
        public CommandSpec transform(CommandSpec spec) {
            spec.parser().stopAtPositional(true);
            return spec;
        }
    }

    @Override
    public Integer call() throws Exception {
        String address = address();
        Path dir = libraryDir().toAbsolutePath().normalize();
        Path library = dir.resolve(LIBRARY);
        if (!Files.isReadable(library)) throw usage("no " + LIBRARY + " in " + dir + " (build it: mvn -pl verbs -am package)");
        Map<String, String> inherited = System.getenv();
        if (!inherited.containsKey("JROCE_JAR") && !inherited.containsKey("JROCE_CLASSPATH")
                && !Files.isReadable(dir.resolveSibling(JAR))) {
            throw usage("no " + JAR + " in " + dir.getParent() + ", where the library looks for it (or set JROCE_JAR)");
        }

        ProcessBuilder pb = new ProcessBuilder(command).inheritIO();
        Map<String, String> env = pb.environment();
        String old = env.get("LD_LIBRARY_PATH");
        env.put("LD_LIBRARY_PATH", dir + (old == null || old.isEmpty() ? "" : ":" + old));
        env.put("JROCE_ADDR", address);
        // jroce stopped by a signal (kill, a supervisor's SIGTERM) takes the program with it: left running, it would keep
        // the device's UDP port. A terminal's Ctrl-C reaches the program itself; it gets a moment to end on its own. The
        // hook is in place before the program starts, so a signal that comes right after the start is not missed.
        // The program can run (and a signal come) before start() returns here: the hook waits for it to return.
        AtomicReference<Process> running = new AtomicReference<>();
        CountDownLatch started = new CountDownLatch(1);
        Thread stop = new Thread(() -> {
            try {
                if (!started.await(STOP_TERM_MS, TimeUnit.MILLISECONDS)) return;
            } catch (InterruptedException e) {
                return;
            }
            Process q = running.get();
            if (q != null) stopProgram(q);
        }, "jroce-exec-stop");
        Runtime.getRuntime().addShutdownHook(stop);
        try {
            try {
                running.set(pb.start());
            } catch (IOException e) {
                throw usage("cannot run '" + command.get(0) + "': " + e.getMessage());
            } finally {
                started.countDown(); // with running still null when start() failed
            }
            return running.get().waitFor();
        } finally {
            try {
                Runtime.getRuntime().removeShutdownHook(stop);
            } catch (IllegalStateException shuttingDown) {
                // the hook runs (or ran) already
            }
        }
    }

    /** Ends the program if it still runs: a grace period, then SIGTERM, then SIGKILL. */
    static void stopProgram(Process p) {
        try {
            if (p.waitFor(STOP_GRACE_MS, TimeUnit.MILLISECONDS)) return;
            p.destroy();
            if (p.waitFor(STOP_TERM_MS, TimeUnit.MILLISECONDS)) return;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        p.destroyForcibly();
    }

    /** How long a program whose jroce was stopped may take to end by itself, then after SIGTERM. */
    static final long STOP_GRACE_MS = 1000, STOP_TERM_MS = 5000;

    /** The device's address as the library reads it: a literal without brackets or zone. */
    private String address() {
        String text = bind != null ? bind : System.getenv("JROCE_ADDR");
        if (text == null || text.isBlank()) throw usage("--bind ADDR is required (or JROCE_ADDR in the environment)");
        InetAddress a;
        try {
            a = Converters.ip(text);
        } catch (IllegalArgumentException e) {
            throw usage("--bind: " + e.getMessage());
        }
        String option = bind != null ? "--bind" : "JROCE_ADDR";
        if (a.isAnyLocalAddress() || a.isMulticastAddress()) throw usage(option + ": the device needs one unicast address, not " + text);
        // the program's device binds there: an address not of this machine is a usage error before the program runs
        DeviceOptions.checkLocal(spec, a, option);
        String literal = a.getHostAddress();
        int zone = literal.indexOf('%');
        if (a instanceof Inet6Address && zone >= 0) literal = literal.substring(0, zone);
        return literal;
    }

    private Path libraryDir() {
        if (lib != null) return lib;
        String env = System.getenv("JROCE_VERBS_LIB");
        if (env != null && !env.isBlank()) return Path.of(env);
        List<Path> tried = new ArrayList<>();
        Path jar = runningJar();
        if (jar != null) {
            Path besideJar = jar.getParent().resolve("native");
            tried.add(besideJar);
            // the build's layout: cli/target/jroce.jar and verbs/target/native/
            Path build = jar.getParent().getParent() == null || jar.getParent().getParent().getParent() == null ? null
                    : jar.getParent().getParent().getParent().resolve("verbs/target/native");
            if (build != null) tried.add(build);
        }
        for (Path p : tried) {
            if (Files.isReadable(p.resolve(LIBRARY))) return p;
        }
        throw usage("cannot find jroce's " + LIBRARY + (tried.isEmpty() ? "" : " (looked in " + tried + ")") + ": give --lib DIR");
    }

    private static Path runningJar() {
        try {
            var source = ExecCommand.class.getProtectionDomain().getCodeSource();
            if (source == null) return null;
            Path p = Path.of(source.getLocation().toURI()).toAbsolutePath();
            // run from cli/target/classes (tests): as if from the jar the build puts beside it, cli/target/jroce.jar
            return Files.isRegularFile(p) ? p : p.getParent().resolve("jroce.jar");
        } catch (URISyntaxException | IllegalArgumentException e) {
            return null;
        }
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
