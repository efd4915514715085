package io.jroce.cli.demo;

import io.jroce.cli.Converters;
import io.jroce.cli.Main;
import io.jroce.cli.conn.JroceHandshake;
import io.jroce.endpoint.Mtu;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * {@code jroce demo}: two {@code jroce node} child processes (the same java, the same jar) on two loopback
 * addresses run the example sessions {@code server.jroce} and {@code client.jroce}: SEND, RDMA WRITE, RDMA READ
 * and atomics, every completion and every byte checked. The parent collects the machine-readable
 * {@code result} lines of both and prints one table. {@code --in-process} runs the single-JVM self-test
 * ({@link InProcessDemo}) instead. The sessions are resources of the jar, {@code io/jroce/cli/examples}.
 */
@Command(name = "demo",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Start two 'jroce node' processes on two loopback addresses that run the example sessions "
                    + "(server.jroce and client.jroce, in the jar and in /opt/jroce/examples of the image: SEND, RDMA WRITE, RDMA READ and atomics with "
                    + "expectations and SHA-256 checks), then print what each operation took.",
            "With --in-process: a self-test, both nodes in this JVM, every operation at every size from 0 bytes to 1 MiB "
                    + "verified; it reports pass or fail and the counters. It measures no performance: that is 'jroce perf' "
                    + "between two processes.",
            "Exit status: 0 if both sessions met every expectation (or every transfer verified), 1 otherwise, "
                    + "2 on bad usage or an argument that cannot be used (an address not of this machine, a port in use, a file that cannot be written)."
        })
public final class DemoCommand implements Callable<Integer> {
    /** How long a node may run on after its peer failed: it is probably waiting for that peer. */
    private static final long AFTER_PEER_FAILED_MS = 5_000;

    @Spec
    CommandSpec spec;

    @Option(names = "--in-process", description = "Self-test: run both nodes in this JVM and verify every operation and size.")
    boolean inProcess;

    @Option(names = "--node-a", paramLabel = "ADDR", defaultValue = "127.0.0.1", description = "Address of node A, the passive side (default: ${DEFAULT-VALUE}).")
    String addrA;

    @Option(names = "--node-b", paramLabel = "ADDR", defaultValue = "127.0.0.2", description = "Address of node B, the active side (default: ${DEFAULT-VALUE}).")
    String addrB;

    @Option(names = "--mtu", paramLabel = "BYTES", defaultValue = "4096", converter = Converters.PathMtu.class,
            description = "Path MTU: 256, 512, 1024, 2048 or 4096 (default: ${DEFAULT-VALUE}).")
    Mtu mtu;

    @Option(names = "--pcap", paramLabel = "PATH",
            description = "Keep captures: a directory that receives node-a.pcap and node-b.pcap (with --in-process: one pcap file).")
    Path pcap;

    @Option(names = "--port", paramLabel = "N", defaultValue = "" + JroceHandshake.DEFAULT_PORT,
            description = "TCP port of the nodes' connection exchange (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = "--timeout", paramLabel = "S", defaultValue = "120", converter = Converters.Time.class,
            description = "Give up on the nodes after S seconds, or e.g. 90s or 2m (default: ${DEFAULT-VALUE}).")
    Duration timeout;

    @Option(names = "--iters", paramLabel = "N", defaultValue = "4", description = "--in-process: messages per operation and size (default: ${DEFAULT-VALUE}).")
    int iters;

    @Option(names = "--seed", paramLabel = "N", description = "--in-process: seed for payloads and starting PSNs (default: random, printed).")
    Long seed;

    @Option(names = "--chaos", paramLabel = "SPEC", description = "--in-process: inject faults into node A's datagrams, both "
            + "directions, e.g. drop=0.01,seed=7 (the keys of --chaos in 'jroce help node'): every transfer must still verify.")
    String chaosSpec;

    private final Launcher launcher;

    DemoCommand() {
        this(new ProcessLauncher());
    }

    /** For tests: start the nodes some other way (in this JVM, on threads). */
    DemoCommand(Launcher launcher) {
        this.launcher = launcher;
    }

    /** Starts one {@code jroce node} with the given arguments (everything after {@code jroce}). */
    interface Launcher {
        Node start(String label, List<String> args) throws IOException;
    }

    /** A running node. */
    interface Node {
        /** Waits up to {@code millis}; the exit status, or null while it runs. */
        Integer exit(long millis) throws InterruptedException;

        List<String> out();

        List<String> err();

        void kill();
    }

