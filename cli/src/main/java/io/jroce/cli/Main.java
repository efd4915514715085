package io.jroce.cli;

import io.netty.util.concurrent.FastThreadLocalThread;
import io.jroce.cli.conform.ConformCommand;
import io.jroce.cli.exec.ExecCommand;
import io.jroce.cli.demo.DemoCommand;
import io.jroce.cli.inspect.InspectCommand;
import io.jroce.cli.perf.PerfCommand;
import io.jroce.cli.perf.PingpongCommand;
import io.jroce.cli.cmtools.UcmatoseCommand;
import io.jroce.cli.cmtools.UdaddyCommand;
import io.jroce.cli.rping.RpingCommand;
import io.jroce.cli.node.NodeCommand;
import io.jroce.cli.soak.SoakCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.BufferedWriter;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.Charset;
import java.util.Properties;
import java.util.concurrent.Callable;

/**
 * The {@code jroce} command. Exit codes, the same for every command: 0 success, 1 failure at run time (the command
 * ran but found problems or failed), 2 usage error (bad arguments, or arguments that cannot be used: an address not
 * of this machine, a port in use, a file that cannot be written or read), each with one line on stderr.
 *
 * <p>To add a subcommand, write a picocli {@code @Command} class in a package of its own and list it in
 * {@code subcommands} below.
 */
@Command(name = "jroce",
        mixinStandardHelpOptions = true,
        versionProvider = Main.Version.class,
        description = "A software RoCEv2 endpoint (InfiniBand RC over UDP 4791).",
        footer = {
            "'jroce help COMMAND' or 'jroce COMMAND --help' describes one command.",
            "Exit status of every command: 0 success, 1 a failure at run time, 2 bad usage or an argument that cannot be "
                    + "used (an address not of this machine, a port in use, a file that cannot be written)."
        },
        subcommands = {
            InspectCommand.class,
            DemoCommand.class,
            PingpongCommand.class,
            PerfCommand.class,
            RpingCommand.class,
            UcmatoseCommand.class,
            UdaddyCommand.class,
            NodeCommand.class,
            ConformCommand.class,
            ExecCommand.class,
            SoakCommand.class,
            // ---- add new subcommands here (e.g. DemoCommand.class, NodeCommand.class) ----
            CommandLine.HelpCommand.class,
        })
public final class Main implements Callable<Integer> {
    /** Exit code for usage errors (picocli's default for invalid input). */
    public static final int EXIT_USAGE = 2;
    /** Exit code for failures at run time. */
    public static final int EXIT_FAILURE = 1;

    @Spec
    CommandSpec spec;

    public static void main(String[] args) {
        PrintWriter out = new PrintWriter(new BufferedWriter(new OutputStreamWriter(
                new FileOutputStream(FileDescriptor.out), Charset.defaultCharset()), 1 << 16), false);
        PrintWriter err = new PrintWriter(new OutputStreamWriter(
                new FileOutputStream(FileDescriptor.err), Charset.defaultCharset()), true);
        int[] code = new int[1];
        try {
            // main polls devices in the invoked mode: as a fast-thread-local thread, Netty recycles its per-packet
            // objects on it (buffers, outbound entries) instead of making them anew (AgentMode.INVOKED)
            FastThreadLocalThread.runWithFastThreadLocal(() -> code[0] = commandLine(out, err).execute(args));
        } finally {
            out.flush();
            err.flush();
        }
        System.exit(code[0]);
    }

    /**
     * The configured command line (usage errors on one line, exit codes as documented above). Tests run
     * commands in-process with {@code Main.commandLine(out, err).execute(args...)}.
     */
    public static CommandLine commandLine(PrintWriter out, PrintWriter err) {
        CommandLine cl = new CommandLine(new Main());
        OptionHelp.apply(cl);
        cl.setOut(out);
        cl.setErr(err);
        cl.setParameterExceptionHandler(Main::handleUsageError);
        cl.setExecutionExceptionHandler(Main::handleFailure);
        return cl;
    }

    /** Without a subcommand: a usage error. */
    @Override
    public Integer call() {
        throw new ParameterException(spec.commandLine(), "missing command, one of: "
                + String.join(", ", spec.subcommands().keySet()));
    }

    /** One line: "jroce inspect: Missing required parameter: 'CAPTURE' (see 'jroce inspect --help')". */
    private static int handleUsageError(ParameterException ex, String[] args) {
        CommandLine cmd = ex.getCommandLine();
        String name = cmd.getCommandSpec().qualifiedName();
        String message = String.valueOf(ex.getMessage()).strip().replaceAll("\\s*\\R\\s*", " ");
        cmd.getErr().println(name + ": " + message + " (see '" + name + " --help')");
        cmd.getErr().flush();
        return cmd.getCommandSpec().exitCodeOnInvalidInput();
    }

    /** One line naming the failure; the stack trace only with -Djroce.stacktrace=true. */
    private static int handleFailure(Exception ex, CommandLine cmd, CommandLine.ParseResult parseResult) {
        PrintWriter err = cmd.getErr();
        err.println(cmd.getCommandSpec().qualifiedName() + ": " + describe(ex));
        if (Boolean.getBoolean("jroce.stacktrace")) {
            ex.printStackTrace(err);
        }
        err.flush();
        return cmd.getCommandSpec().exitCodeOnExecutionException();
    }

    public static String describe(Throwable ex) {
        Throwable t = ex instanceof UncheckedIOException && ex.getCause() != null ? ex.getCause() : ex;
        String msg = t.getMessage();
        if (msg == null || msg.isBlank()) {
            return t.getClass().getName();
        }
        msg = msg.strip().replaceAll("\\s*\\R\\s*", " ");
        return t instanceof IOException ? msg : t.getClass().getSimpleName() + ": " + msg;
    }

    /** "jroce 0.1.0-SNAPSHOT" from the jar's Maven metadata. */
    public static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = null;
            try (InputStream in = Main.class.getResourceAsStream("/META-INF/maven/io.jroce/jroce-cli/pom.properties")) {
                if (in != null) {
                    Properties p = new Properties();
                    p.load(in);
                    v = p.getProperty("version");
                }
            } catch (IOException ignored) {
                // fall through
            }
            if (v == null) {
                v = Main.class.getPackage().getImplementationVersion();
            }
            return new String[] {
                "jroce " + (v == null ? "(development build)" : v),
                "Java " + System.getProperty("java.version") + " (" + System.getProperty("java.vm.name") + ")",
            };
        }
    }
}
