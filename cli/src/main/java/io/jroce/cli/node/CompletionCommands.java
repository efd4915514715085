package io.jroce.cli.node;

import io.jroce.cli.node.Session.Failure;
import io.jroce.cli.node.Session.Qp;
import io.jroce.cli.node.SessionChecker.Kind;
import io.jroce.cli.node.SessionLanguage.Type;
import io.jroce.cli.node.SessionSyntax.ScriptException;
import io.jroce.cli.node.SessionSyntax.Statement;
import io.jroce.cli.node.Syntax.Positional;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.WcOpcode;
import io.jroce.endpoint.WcStatus;
import io.jroce.endpoint.WorkCompletion;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static io.jroce.cli.node.SessionChecker.err;
import static io.jroce.cli.node.Syntax.Arg.opt;

/** Completions: poll, wait, expect. */
final class CompletionCommands {
    static final Duration DEFAULT_WAIT = Duration.ofSeconds(10);

    private CompletionCommands() {
    }

    static final SessionCommand POLL = new SessionCommand(Syntax.of("poll", Positional.NONE, "poll [cq=CQ] [max=N]",
            "print the completions waiting in a CQ, without waiting", opt("cq", Type.NAME), opt("max", Type.SIZE))) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            return c.withDefault(s, "cq", Kind.CQ);
        }

        @Override
        void run(Session x, Statement s) throws Failure, InterruptedException {
            CompletionQueue cq = x.cq(s);
            List<WorkCompletion> got = x.completions.poll(cq, x.values.size(s, "max", Long.MAX_VALUE));
            if (got.isEmpty() && x.completions.waiting(cq).isEmpty()) x.out.printf("poll %s: empty%n", x.values.name(s, "cq"));
            for (WorkCompletion wc : got) x.out.println("wc " + Completions.describe(wc));
        }
    };

    static final SessionCommand WAIT = new SessionCommand(Syntax.of("wait", Positional.NONE, "wait [cq=CQ] [count=N] [timeout=DUR]",
            "wait for N completions (default 1) and print them; none within the timeout (default 10s) fails the session",
            opt("cq", Type.NAME), opt("count", Type.SIZE), opt("timeout", Type.DURATION))) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            Statement out = c.withDefault(s, "cq", Kind.CQ);
            if (SessionChecker.literalLong(s, "count", 1) == 0) {
                throw err(s.line(), s.arg("count").valueColumn(), "count must be at least 1");
            }
            return out;
        }

        @Override
        void run(Session x, Statement s) throws Failure, InterruptedException {
            Values v = x.values;
            CompletionQueue cq = x.cq(s);
            long count = v.size(s, "count", 1);
            Duration timeout = v.get(s, "timeout", Type.DURATION, DEFAULT_WAIT);
            long deadline = System.nanoTime() + timeout.toNanos();
            for (long got = 0; got < count; got++) {
                WorkCompletion wc = x.completions.next(cq, null, deadline);
                if (wc == null) {
                    throw new Failure("wait: " + got + " of " + count + " completion(s) on cq " + v.name(s, "cq") + " within "
                            + Session.human(timeout) + x.stalledHint());
                }
                x.out.println("wc " + Completions.describe(wc));
            }
        }
    };

    static final SessionCommand EXPECT = new SessionCommand(Syntax.of("expect", Positional.NONE,
            "expect [cq=CQ] [wr_id=N] [status=S] [opcode=O] [len=N] [imm=N|none] [inv=N|none] [qp=QP] [timeout=DUR]",
            "take the next completion (the first with wr_id=, if given) and check its fields; status defaults to SUCCESS; "
                    + "a difference or a timeout (default 10s) fails the session",
            opt("cq", Type.NAME), opt("wr_id", Type.U64), opt("status", Type.STATUS), opt("opcode", Type.OPCODE),
            opt("len", Type.SIZE), opt("imm", Type.IMM_OR_NONE), opt("inv", Type.IMM_OR_NONE), opt("qp", Type.NAME),
            opt("timeout", Type.DURATION))) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            Statement out = c.withDefault(s, "cq", Kind.CQ);
            if (s.has("qp")) c.requireKind(s, s.arg("qp"), Kind.QP);
            if (s.has("status") && !s.arg("status").hasRefs()
                    && SessionLanguage.parse(Type.STATUS, s.arg("status").literal()) != WcStatus.SUCCESS) {
                for (String k : List.of("opcode", "len", "imm", "inv")) {
                    if (s.has(k)) {
                        throw err(s.line(), s.arg(k).column(), "a failed completion carries only wr_id, status and qp: drop " + k
                                + "= or expect status=SUCCESS");
                    }
                }
            }
            return out;
        }

        @Override
        void run(Session x, Statement s) throws Failure, InterruptedException {
            Values v = x.values;
            CompletionQueue cq = x.cq(s);
            String cqName = v.name(s, "cq");
            Long wantId = v.get(s, "wr_id", Type.U64, null);
            Duration timeout = v.get(s, "timeout", Type.DURATION, DEFAULT_WAIT);
            WorkCompletion wc = x.completions.next(cq, wantId, System.nanoTime() + timeout.toNanos());
            if (wc == null) {
                List<String> others = x.completions.waiting(cq);
                throw new Failure("expect: no completion" + (wantId != null ? " with wr_id=" + Long.toUnsignedString(wantId) : "")
                        + " on cq " + cqName + " within " + Session.human(timeout)
                        + (others.isEmpty() ? "" : "; waiting there instead: " + String.join(", ", others)) + x.stalledHint());
            }
            List<String> diffs = differences(x, s, wc);
            if (!diffs.isEmpty()) {
                throw new Failure("expect failed: " + String.join("; ", diffs) + " (completion: " + Completions.describe(wc) + ")");
            }
            x.expectationMet();
            x.out.println("expect ok: " + Completions.describe(wc));
        }
    };

    /** How the completion differs from what the expect statement asks. */
    private static List<String> differences(Session x, Statement s, WorkCompletion wc) throws Failure {
        Values v = x.values;
        List<String> diffs = new ArrayList<>();
        WcStatus status = v.get(s, "status", Type.STATUS, WcStatus.SUCCESS);
        if (wc.status() != status) diffs.add("status is " + wc.status() + ", expected " + status);
        if (s.has("qp")) {
            Qp want = x.qps.get(v.name(s, "qp"));
            if (want != null && wc.qpNum() != want.qp.qpNum()) {
                diffs.add(String.format("qp is 0x%06x, expected 0x%06x (%s)", wc.qpNum(), want.qp.qpNum(), v.name(s, "qp")));
            }
        }
        if (wc.status() != WcStatus.SUCCESS) return diffs;
        if (s.has("opcode")) {
            WcOpcode op = (WcOpcode) v.value(s.arg("opcode"), Type.OPCODE);
            if (wc.opcode() != op) diffs.add("opcode is " + wc.opcode() + ", expected " + op);
        }
        if (s.has("len")) {
            long len = v.size(s, "len", 0);
            if (wc.byteLen() != len) diffs.add("len is " + wc.byteLen() + ", expected " + len);
        }
        if (s.has("imm")) {
            Integer imm = (Integer) v.value(s.arg("imm"), Type.IMM_OR_NONE);
            if (imm == null && wc.hasImm()) diffs.add(String.format("imm is 0x%x, expected none", wc.immData()));
            if (imm != null && !wc.hasImm()) diffs.add(String.format("no imm, expected 0x%x", imm));
            if (imm != null && wc.hasImm() && wc.immData() != imm) diffs.add(String.format("imm is 0x%x, expected 0x%x", wc.immData(), imm));
        }
        if (s.has("inv")) {
            Integer inv = (Integer) v.value(s.arg("inv"), Type.IMM_OR_NONE);
            if (inv == null && wc.hasInv()) diffs.add(String.format("inv is 0x%x, expected none", wc.invalidatedRkey()));
            if (inv != null && !wc.hasInv()) diffs.add(String.format("no invalidated rkey, expected 0x%x", inv));
            if (inv != null && wc.hasInv() && wc.invalidatedRkey() != inv) {
                diffs.add(String.format("inv is 0x%x, expected 0x%x", wc.invalidatedRkey(), inv));
            }
        }
        return diffs;
    }
}