    @Override
    public Integer call() throws Exception {
        if (inProcess) {
            return new InProcessDemo(spec, addrA, addrB, mtu, iters, seed, pcap, chaosSpec).call();
        }
        for (String o : List.of("--iters", "--seed", "--chaos")) {
            if (spec.commandLine().getParseResult().hasMatchedOption(o)) throw usage(o + " applies to --in-process only");
        }
        String a = address(addrA, "--node-a");
        String b = address(addrB, "--node-b");
        if (a.equals(b)) throw usage("--node-a and --node-b must differ: each node binds UDP 4791 on its own address");
        // before any node starts: an address not of this machine is a bad argument, not a node failing later
        io.jroce.cli.DeviceOptions.checkLocal(spec, Converters.ip(a), "--node-a");
        io.jroce.cli.DeviceOptions.checkLocal(spec, Converters.ip(b), "--node-b");
        if (timeout.compareTo(Duration.ofSeconds(1)) < 0) throw usage("--timeout must be at least 1 second");
        if (pcap != null) {
            try {
                Files.createDirectories(pcap);
            } catch (IOException e) {
                // the exception's message is often the path itself: say why instead
                String why = e instanceof java.nio.file.FileAlreadyExistsException ? "a file of that name exists"
                        : e instanceof java.nio.file.AccessDeniedException ? "permission denied"
                        : e instanceof java.nio.file.FileSystemException f && f.getReason() != null ? f.getReason()
                        : e.getClass().getSimpleName();
                throw usage("--pcap: cannot create directory " + pcap + ": " + why);
            }
            String why = io.jroce.cli.DeviceOptions.unwritable(pcap.resolve("node-a.pcap"));
            if (why != null) throw usage("--pcap: " + why);
        }
        // last, a port the nodes cannot have: UDP 4791 on either address, the TCP exchange port on A, where B connects
        io.jroce.cli.DeviceOptions.checkRocePortFree(spec, Converters.ip(a), 4791, "--node-a");
        io.jroce.cli.DeviceOptions.checkRocePortFree(spec, Converters.ip(b), 4791, "--node-b");
        if (port < 1 || port > 65535) throw usage("--port must be 1..65535, not " + port);
        checkListen(Converters.ip(a));
        PrintWriter out = spec.commandLine().getOut();
        Path work = Files.createTempDirectory("jroce-demo");
        try {
            Path serverScript = Files.writeString(work.resolve("server.jroce"), example("server.jroce"));
            Path clientScript = Files.writeString(work.resolve("client.jroce"), example("client.jroce"));
            List<String> argsA = nodeArgs(a, null, serverScript, "node-a.pcap");
            List<String> argsB = nodeArgs(b, a, clientScript, "node-b.pcap");
            out.printf("jroce demo: two jroce node processes, A on %s runs server.jroce, B on %s runs client.jroce (path MTU %d)%n",
                    a, b, mtu.bytes());
            out.flush();
            long t0 = System.nanoTime();
            Node nodeA = launcher.start("A", argsA);
            Node nodeB;
            try {
                nodeB = launcher.start("B", argsB);
            } catch (IOException | RuntimeException e) {
                nodeA.kill();
                throw e;
            }
            Integer[] exits = awaitBoth(nodeA, nodeB);
            double secs = (System.nanoTime() - t0) / 1e9;
            return report(out, nodeA, nodeB, exits, secs, work.toString() + java.io.File.separator);
        } finally {
            deleteTree(work);
        }
    }

