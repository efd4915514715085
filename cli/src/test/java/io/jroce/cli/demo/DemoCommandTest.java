package io.jroce.cli.demo;

import io.jroce.cli.Cli;
import io.jroce.cli.Main;

import io.jroce.cli.node.SessionScriptsTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static io.jroce.cli.node.SessionHarness.A;
import static io.jroce.cli.node.SessionHarness.B;
import static io.jroce.cli.node.SessionHarness.port;
import static io.jroce.cli.node.SessionHarness.show;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code jroce demo}. The two-process orchestration is exercised with the nodes on threads of this JVM (the
 * launcher is the only thing swapped); real child processes are left to the integration tests, since the jar
 * is built after this module's tests.
 */
class DemoCommandTest {
    @TempDir
    Path dir;

    /** Runs each "child" as {@code jroce ARGS} on its own thread. */
    static final class ThreadLauncher implements DemoCommand.Launcher {
        final List<List<String>> started = new ArrayList<>();

        @Override
        public DemoCommand.Node start(String label, List<String> args) {
            started.add(args);
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            CompletableFuture<Integer> exit = CompletableFuture.supplyAsync(() ->
                    Main.commandLine(new PrintWriter(out, true), new PrintWriter(err, true)).execute(args.toArray(String[]::new)));
            return new DemoCommand.Node() {
                @Override
                public Integer exit(long millis) throws InterruptedException {
                    try {
                        return exit.get(millis, TimeUnit.MILLISECONDS);
                    } catch (TimeoutException e) {
                        return null;
                    } catch (java.util.concurrent.ExecutionException e) {
                        return 99;
                    }
                }

                @Override
                public List<String> out() {
                    return out.toString().lines().toList();
                }

                @Override
                public List<String> err() {
                    return err.toString().lines().toList();
                }

                @Override
                public void kill() {
                    exit.cancel(true);
                }
            };
        }
    }

    /** A node that has already ended with the given status and output. */
    static DemoCommand.Node ended(int status, List<String> out, List<String> err) {
        return new DemoCommand.Node() {
            @Override
            public Integer exit(long millis) {
                return status;
            }

            @Override
            public List<String> out() {
                return out;
            }

            @Override
            public List<String> err() {
                return err;
            }

            @Override
            public void kill() {
            }
        };
    }

    static Cli.Result demo(DemoCommand.Launcher launcher, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = Main.commandLine(new PrintWriter(out), new PrintWriter(err));
        // the same command line as 'jroce demo', with our launcher in the demo's place
        CommandLine demo = new CommandLine(new DemoCommand(launcher));
        demo.setOut(new PrintWriter(out));
        demo.setErr(new PrintWriter(err));
        demo.setParameterExceptionHandler(cl.getParameterExceptionHandler());
        demo.setExecutionExceptionHandler(cl.getExecutionExceptionHandler());
        int exit = demo.execute(args);
        return new Cli.Result(exit, out.toString(), err.toString());
    }

    @Test
    void theDemoRunsTheShippedExampleSessions() throws Exception {
        Path repo = SessionScriptsTest.repo();
        Path examples = repo.resolve("cli/src/main/resources/io/jroce/cli/examples");
        for (String name : List.of("server.jroce", "client.jroce")) {
            assertEquals(Files.readString(examples.resolve(name)), DemoCommand.example(name), name + " as the demo reads it from the jar");
        }
        // the image's /opt/jroce/examples is that one folder too
        assertTrue(Files.readString(repo.resolve("Dockerfile"))
                .contains("COPY --from=build /src/cli/src/main/resources/io/jroce/cli/examples /opt/jroce/examples"));
    }

