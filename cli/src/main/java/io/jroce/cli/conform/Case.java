package io.jroce.cli.conform;

import java.io.IOException;
import java.util.List;

/**
 * One conformance case: what it tests (IBTA section or compliance statement), where rdma_rxe implements the rule
 * (file, function), the answers the spec allows (every one of them, in {@link Reply#normalised} notation, with
 * "; "-separated facts such as what memory holds afterwards), and the steps that produce the observed answer.
 *
 * @param fatal the peer's QP may be in the error state afterwards (a class C/D responder error, IBTA 9.9.3):
 *              such cases run last, each on a fresh QP when the peer offers one
 * @param releases the case ends the connection manager's connection that gave us the QP (a DREQ): it runs after every
 *              other case, whatever state the QP is in, and the QP is not probed afterwards
 */
record Case(String id, String group, String title, String section, String rxe, boolean fatal, boolean releases, List<String> expected,
            Body body) {

    static final String RC = "rc-request";
    static final String IGNORE = "ignored-response";
    static final String HEADER = "header-check";
    static final String UD = "ud";
    static final String CM = "cm";

    @FunctionalInterface
    interface Body {
        Outcome run(Probe p) throws IOException;
    }

    /** What a case saw: the normalised answer, or why it cannot tell. */
    record Outcome(String observed, String cannotTell) {
        static Outcome of(String observed) {
            return new Outcome(observed, null);
        }

        static Outcome cannotTell(String why) {
            return new Outcome(null, why);
        }
    }

    enum Verdict {
        CONFORMS("conforms"), DEPARTS("departs"), CANNOT_TELL("cannot tell");

        final String text;

        Verdict(String text) {
            this.text = text;
        }
    }

    /** The judged result of running a case. */
    record Result(Case c, String observed, Verdict verdict, String note) {
    }

    Result judge(Outcome o) {
        if (o.cannotTell() != null) return new Result(this, o.observed(), Verdict.CANNOT_TELL, o.cannotTell());
        if (expected.contains(o.observed())) return new Result(this, o.observed(), Verdict.CONFORMS, null);
        return new Result(this, o.observed(), Verdict.DEPARTS, "departs from " + section);
    }
}