    /** An example session of the jar: {@code io/jroce/cli/examples/NAME}, also the image's /opt/jroce/examples. */
    static String example(String name) throws IOException {
        try (InputStream in = DemoCommand.class.getResourceAsStream("/io/jroce/cli/examples/" + name)) {
            if (in == null) throw new IOException("example session " + name + " is missing from the jar");
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    private List<String> nodeArgs(String bind, String peer, Path script, String pcapName) {
        List<String> args = new ArrayList<>(List.of("node", "--bind", bind, "--port", Integer.toString(port), "--mtu",
                Integer.toString(mtu.bytes()), "--results", "--script", script.toString()));
        if (peer != null) args.addAll(List.of("--peer", peer));
        if (pcap != null) args.addAll(List.of("--pcap", pcap.resolve(pcapName).toString()));
        return args;
    }

    /** Both exit statuses; a node still running after the deadline, or long after its peer failed, is killed (null). */
    private Integer[] awaitBoth(Node nodeA, Node nodeB) throws InterruptedException {
        Node[] nodes = {nodeA, nodeB};
        Integer[] exits = new Integer[2];
        long deadline = System.nanoTime() + timeout.toNanos();
        boolean shortened = false;
        while (exits[0] == null || exits[1] == null) {
            for (int i = 0; i < 2; i++) {
                if (exits[i] == null) exits[i] = nodes[i].exit(exits[1 - i] == null ? 25 : 100);
                if (exits[i] != null && exits[i] != 0 && !shortened) {
                    deadline = Math.min(deadline, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(AFTER_PEER_FAILED_MS));
                    shortened = true;
                }
            }
            if (System.nanoTime() - deadline > 0) {
                for (int i = 0; i < 2; i++) {
                    if (exits[i] == null) nodes[i].kill();
                }
                break;
            }
        }
        return exits;
    }

    /** One parsed {@code result op=...} line. */
    record Row(String node, String op, long size, long packets, double micros, String status, long atMillis) {
    }

    /** The {@code result op=} lines of a node's output. */
    static List<Row> rows(String node, List<String> lines) {
        List<Row> rows = new ArrayList<>();
        for (String line : lines) {
            Map<String, String> kv = resultFields(line);
            if (kv == null || !kv.containsKey("op")) continue;
            try {
                String flags = kv.getOrDefault("flags", "");
                rows.add(new Row(node, kv.get("op") + (flags.isEmpty() ? "" : " (" + flags.replace(",", ", ") + ")"),
                        Long.parseLong(kv.getOrDefault("size", "0")), Long.parseLong(kv.getOrDefault("packets", "0")),
                        Double.parseDouble(kv.getOrDefault("time_us", "0")), kv.getOrDefault("status", "?"),
                        Long.parseLong(kv.getOrDefault("at_ms", "0"))));
            } catch (NumberFormatException ignored) {
                // a malformed line is not a result
            }
        }
        return rows;
    }

    /** The key=value fields of a "result ..." line, or null for any other line. */
    static Map<String, String> resultFields(String line) {
        if (!line.startsWith("result ")) return null;
        Map<String, String> kv = new LinkedHashMap<>();
        for (String word : line.substring(7).trim().split("\\s+")) {
            int eq = word.indexOf('=');
            if (eq > 0) kv.put(word.substring(0, eq), word.substring(eq + 1));
            else kv.put(word, "");
        }
        return kv;
    }

    /** {@code scripts}: the temporary directory of the session files, left out of the lines shown. */
    private int report(PrintWriter out, Node nodeA, Node nodeB, Integer[] exits, double secs, String scripts) {
        List<Row> rows = new ArrayList<>(rows("A", nodeA.out()));
        rows.addAll(rows("B", nodeB.out()));
        rows.sort(Comparator.comparingLong(Row::atMillis)); // one machine, one clock: the order they completed in
        out.println();
        out.printf("%-4s  %-30s %9s %8s %11s  %s%n", "node", "operation", "bytes", "packets", "time", "status");
        for (Row r : rows) {
            out.printf("%-4s  %-30s %9d %8d %11s  %s%n", r.node(), r.op(), r.size(), r.packets(), time(r.micros()), r.status());
        }
        out.println();
        boolean ok = true;
        String[] names = {"A", "B"};
        String[] addrs = {addrA, addrB};
        Node[] nodes = {nodeA, nodeB};
        for (int i = 0; i < 2; i++) {
            Integer exit = exits[i];
            Map<String, String> summary = null;
            String counters = null;
            for (String line : nodes[i].out()) {
                Map<String, String> kv = resultFields(line);
                if (kv != null && kv.containsKey("summary")) summary = kv;
                if (line.startsWith("counters device ")) counters = line.substring(line.indexOf(':') + 1).trim();
            }
            boolean good = exit != null && exit == 0;
            ok &= good;
            String met = summary == null ? "" : summary.get("expects") + " expectations and " + summary.get("compares") + " comparisons met, ";
            Integer other = exits[1 - i];
            out.printf("node %s %s: %s%s%n", names[i], addrs[i], good ? met : "FAILED, ", exit != null ? "exit " + exit
                    : other != null && other != 0 ? "stopped after node " + names[1 - i] + " failed (it was waiting for its peer)"
                    : "killed: still running after --timeout " + Converters.seconds(timeout));
            if (counters != null) out.printf("  counters: %s%n", counters);
            if (!good) {
                for (String line : nodes[i].err()) out.println("  " + line.replace(scripts, ""));
                List<String> tail = nodes[i].out().stream().filter(l -> !l.startsWith("result ")).toList();
                if (nodes[i].err().isEmpty()) {
                    for (String line : tail.subList(Math.max(0, tail.size() - 8), tail.size())) out.println("  | " + line);
                }
            }
        }
        if (pcap != null) {
            out.printf("captures: %s and %s (jroce inspect FILE, or open them in Wireshark)%n", pcap.resolve("node-a.pcap"),
                    pcap.resolve("node-b.pcap"));
        }
        out.printf(ok ? "demo: both sessions met every expectation (%.1f s)%n" : "demo: FAILED (%.1f s)%n", secs);
        out.flush();
        // a node refusing what the demo gave it (its address or port in use) is the demo's usage error
        boolean refused = (exits[0] != null && exits[0] == Main.EXIT_USAGE) || (exits[1] != null && exits[1] == Main.EXIT_USAGE);
        return ok ? 0 : refused ? Main.EXIT_USAGE : Main.EXIT_FAILURE;
    }

    static String time(double micros) {
        if (micros < 1000) return String.format("%.0f us", micros);
        if (micros < 1_000_000) return String.format("%.2f ms", micros / 1e3);
        return String.format("%.2f s", micros / 1e6);
    }

    private String address(String text, String option) {
        try {
            return io.jroce.wire.IpText.of(Converters.ip(text));
        } catch (IllegalArgumentException e) {
            throw usage(option + ": " + e.getMessage());
        }
    }

    /** Node A listens for B on TCP --port at its address: taken, a usage error before the nodes start. */
    private void checkListen(java.net.InetAddress a) {
        try (java.net.ServerSocket probe = new java.net.ServerSocket()) {
            probe.setReuseAddress(true);
            probe.bind(new java.net.InetSocketAddress(a, port), 1);
        } catch (IOException e) {
            throw usage("--port: cannot listen on TCP " + io.jroce.wire.IpText.withPort(a, port) + " (" + e.getMessage()
                    + "): choose another port with --port or stop the program using it");
        }
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException ignored) {
            // a temporary directory left behind is harmless
        }
    }

    // ------------------------------------------------------------------------------------------------

    /** Child processes: this JVM's java binary and this jar (or class path, when not run from the jar). */
    static final class ProcessLauncher implements Launcher {
        @Override
        public Node start(String label, List<String> args) throws IOException {
            List<String> cmd = javaCommand();
            cmd.addAll(args);
            Process p = new ProcessBuilder(cmd).start();
            p.getOutputStream().close();
            return new ProcessNode(p, label);
        }

        static List<String> javaCommand() {
            String java = ProcessHandle.current().info().command()
                    .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            List<String> cmd = new ArrayList<>(List.of(java));
            for (String prop : List.of("logback.configurationFile", "jroce.cq.spinMicros")) {
                String v = System.getProperty(prop);
                if (v != null) cmd.add("-D" + prop + "=" + v);
            }
            Path code = codeSource();
            if (code != null && Files.isRegularFile(code) && code.toString().endsWith(".jar")) {
                cmd.addAll(List.of("-jar", code.toString()));
            } else {
                cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName()));
            }
            return cmd;
        }

