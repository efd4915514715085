package io.jroce.cli.node;

import io.jroce.wire.IpText;
import io.jroce.cli.DeviceOptions;
import io.jroce.cli.OptionHelp;
import io.jroce.cli.Main;
import io.jroce.cli.metrics.MetricsExport;
import io.jroce.cli.conn.JroceHandshake;
import io.jroce.cli.node.SessionSyntax.ScriptException;
import io.jroce.cli.node.SessionSyntax.Statement;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.DeviceConfig;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.fault.FaultInjector;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code jroce node}: one RoCEv2 device on one address, driven by a session (a script file, standard input, or
 * a prompt). The whole script is parsed and checked before the device opens, so a typo costs no traffic.
 */
@Command(name = "node",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Run one RoCEv2 node on ADDR (UDP 4791) and execute a session: memory regions, queues, a connection to a "
                    + "peer node, SEND / RDMA WRITE / READ / atomics, and expectations on completions and memory.",
            "Without --script the session is read from standard input; when that is a terminal, at a prompt with "
                    + "line editing, Tab completion and a history kept across sessions (Up, Ctrl-R; see --history); "
                    + "'history' lists this session's lines, !N repeats one.",
            "The language is described by 'help' at the prompt ('help COMMAND' for one command); without a terminal, e.g. "
                    + "'echo help | jroce node --bind 127.0.0.1'.",
            "Exit status: 0 if every expectation was met, 1 if one failed or the run failed, 2 for a usage or script "
                    + "error (reported with line and column before any traffic) or an argument that cannot be used (an address "
                    + "not of this machine, a port in use, a file that cannot be written), or the status given to 'exit'."
        })
public final class NodeCommand implements Callable<Integer>, OptionHelp {
    public static final int DEFAULT_TCP_PORT = JroceHandshake.DEFAULT_PORT;
    /** The environment variable that moves (or, set to none or empty, turns off) the prompt's history file. */
    static final String HISTORY_ENV = "JROCE_HISTORY";

    @Spec
    CommandSpec spec;

    @Mixin
    DeviceOptions options = new DeviceOptions();