    @Test
    void twoNodesExchangeEveryOperationAndTheDemoTabulatesThem() {
        ThreadLauncher launcher = new ThreadLauncher();
        int p = port();
        Cli.Result r = demo(launcher, "--node-a", A, "--node-b", B, "--port", Integer.toString(p), "--pcap", dir.toString());
        assertEquals(0, r.exit(), show(r));
        assertEquals(List.of("node", "--bind", A, "--port", Integer.toString(p), "--mtu", "4096", "--results", "--script"),
                launcher.started.get(0).subList(0, 9));
        assertTrue(launcher.started.get(1).containsAll(List.of("--peer", A, "--bind", B)), launcher.started.get(1).toString());
        String out = r.out();
        assertTrue(out.startsWith("jroce demo: two jroce node processes, A on 127.0.2.1 runs server.jroce, B on 127.0.2.2 runs client.jroce"), out);
        for (String row : List.of("B     SEND                                4096", "B     SEND_WITH_IMM (solicited)             16",
                "B     SEND (inline)                          5", "B     RDMA_WRITE_WITH_IMM               524288",
                "B     RDMA_READ                        1048576", "B     ATOMIC_FETCH_AND_ADD                   8",
                "B     ATOMIC_CMP_AND_SWP                     8", "B     SEND_WITH_INV                          4",
                "A     SEND                                   3")) {
            assertTrue(out.contains(row), row + " in\n" + out);
        }
        assertTrue(out.contains("node A 127.0.2.1: 6 expectations and 6 comparisons met, exit 0"), out);
        assertTrue(out.contains("node B 127.0.2.2: 9 expectations and 5 comparisons met, exit 0"), out);
        assertTrue(out.contains("demo: both sessions met every expectation"), out);
        assertTrue(Files.exists(dir.resolve("node-a.pcap")) && Files.exists(dir.resolve("node-b.pcap")));
        Cli.Result inspect = Cli.run("inspect", dir.resolve("node-b.pcap").toString());
        assertEquals(0, inspect.exit(), show(inspect));
        assertTrue(inspect.out().contains("RC_SEND_ONLY_WITH_INVALIDATE"), inspect.out());
    }

    @Test
    void aFailedNodeFailsTheDemoAndShowsWhy() {
        DemoCommand.Launcher launcher = (label, args) -> label.equals("A")
                ? ended(1, List.of("mr inbox: 65536 bytes", "result summary expects=0 compares=0 failures=1"),
                        List.of("server.jroce:41: compare target failed: byte at offset 0 is 0x00, expected 0x95"))
                : ended(0, List.of("result op=SEND size=4096 packets=2 time_us=812.5 status=SUCCESS wr_id=1 line=20 at_ms=5",
                        "counters device 127.0.2.2: packets_in=2 (others 0)", "result summary expects=9 compares=5 failures=0"), List.of());
        Cli.Result r = demo(launcher, "--node-a", A, "--node-b", B);
        assertEquals(1, r.exit(), show(r));
        assertTrue(r.out().contains("node A 127.0.2.1: FAILED, exit 1\n  server.jroce:41: compare target failed"), r.out());
        assertTrue(r.out().contains("node B 127.0.2.2: 9 expectations and 5 comparisons met, exit 0\n  counters: packets_in=2 (others 0)"), r.out());
        assertTrue(r.out().contains("B     SEND                                4096        2      813 us  SUCCESS"), r.out());
        assertTrue(r.out().contains("demo: FAILED"), r.out());
    }

    @Test
    void aNodeStillWaitingAfterItsPeerFailedIsStopped() {
        List<String> killed = new ArrayList<>();
        DemoCommand.Launcher launcher = (label, args) -> label.equals("A")
                ? ended(1, List.of(), List.of("jroce node: UDP port 4791 on 127.0.2.1 is already in use (...)"))
                : new DemoCommand.Node() {
                    @Override
                    public Integer exit(long millis) {
                        return killed.isEmpty() ? null : 137;
                    }

                    @Override
                    public List<String> out() {
                        return List.of("connect ...");
                    }

                    @Override
                    public List<String> err() {
                        return List.of();
                    }

                    @Override
                    public void kill() {
                        killed.add(label);
                    }
                };
        Cli.Result r = demo(launcher, "--node-a", A, "--node-b", B);
        assertEquals(1, r.exit(), show(r));
        assertEquals(List.of("B"), killed);
        assertTrue(r.out().contains("node B 127.0.2.2: FAILED, stopped after node A failed (it was waiting for its peer)"), r.out());
        assertTrue(r.out().contains("already in use"), r.out());
    }

