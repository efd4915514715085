package io.jroce.cli.node;

import io.jroce.cli.node.Session.Exit;
import io.jroce.cli.node.Session.Failure;
import io.jroce.cli.node.SessionSyntax.ScriptException;
import io.jroce.cli.node.SessionSyntax.Statement;

/**
 * One command of the session language, whole: its syntax (which {@code help}, the reference table and the
 * checker's generic argument checks read), the checks only it knows, and what it does when the line runs.
 * Every command is listed once, in {@link SessionLanguage#COMMANDS}.
 */
abstract class SessionCommand {
    private final Syntax syntax;

    SessionCommand(Syntax syntax) {
        this.syntax = syntax;
    }

    final Syntax syntax() {
        return syntax;
    }

    /**
     * Checks what the generic checks cannot (names defined on earlier lines, ranges, defaults) after they
     * passed, records what the line defines in the checker's symbols, and returns the statement normalized:
     * with a left-out {@code qp=} or {@code cq=} filled in, so {@link #run} needs no defaults of its own.
     */
    Statement check(SessionChecker checker, Statement s) throws ScriptException {
        return s;
    }

    /** Runs a checked statement. */
    abstract void run(Session session, Statement s) throws Failure, Exit, InterruptedException;
}
