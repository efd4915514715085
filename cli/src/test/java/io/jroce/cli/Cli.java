package io.jroce.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
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
}