        private static Path codeSource() {
            try {
                var src = Main.class.getProtectionDomain().getCodeSource();
                return src == null ? null : Path.of(src.getLocation().toURI());
            } catch (URISyntaxException | RuntimeException e) {
                return null;
            }
        }
    }

    private static final class ProcessNode implements Node {
        private final Process process;
        private final List<String> out = Collections.synchronizedList(new ArrayList<>());
        private final List<String> err = Collections.synchronizedList(new ArrayList<>());
        private final Thread outReader;
        private final Thread errReader;

        ProcessNode(Process process, String label) {
            this.process = process;
            this.outReader = reader(process.getInputStream(), out, "jroce-demo-" + label + "-out");
            this.errReader = reader(process.getErrorStream(), err, "jroce-demo-" + label + "-err");
        }

        private static Thread reader(InputStream in, List<String> sink, String name) {
            Thread t = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                    for (String line; (line = r.readLine()) != null; ) sink.add(line);
                } catch (IOException ignored) {
                    // the process ended
                }
            }, name);
            t.setDaemon(true);
            t.start();
            return t;
        }

        @Override
        public Integer exit(long millis) throws InterruptedException {
            if (!process.waitFor(millis, TimeUnit.MILLISECONDS)) return null;
            outReader.join(2_000);
            errReader.join(2_000);
            return process.exitValue();
        }

        @Override
        public List<String> out() {
            synchronized (out) {
                return List.copyOf(out);
            }
        }

        @Override
        public List<String> err() {
            synchronized (err) {
                return List.copyOf(err);
            }
        }

        @Override
        public void kill() {
            process.destroyForcibly();
        }
    }
}
