package io.jroce.cli.node;

import io.jroce.cli.Cli;
import io.jroce.cli.Main;
import picocli.CommandLine;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;

/**
 * Runs {@code jroce node} in this JVM: alone, as a pair on two threads, or with a given standard input. The
 * node tests use only 127.0.2.1 and 127.0.2.2 and TCP ports from 38515 up (other test suites use 127.0.0.x and
 * 127.0.1.x at the same time).
 */
public final class SessionHarness {
    public static final String A = "127.0.2.1";
    public static final String B = "127.0.2.2";
    private static final AtomicInteger PORTS = new AtomicInteger(38515);

    private SessionHarness() {
    }

    /** A TCP port no other test of this run has used. */
    public static int port() {
        return PORTS.getAndIncrement();
    }

    static Path write(Path dir, String name, String text) throws IOException {
        return Files.writeString(dir.resolve(name), text, StandardCharsets.UTF_8);
    }

    /** {@code jroce ARGS} through Main's command line (one-line usage errors, exit codes). */
    static Cli.Result jroce(String... args) {
        return capture((out, err) -> Main.commandLine(out, err).execute(args));
    }

    /** {@code jroce node ARGS}. */
    static Cli.Result node(String... args) {
        String[] all = new String[args.length + 1];
        all[0] = "node";
        System.arraycopy(args, 0, all, 1, args.length);
        return jroce(all);
    }

    /** One node on 127.0.2.1 running {@code script}. */
    static Cli.Result single(Path dir, String script, String... extra) throws IOException {
        Path p = write(dir, "single.jroce", script);
        List<String> args = new ArrayList<>(List.of("--bind", A, "--script", p.toString()));
        args.addAll(Arrays.asList(extra));
        return node(args.toArray(String[]::new));
    }

    /** A node whose standard input is {@code stdin}; {@code terminal} says whether that is a terminal. */
    static Cli.Result withStdin(String stdin, boolean terminal, String... args) {
        return capture((out, err) -> {
            CommandLine cl = new CommandLine(new NodeCommand(new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)), terminal));
            cl.setOut(out);
            cl.setErr(err);
            return cl.execute(args);
        });
    }

    private static Cli.Result capture(BiFunction<PrintWriter, PrintWriter, Integer> command) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit = command.apply(new PrintWriter(out), new PrintWriter(err));
        return new Cli.Result(exit, out.toString(), err.toString());
    }

    /**
     * Two nodes on two threads: A on 127.0.2.1 runs {@code scriptA} (the listening side), B on 127.0.2.2 runs
     * {@code scriptB} with {@code --peer 127.0.2.1}; both on one fresh TCP port.
     */
    static Cli.Result[] pair(Path scriptA, Path scriptB, List<String> extraA, List<String> extraB) throws Exception {
        String port = Integer.toString(port());
        List<String> a = new ArrayList<>(List.of("--bind", A, "--port", port, "--script", scriptA.toString()));
        a.addAll(extraA);
        List<String> b = new ArrayList<>(List.of("--bind", B, "--peer", A, "--port", port, "--script", scriptB.toString()));
        b.addAll(extraB);
        CompletableFuture<Cli.Result> fa = CompletableFuture.supplyAsync(() -> node(a.toArray(String[]::new)));
        CompletableFuture<Cli.Result> fb = CompletableFuture.supplyAsync(() -> node(b.toArray(String[]::new)));
        return new Cli.Result[] {fa.get(120, TimeUnit.SECONDS), fb.get(120, TimeUnit.SECONDS)};
    }

    static Cli.Result[] pair(Path dir, String scriptA, String scriptB, List<String> extraA, List<String> extraB) throws Exception {
        return pair(write(dir, "a.jroce", scriptA), write(dir, "b.jroce", scriptB), extraA, extraB);
    }

    /** Everything a node printed, for assertion messages. */
    public static String show(Cli.Result r) {
        return "exit " + r.exit() + "\n--- out\n" + r.out() + "--- err\n" + r.err();
    }
}