    @Option(names = "--port", paramLabel = "N", defaultValue = "" + DEFAULT_TCP_PORT,
            description = "TCP port of the connection exchange for 'listen' and 'connect' (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = "--peer", paramLabel = "ADDR", description = "Default host= of 'connect'.")
    String peer;

    @Option(names = "--script", paramLabel = "FILE", description = "Run the session in FILE ('-': standard input).")
    String script;

    @Option(names = "--history", paramLabel = "FILE",
            description = "Where the prompt keeps its history (the last " + TerminalPrompt.HISTORY_LINES + " lines) across "
                    + "sessions; 'none' keeps none. Default: $" + HISTORY_ENV + ", else ~/.jroce_history.")
    String historyFile;

    @Option(names = "--linger", paramLabel = "DUR",
            description = "After a successful session, keep answering the peer until it has been quiet for DUR "
                    + "(its last request may need our ACK again); default 1s with fault injection, else 0.")
    String linger;

    @Option(names = "--results", description = "Print a machine-readable 'result ...' line per signaled work request and at the end.")
    boolean results;

    @Option(names = {"-v", "--verbose"}, description = "More logging: -v INFO, -vv DEBUG (and stack traces); default WARN.")
    boolean[] verbose = new boolean[0];

    @Override
    public Map<String, String> optionHelp() {
        return Map.of(
                "--bind", DeviceOptions.BIND_HELP + " 'listen' waits for the peer's TCP connection on it too. Required.",
                "--mtu", DeviceOptions.MTU_HELP + " The path MTU of 'listen' and 'connect' (default: 1024, as ibv_rc_pingpong).",
                "--tail-probe", DeviceOptions.TAIL_PROBE_HELP + " Default: 1000 (1 ms).",
                "--chaos", DeviceOptions.CHAOS_HELP + " The session's 'chaos' command changes it while the node runs.",
                "--agent", DeviceOptions.AGENT_HELP + " Default: dedicated: a node spends most of its time waiting elsewhere "
                        + "(at the prompt, in 'listen', in 'sleep') while its peers send to it, read and write its memory and "
                        + "wait for its acknowledgements, and it polls its completion queues only when a command such as "
                        + "'poll', 'wait' or 'expect' asks; a thread of its own answers the peers at once, where an invoked "
                        + "device would leave them to its standby thread.");
    }

    private final InputStream stdin;
    private final Boolean terminal;

    public NodeCommand() {
        this(null, null);
    }

    /** For tests: read standard input from {@code stdin}; {@code terminal} says whether it is a terminal. */
    NodeCommand(InputStream stdin, Boolean terminal) {
        this.stdin = stdin;
        this.terminal = terminal;
    }

    @Override
    public Integer call() {
        Logging.verbosity(verbose.length);
        WarmUp.beforeNetty();
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        try {
            return run(out, err);
        } catch (ParameterException e) {
            throw e;
        } catch (RuntimeException e) {
            err.println("jroce node: " + Main.describe(e));
            if (verbose.length >= 2) e.printStackTrace(err);
            err.flush();
            return Main.EXIT_FAILURE;
        }
    }

    private int run(PrintWriter out, PrintWriter err) {
        InetAddress address = options.bind(spec);
        if (address == null) throw usage("Missing required option: '--bind=ADDR'");
        InetAddress peerAddress = peer == null ? null : DeviceOptions.peerFor(spec, address, DeviceOptions.address(spec, peer, "--peer"), "--peer");
        if (port < 1 || port > 65535) throw usage("--port must be 1..65535, not " + port);
        // the default path MTU of 'listen' and 'connect'
        Mtu pathMtu = options.mtu(Mtu.MTU_1024);
        java.time.Duration lingerFor = null;
        if (linger != null) {
            try {
                lingerFor = SessionLanguage.duration(linger);
            } catch (IllegalArgumentException e) {
                throw usage("--linger: " + e.getMessage());
            }
        }
        FaultInjector chaos = options.chaos(spec);

        // the session: a whole script is read, parsed and checked before the device opens
        boolean interactive = script == null && isTerminal();
        String source = script == null || script.equals("-") ? "<stdin>" : script;
        Path baseDir = script == null || script.equals("-") ? Path.of("").toAbsolutePath()
                : Path.of(script).toAbsolutePath().getParent();
        List<Statement> statements = null;
        if (!interactive) {
            String text = readScript();
            try {
                statements = SessionChecker.checkScript(SessionSyntax.parseScript(text), peerAddress != null, baseDir);
            } catch (ScriptException e) {
                err.println(e.format(source));
                err.flush();
                return Main.EXIT_USAGE;
            }
        }

        DeviceOptions.checkLocal(spec, address);
        if (statements != null) {
            // a script's 'listen' on a TCP port another program holds: an argument that cannot be used, found before
            // the device opens, as the other commands find a server's port in use
            String taken = takenListenPort(statements, address, source);
            if (taken != null) {
                err.println(taken);
                err.flush();
                return Main.EXIT_USAGE;
            }
        }
        DeviceConfig config = options.sessionConfig(spec, address);
        Device device;
        try {
            device = io.jroce.cli.ExitCleanup.register(Device.open(config));
        } catch (IOException e) {
            String msg = String.valueOf(e.getMessage());
            boolean inUse = msg.contains("in use");
            if (inUse) {
                // an address that cannot be used is a bad argument (exit 2), as one that is not local
                err.println("jroce node: UDP port 4791 on " + IpText.of(address) + " is already in use (another jroce node, or "
                        + "rdma_rxe, which binds 4791 on every address): stop it or bind another address");
            } else {
                err.println("jroce node: " + Session.oneLine(msg));
            }
            if (verbose.length >= 2) e.printStackTrace(err);
            err.flush();
            return inUse ? Main.EXIT_USAGE : Main.EXIT_FAILURE;
        }
        try (MetricsExport exported = options.exportMetrics(spec, device)) {
            WarmUp.device(device);
            if (!device.isEpoll()) err.println("jroce node: warning: epoll unavailable, running on NIO (rdma_rxe peers may drop our packets)");
            if (options.chaosGiven()) out.println("chaos: " + chaos.spec());
            Session session = new Session(device, chaos, new Session.Settings(address, port, peerAddress, pathMtu, results, baseDir), out);
            int code = interactive ? interactive(session, out, err) : runScript(session, statements, source, out, err);
            java.time.Duration quiet = lingerFor != null ? lingerFor
                    : options.chaosGiven() || session.chaosUsed() ? java.time.Duration.ofSeconds(1) : java.time.Duration.ZERO;
            if (code == 0 && session.hadPeer() && !quiet.isZero()) {
                out.flush();
                try {
                    session.linger(quiet, quiet.multipliedBy(10));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            session.counters("nonzero");
            session.printSummary();
            session.closeCm();
            return code;
        } finally {
            options.printCounters(err, device);
            out.flush();
            err.flush();
            device.close();
        }
    }

    /**
     * The first 'listen' of a script (not 'listen cm', which takes no TCP port) whose TCP port, its port= or --port,
     * cannot be listened on at {@code address}: its error line, or null when every one can. A port given through a
     * reference is known only when the line runs, and is left to it.
     */
    private String takenListenPort(List<Statement> statements, InetAddress address, String source) {
        for (Statement s : statements) {
            if (!s.verb().equals("listen") || s.has("cm")) continue;
            int at = port;
            if (s.has("port")) {
                SessionSyntax.Token t = s.arg("port");
                if (t.hasRefs()) continue;
                StringBuilder text = new StringBuilder();
                for (SessionSyntax.Part p : t.parts()) text.append(((SessionSyntax.Literal) p).text());
                try {
                    at = Integer.parseInt(text.toString());
                } catch (NumberFormatException e) {
                    continue; // the checker has judged it already
                }
            }
            try (java.net.ServerSocket probe = new java.net.ServerSocket()) {
                probe.setReuseAddress(true);
                probe.bind(new java.net.InetSocketAddress(address, at), 1);
            } catch (IOException e) {
                return "jroce node: " + source + ":" + s.line() + ": listen: cannot listen on TCP " + IpText.withPort(address, at) + " (" + e.getMessage()
                        + "): choose another port with port= or --port or stop the program using it";
            }
        }
        return null;
    }

    private int runScript(Session session, List<Statement> statements, String source, PrintWriter out, PrintWriter err) {
        for (Statement s : statements) {
            session.history().add(s.text().strip());
            try {
                session.run(s);
            } catch (Session.Exit e) {
                return e.code;
            } catch (Session.Failure e) {
                out.flush();
                err.println(source + ":" + s.line() + ": " + e.getMessage());
                if (verbose.length >= 2) e.printStackTrace(err);
                err.flush();
                session.noteFailure();
                session.stats();
                return Main.EXIT_FAILURE;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                err.println(source + ":" + s.line() + ": interrupted");
                return Main.EXIT_FAILURE;
            }
        }
        return session.failures() > 0 ? Main.EXIT_FAILURE : 0;
    }

    /** A prompt: each line is checked and run on its own; errors are printed and the session goes on. */
    private int interactive(Session session, PrintWriter out, PrintWriter err) {
        out.println("jroce node " + options.bind(spec).getHostAddress() + ": type 'help' for the commands, 'exit' or end of input to leave");
        out.flush();
        try (Prompt prompt = prompt(session, out, err)) {
            return lineByLine(session, prompt, out, err);
        }
    }

    /** JLine on the process's own terminal; a plain prompt for a stream a test gives, or if JLine finds no terminal. */
    private Prompt prompt(Session session, PrintWriter out, PrintWriter err) {
        if (stdin == null && terminal == null) {
            Path file = historyPath(historyFile, System.getenv(HISTORY_ENV), System.getProperty("user.home"));
            Prompt p = TerminalPrompt.open(new SessionCompleter(session::names), file, err);
            if (p != null) return p;
        }
        return new Prompt.Plain(stdin == null ? System.in : stdin, out);
    }

    /** The history file: --history, else $JROCE_HISTORY, else ~/.jroce_history; null for none. */
    static Path historyPath(String option, String env, String home) {
        String given = option != null ? option : env;
        if (given == null) return home == null ? null : Path.of(home, ".jroce_history");
        if (given.isBlank() || given.strip().equals("none")) return null;
        return Path.of(given);
    }

    private int lineByLine(Session session, Prompt prompt, PrintWriter out, PrintWriter err) {
        SessionChecker.Symbols symbols = new SessionChecker.Symbols();
        List<String> history = session.history();
        while (true) {
            String line;
            try {
                line = prompt.read();
            } catch (IOException e) {
                err.println("jroce node: reading standard input: " + e.getMessage());
                break;
            }
            if (line == null) {
                out.println();
                break;
            }
            String trimmed = line.strip();
            if (trimmed.startsWith("!")) {
                String again = recall(trimmed, history);
                if (again == null) {
                    err.println("no such line in the history: " + trimmed + " ('history' lists them)");
                    err.flush();
                    continue;
                }
                out.println(again);
                out.flush();
                prompt.recalled(again);
                line = again;
                trimmed = again.strip();
            }
            if (trimmed.isEmpty() || trimmed.startsWith("#")) continue;
            history.add(trimmed);
            int lineNo = history.size();
            SessionChecker.Symbols attempt = symbols.copy();
            try {
                Statement s = SessionSyntax.parseLine(line, lineNo);
                s = new SessionChecker(attempt, peer != null, Path.of("").toAbsolutePath()).check(s);
                session.run(s);
                symbols = attempt;
            } catch (ScriptException e) {
                err.println("line " + e.line + (e.column > 0 ? ":" + e.column : "") + ": " + e.getMessage());
            } catch (Session.Failure e) {
                session.noteFailure();
                err.println("line " + lineNo + ": " + e.getMessage());
                if (verbose.length >= 2) e.printStackTrace(err);
                // not committed: a failed verb created nothing (a listen that timed out may be tried again)
            } catch (Session.Exit e) {
                return e.code;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            out.flush();
            err.flush();
        }
        return session.failures() > 0 ? Main.EXIT_FAILURE : 0;
    }

    /** "!!" is the last line, "!N" line N of the history. */
    static String recall(String bang, List<String> history) {
        if (bang.equals("!!")) return history.isEmpty() ? null : history.get(history.size() - 1);
        try {
            int n = Integer.parseInt(bang.substring(1).strip());
            return n >= 1 && n <= history.size() ? history.get(n - 1) : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private boolean isTerminal() {
        return terminal != null ? terminal : System.console() != null;
    }

    private String readScript() {
        try {
            if (script == null || script.equals("-")) {
                return new String((stdin == null ? System.in : stdin).readAllBytes(), StandardCharsets.UTF_8);
            }
            // any readable file that is not a directory: a regular file, a pipe (<(...)), /dev/stdin
            Path p = Path.of(script);
            if (!Files.exists(p)) throw usage("--script: " + script + " does not exist");
            if (Files.isDirectory(p)) throw usage("--script: " + script + " is a directory, not a session file");
            String text = new String(Files.readAllBytes(p), StandardCharsets.UTF_8);
            if (text.isBlank()) {
                throw usage("--script: " + script + " is empty; a session file holds the statements to run, one per line "
                        + "('help' at the node's prompt lists them)");
            }
            return text;
        } catch (IOException e) {
            String why = e instanceof java.nio.file.AccessDeniedException ? "permission denied"
                    : e instanceof java.nio.file.FileSystemException f && f.getReason() != null ? f.getReason() : e.getMessage();
            throw usage("--script: cannot read " + script + ": " + why);
        }
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    /**
     * A fresh JVM spends 100-300 ms on the first datagram its event loop handles (Netty's JFR event setup, the
     * first pool chunk, class loading), longer than the 67 ms local ACK timeout of the peer's first request;
     * with two JVMs starting on a small machine that ends in retransmissions or RETRY_EXC_ERR. Pay it before
     * the connection exists.
     */
    static final class WarmUp {
        private WarmUp() {
        }

        /** Netty records buffer allocations as JFR events unless told otherwise; a node has no use for them. */
        static void beforeNetty() {
            if (System.getProperty("io.netty.jfr.enabled") == null) System.setProperty("io.netty.jfr.enabled", "false");
        }

        static void device(Device device) {
            device.runOnLoop(() -> {
                // the receive batch buffer (64 slots of 4200 bytes) and a small packet, from the loop's own pool cache
                io.netty.buffer.PooledByteBufAllocator.DEFAULT.directBuffer(4200 * 64).release();
                io.netty.buffer.PooledByteBufAllocator.DEFAULT.directBuffer(64).release();
            });
        }
    }

    /** Sets the root log level from -v/-vv; without them the configuration (logback.xml or yours) decides. */
    static final class Logging {
        private Logging() {
        }

        static void verbosity(int v) {
            if (v <= 0) return;
            org.slf4j.Logger root = LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
            if (root instanceof ch.qos.logback.classic.Logger lb) {
                lb.setLevel(v >= 2 ? ch.qos.logback.classic.Level.DEBUG : ch.qos.logback.classic.Level.INFO);
            }
        }
    }
}