    @Test
    void inProcessIsASelfTestOfEveryOperationAndSize() {
        Cli.Result r = Cli.run("demo", "--in-process", "--node-a", A, "--node-b", B, "--iters", "1", "--seed", "7");
        assertEquals(0, r.exit(), show(r));
        assertTrue(r.out().startsWith("jroce demo --in-process: node A 127.0.2.1, node B 127.0.2.2, path MTU 4096, seed 7"), r.out());
        for (String op : List.of("SEND", "SEND_WITH_IMM", "RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "RDMA_READ")) {
            for (int size : new int[] {0, 1, 4095, 4096, 4097, 65536, 1 << 20}) {
                assertTrue(r.out().matches("(?s).*\\n" + op + " +" + size + " +1 +\\d+  ok\\n.*"), op + " " + size + " in\n" + r.out());
            }
        }
        assertTrue(r.out().contains("ATOMIC_FETCH_AND_ADD"), r.out());
        assertTrue(r.out().contains("ATOMIC_CMP_AND_SWP"), r.out());
        assertTrue(r.out().contains("counters: A packets out "), r.out());
        assertTrue(r.out().contains("demo: self-test passed, all transfers verified"), r.out());
        assertFalse(r.out().contains("performance") || r.out().contains("Gbit/s") || r.out().contains("MB/s"), r.out());
        // the measurement is gone: performance is jroce perf's, between two processes
        Cli.Result bench = Cli.run("demo", "--in-process", "--node-a", A, "--node-b", B, "--bench-seconds", "1");
        assertEquals(2, bench.exit(), show(bench));
        assertTrue(bench.err().contains("Unknown options: '--bench-seconds'"), bench.err());
        assertTrue(Cli.run("demo", "--help").out().contains("jroce perf"));
    }

    @Test
    void usageErrors() {
        String[][] cases = {
            {"--iters", "3"},
            {"--node-a", A, "--node-b", A},
            {"--node-a", "localhost"},
            {"--mtu", "9000"},
            {"--timeout", "0"},
        };
        String[] says = {"--iters applies to --in-process only", "must differ", "is not an IPv4 address", "path MTU", "--timeout"};
        for (int i = 0; i < cases.length; i++) {
            Cli.Result r = demo((label, args) -> {
                throw new AssertionError("no node may start on a usage error");
            }, cases[i]);
            assertEquals(2, r.exit(), show(r));
            assertEquals(1, r.errLines().size(), r.err());
            assertTrue(r.err().contains(says[i]), r.err());
        }
    }

    @Test
    void resultLinesAreParsed() {
        List<DemoCommand.Row> rows = DemoCommand.rows("B", List.of(
                "fill data: 5 bytes at offset 0",
                "result op=SEND flags=inline,solicited size=5 packets=2 time_us=2460.5 status=SUCCESS wr_id=3 line=30 at_ms=17",
                "result summary expects=9 compares=5 failures=0",
                "result op=RDMA_READ size=oops"));
        assertEquals(List.of(new DemoCommand.Row("B", "SEND (inline, solicited)", 5, 2, 2460.5, "SUCCESS", 17)), rows);
        assertNull(DemoCommand.resultFields("expect ok: ..."));
        assertEquals("9", DemoCommand.resultFields("result summary expects=9 compares=5").get("expects"));
        assertEquals("812 us", DemoCommand.time(812.4));
        assertEquals("2.46 ms", DemoCommand.time(2460.5));
        assertEquals("1.50 s", DemoCommand.time(1.5e6));
    }

    @Test
    void childrenRunThisJavaOnThisJarOrClassPath() {
        List<String> cmd = DemoCommand.ProcessLauncher.javaCommand();
        assertTrue(Files.isExecutable(Path.of(cmd.get(0))), cmd.toString());
        // under surefire Main comes from target/classes, not from the jar
        assertTrue(cmd.contains("-cp") || cmd.contains("-jar"), cmd.toString());
        assertEquals(cmd.contains("-cp") ? Main.class.getName() : cmd.get(cmd.indexOf("-jar") + 1),
                cmd.get(cmd.size() - 1), cmd.toString());
        assertFalse(cmd.contains("node"), cmd.toString());
    }
}
