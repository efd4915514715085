package io.jroce.endpoint;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.net.InetAddress;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The examples of docs/java-api.md, taken from the page verbatim: every {@code ```java} block is a whole program,
 * compiled with javax.tools against this module's classes and run, the way a reader pastes it. Each example checks
 * its own completions and throws if one fails; this test also checks what each prints. Loopback addresses only
 * (127.0.3.1 to .8).
 */
class JavaApiGuideTest {
    private static final Pattern JAVA_BLOCK = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);
    private static final Pattern PUBLIC_CLASS = Pattern.compile("^public class (\\w+)", Pattern.MULTILINE);
    /** The examples the page has, in the order they appear; a new one must be run here too. */
    private static final List<String> EXAMPLES = List.of("WriteExample", "RcConnectExample", "CmServer", "CmClient", "UdExample");
    private static final Duration RUN_LIMIT = Duration.ofSeconds(60);

    @Test
    void everyExampleOfTheGuideCompilesAndRunsAsShown(@TempDir Path dir) throws Exception {
        Map<String, String> examples = examplesOfTheGuide();
        assertEquals(EXAMPLES, List.copyOf(examples.keySet()),
                "docs/java-api.md's examples (each a public class with main) and the ones this test runs");
        Matcher address = Pattern.compile("\"(\\d+\\.\\d+\\.\\d+\\.\\d+|[0-9a-fA-F:]*:[0-9a-fA-F:]*)\"").matcher(String.join("\n", examples.values()));
        while (address.find()) {
            assertTrue(InetAddress.getByName(address.group(1)).isLoopbackAddress(), "the examples run on loopback only: " + address.group());
        }
        ClassLoader loader = compile(examples, dir);

        Capture out = Capture.install();
        try {
            run(loader, "WriteExample");
            assertTrue(out.text().contains("completion: WC{wrId=1, SUCCESS, RDMA_WRITE, len=11, qp=0x"), out.text());
            assertTrue(out.text().contains("\nhello, RDMA\n"), out.text());

            run(loader, "RcConnectExample");
            assertTrue(out.text().contains("B received ping (wrId 7)\n"), out.text());

            run(loader, "UdExample");
            assertTrue(Pattern.compile("received 296 bytes from QP 0x[0-9a-f]+: a datagram\n").matcher(out.text()).find(), out.text());

            // the server first; the client once the server says it listens, as a reader would start them
            CompletableFuture<Void> server = CompletableFuture.runAsync(() -> {
                try {
                    run(loader, "CmServer");
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            assertTrue(out.await("listening on 127.0.3.7, port 7471\n", RUN_LIMIT) || server.isDone(),
                    "the CM server example listens\n" + out.text());
            if (server.isDone()) server.get();   // it failed before listening: its exception
            run(loader, "CmClient");
            server.get(RUN_LIMIT.toSeconds(), TimeUnit.SECONDS);
            assertTrue(out.text().contains("client: welcome\n"), out.text());
            assertTrue(out.text().contains("server: hello, then ping\n"), out.text());
        } finally {
            out.uninstall();
        }
    }

    /** Each {@code ```java} block of the guide, by the name of its public class, in page order. */
    private static Map<String, String> examplesOfTheGuide() throws Exception {
        Path root = Path.of(System.getProperty("user.dir")).toAbsolutePath().getParent();
        String guide = Files.readString(root.resolve("docs/java-api.md"), StandardCharsets.UTF_8);
        Map<String, String> examples = new LinkedHashMap<>();
        Matcher block = JAVA_BLOCK.matcher(guide);
        while (block.find()) {
            String source = block.group(1);
            Matcher name = PUBLIC_CLASS.matcher(source);
            if (!name.find()) {
                fail("a java block of docs/java-api.md is not a whole program (no 'public class'):\n" + source);
            }
            assertTrue(source.contains("public static void main(String[] args)"), "no main in " + name.group(1));
            assertEquals(null, examples.put(name.group(1), source), "two examples named " + name.group(1));
        }
        return examples;
    }

    /** Compiles the examples against the test class path (this module's classes and its dependencies). */
    private static ClassLoader compile(Map<String, String> examples, Path dir) throws Exception {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertNotNull(javac, "a JDK's compiler (javax.tools)");
        List<Path> files = new ArrayList<>();
        for (Map.Entry<String, String> e : examples.entrySet()) {
            Path file = dir.resolve(e.getKey() + ".java");
            Files.writeString(file, e.getValue(), StandardCharsets.UTF_8);
            files.add(file);
        }
        Path classes = Files.createDirectory(dir.resolve("classes"));
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        try (StandardJavaFileManager fm = javac.getStandardFileManager(diagnostics, null, StandardCharsets.UTF_8)) {
            List<String> options = List.of("-classpath", System.getProperty("java.class.path"), "-d", classes.toString(),
                    "-Xlint:all", "-Werror");
            boolean ok = javac.getTask(null, fm, diagnostics, options, null, fm.getJavaFileObjectsFromPaths(files)).call();
            String messages = diagnostics.getDiagnostics().stream().map(JavaApiGuideTest::describe).collect(Collectors.joining("\n"));
            assertTrue(ok, "the examples of docs/java-api.md compile without warnings:\n" + messages);
        }
        return new URLClassLoader(new URL[] {classes.toUri().toURL()}, JavaApiGuideTest.class.getClassLoader());
    }

    private static String describe(Diagnostic<? extends JavaFileObject> d) {
        return d.getKind() + " " + (d.getSource() == null ? "" : Path.of(d.getSource().toUri()).getFileName() + ":" + d.getLineNumber())
                + ": " + d.getMessage(null);
    }

    /** Runs one example's main, with its own exception (not reflection's wrapper) if it fails. */
    private static void run(ClassLoader loader, String example) throws Exception {
        Class<?> type = Class.forName(example, true, loader);
        assertTimeoutPreemptively(RUN_LIMIT, () -> {
            try {
                type.getMethod("main", String[].class).invoke(null, (Object) new String[0]);
            } catch (InvocationTargetException e) {
                throw e.getCause() instanceof Exception cause ? cause : e;
            }
        }, example + " ran too long");
    }

    /** System.out, kept as well as printed, so the test can read and wait for what the examples print. */
    private static final class Capture extends OutputStream {
        private final PrintStream original;
        private final ByteArrayOutputStream kept = new ByteArrayOutputStream();

        private Capture(PrintStream original) { this.original = original; }

        static Capture install() {
            Capture c = new Capture(System.out);
            System.setOut(new PrintStream(c, true, StandardCharsets.UTF_8));
            return c;
        }

        void uninstall() { System.setOut(original); }

        @Override
        public synchronized void write(int b) {
            kept.write(b);
            original.write(b);
            notifyAll();
        }

        @Override
        public synchronized void write(byte[] b, int off, int len) {
            kept.write(b, off, len);
            original.write(b, off, len);
            notifyAll();
        }

        synchronized String text() { return kept.toString(StandardCharsets.UTF_8); }

        /** Waits until {@code s} has been printed; false after {@code limit}. */
        synchronized boolean await(String s, Duration limit) throws InterruptedException {
            long end = System.nanoTime() + limit.toNanos();
            while (!text().contains(s)) {
                long left = end - System.nanoTime();
                if (left <= 0) return false;
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
            return true;
        }
    }
}
