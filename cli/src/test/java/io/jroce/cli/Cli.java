package io.jroce.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;

/** Runs the jroce command in-process and captures its output. */
public final class Cli {
    public record Result(int exit, String out, String err) {
        public List<String> outLines() {
            return out.lines().toList();
        }

        public List<String> errLines() {
            return err.lines().toList();
        }
    }

    private Cli() {
    }

    public static Result run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit = Main.commandLine(new PrintWriter(out), new PrintWriter(err)).execute(args);
        return new Result(exit, out.toString(), err.toString());
    }

    /** {@code -Djroce.shared} (set by surefire), else ../shared or ../../shared from the working directory. */
    public static Path shared() {
        String prop = System.getProperty("jroce.shared");
        if (prop != null && Files.isDirectory(Paths.get(prop, "vectors"))) {
            return Paths.get(prop);
        }
        for (String c : new String[] {"../shared", "../../shared", "../../../shared"}) {
            Path p = Paths.get(c).toAbsolutePath().normalize();
            if (Files.isDirectory(p.resolve("vectors"))) {
                return p;
            }
        }
        throw new IllegalStateException("shared folder not found; set -Djroce.shared=/path/to/shared");
    }

    public static Path golden() {
        return shared().resolve("vectors/rocev2-golden.pcap");
    }
}
