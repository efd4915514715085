package io.jroce.cli.node;

import io.jroce.cli.node.Session.Exit;
import io.jroce.cli.node.Session.Failure;
import io.jroce.cli.node.SessionLanguage.Type;
import io.jroce.cli.node.SessionSyntax.ScriptException;
import io.jroce.cli.node.SessionSyntax.Statement;
import io.jroce.cli.node.SessionSyntax.Token;
import io.jroce.cli.node.Syntax.Positional;
import io.jroce.endpoint.fault.Direction;
import io.jroce.endpoint.fault.FaultInjector;
import io.jroce.endpoint.fault.FaultPlan;
import io.jroce.endpoint.fault.FaultRule;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.List;

import static io.jroce.cli.node.SessionChecker.err;

/** The session itself: counters, stats, chaos, echo, sleep, history, help, exit. */
final class ControlCommands {
    private ControlCommands() {
    }

    /** The word after 'counters'. */
    static final List<String> COUNTER_SETS = List.of("device", "qp", "chaos", "all");

    static final SessionCommand COUNTERS = new SessionCommand(Syntax.of("counters", Positional.OPTIONAL_WORD,
            "counters [device|qp|chaos|all]", "print non-zero counters of the device, each QP and the fault injector (all: zeros too)")) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            return checkWord(s, t -> SessionLanguage.choice(t, "counter set", COUNTER_SETS.toArray(String[]::new)));
        }

        @Override
        void run(Session x, Statement s) {
            x.counters(s.positional().isEmpty() ? "nonzero" : s.positional().get(0).literal());
        }
    };

    static final SessionCommand STATS = new SessionCommand(Syntax.of("stats", Positional.NONE, "stats",
            "one line of live state per QP: state, PSNs, queue use, retries")) {
        @Override
        void run(Session x, Statement s) {
            x.stats();
        }
    };

    static final SessionCommand CHAOS = new SessionCommand(Syntax.of("chaos", Positional.REST, "chaos SPEC | chaos off",
            "change fault injection now (random faults and rules), e.g. chaos drop=0.1,reorder=0.05 "
                    + "(the seed is fixed when the node starts)")) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            String spec = SessionChecker.restText(s, false);
            if (spec.isBlank()) throw err(s.line(), 0, "usage: chaos SPEC | chaos off, e.g. chaos drop=0.05,seed=42");
            if (!spec.equals("off") && !spec.contains("$")) {
                try {
                    FaultInjector.parse(spec);
                } catch (IllegalArgumentException e) {
                    int col = s.positional().isEmpty() ? s.named().values().iterator().next().column() : s.positional().get(0).column();
                    throw err(s.line(), col, e.getMessage());
                }
            }
            for (Token t : s.named().values()) c.checkRefs(s, t);
            return s;
        }

        @Override
        void run(Session x, Statement s) throws Failure {
            String spec = x.values.rest(s, false);
            FaultInjector chaos = x.chaos;
            PrintWriter out = x.out;
            if (chaos == null) throw new Failure("chaos: this node has no fault injector");
            if (spec.equals("off")) {
                chaos.plan(Direction.IN, FaultPlan.none());
                chaos.plan(Direction.OUT, FaultPlan.none());
                chaos.clearRules();
                out.println("chaos: off");
                return;
            }
            FaultInjector parsed = FaultInjector.parse(spec);
            x.markChaosUsed();
            chaos.plan(Direction.IN, parsed.plan(Direction.IN));
            chaos.plan(Direction.OUT, parsed.plan(Direction.OUT));
            // the spec says everything: its rules replace the ones before, as its plans do
            chaos.clearRules();
            for (FaultRule r : parsed.rules()) {
                parsed.removeRule(r);
                chaos.addRule(r);
            }
            boolean seedGiven = spec.matches("(?s).*(^|,)\\s*seed\\s*=.*");
            out.println("chaos: " + chaos.spec() + (seedGiven && parsed.seed() != chaos.seed()
                    ? " (the seed is chosen when the node starts: --chaos seed=" + parsed.seed() + " to replay with it)" : ""));
        }
    };

    static final SessionCommand ECHO = new SessionCommand(Syntax.of("echo", Positional.REST, "echo TEXT...",
            "print the text ($mr.rkey and other references expanded)")) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            for (Token t : s.named().values()) c.checkRefs(s, t);
            return s;
        }

        @Override
        void run(Session x, Statement s) throws Failure {
            x.out.println(x.values.rest(s, true));
        }
    };

    static final SessionCommand SLEEP = new SessionCommand(Syntax.of("sleep", Positional.WORD, "sleep DUR", "pause, e.g. sleep 200ms")) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            Token t = s.positional().get(0);
            return t.hasRefs() ? s : checkWord(s, SessionLanguage::duration);
        }

        @Override
        void run(Session x, Statement s) throws Failure, InterruptedException {
            Thread.sleep(Math.max(0, ((Duration) x.values.value(s.positional().get(0), Type.DURATION)).toMillis()));
        }
    };

    static final SessionCommand HISTORY = new SessionCommand(Syntax.of("history", Positional.NONE, "history",
            "list the lines entered so far (!N runs line N again, !! the last)")) {
        @Override
        void run(Session x, Statement s) {
            List<String> history = x.history();
            for (int i = 0; i < history.size(); i++) x.out.printf("%5d  %s%n", i + 1, history.get(i));
        }
    };

    static final SessionCommand HELP = new SessionCommand(Syntax.of("help", Positional.OPTIONAL_WORD, "help [COMMAND]",
            "list the commands, or describe one")) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            if (!s.positional().isEmpty() && SessionLanguage.command(s.positional().get(0).literal()) == null) {
                Token t = s.positional().get(0);
                throw err(s.line(), t.column(), "no command '" + t.literal() + "'; 'help' lists them");
            }
            return s;
        }

        @Override
        void run(Session x, Statement s) {
            PrintWriter out = x.out;
            if (!s.positional().isEmpty()) {
                Syntax c = SessionLanguage.command(s.positional().get(0).literal()).syntax();
                out.println(c.usage());
                out.println("  " + c.summary());
                return;
            }
            out.println("commands (one per line; name=value arguments; # comments; \"quotes\"; $mr.rkey references):");
            for (SessionCommand c : SessionLanguage.COMMANDS) out.println("  " + c.syntax().usage());
            out.println("'help COMMAND' describes one.");
        }
    };

    static final SessionCommand EXIT = new SessionCommand(Syntax.of("exit", Positional.OPTIONAL_WORD, "exit [CODE]",
            "end the session (default status 0, or 1 if anything failed)")) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            return checkWord(s, SessionLanguage::exitCode);
        }

        @Override
        void run(Session x, Statement s) throws Failure, Exit {
            throw new Exit(s.positional().isEmpty() ? (x.failures() > 0 ? 1 : 0)
                    : SessionLanguage.exitCode(x.values.text(s.positional().get(0))));
        }
    };

    /** A parser of a literal word that throws IllegalArgumentException saying what was expected. */
    @FunctionalInterface
    private interface WordCheck {
        Object parse(String word);
    }

    /** The positional word, if there is one, must parse; the error points at it. */
    private static Statement checkWord(Statement s, WordCheck parser) throws ScriptException {
        if (s.positional().isEmpty()) return s;
        Token t = s.positional().get(0);
        try {
            parser.parse(t.literal());
        } catch (IllegalArgumentException e) {
            throw err(s.line(), t.column(), e.getMessage());
        }
        return s;
    }
}
