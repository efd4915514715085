package io.jroce.cli.node;

import io.jroce.cli.node.SessionLanguage.Arg;
import io.jroce.cli.node.SessionLanguage.Command;
import io.jroce.cli.node.SessionLanguage.Positional;
import io.jroce.cli.node.SessionLanguage.Type;
import io.jroce.cli.node.SessionSyntax.Literal;
import io.jroce.cli.node.SessionSyntax.Part;
import io.jroce.cli.node.SessionSyntax.Ref;
import io.jroce.cli.node.SessionSyntax.ScriptException;
import io.jroce.cli.node.SessionSyntax.Statement;
import io.jroce.cli.node.SessionSyntax.Token;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.fault.FaultInjector;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Validates statements before anything runs: known command, known arguments of the right type, required
 * arguments present, sources and ranges that make sense, names that refer to objects created on an earlier
 * line, QPs connected before traffic is posted. It returns each statement <i>normalized</i>: bare flags
 * ({@code solicited}) become {@code solicited=true} and a left-out {@code qp=} or {@code cq=} names the only
 * one, so the session that runs it needs no defaults of its own.
 */
final class SessionChecker {
    enum Kind { MR, CQ, QP }

    /** What the checker knows of a name at a point of the script. */
    record Sym(Kind kind, int line, long size, boolean connected) {
    }

    /** Names defined so far; copied for interactive lines so a failed line leaves no trace. */
    static final class Symbols {
        final Map<String, Sym> live = new LinkedHashMap<>();

        Symbols copy() {
            Symbols s = new Symbols();
            s.live.putAll(live);
            return s;
        }

        List<String> names(Kind kind) {
            List<String> out = new ArrayList<>();
            live.forEach((k, v) -> {
                if (v.kind() == kind) out.add(k);
            });
            return out;
        }
    }

    private final Symbols symbols;
    private final boolean hasPeerDefault;
    private final Path baseDir;

    /**
     * @param hasPeerDefault whether {@code connect} may leave out {@code host=} (the node has --peer)
     * @param baseDir        where relative {@code file=} paths are looked up
     */
    SessionChecker(Symbols symbols, boolean hasPeerDefault, Path baseDir) {
        this.symbols = symbols;
        this.hasPeerDefault = hasPeerDefault;
        this.baseDir = baseDir;
    }

    Symbols symbols() {
        return symbols;
    }

    /** Checks a whole script against a fresh symbol table; the normalized statements, or the first error. */
    static List<Statement> checkScript(List<Statement> script, boolean hasPeerDefault, Path baseDir) throws ScriptException {
        SessionChecker c = new SessionChecker(new Symbols(), hasPeerDefault, baseDir);
        List<Statement> out = new ArrayList<>(script.size());
        for (Statement s : script) out.add(c.check(s));
        return out;
    }

    Statement check(Statement s) throws ScriptException {
        Command cmd = SessionLanguage.command(s.verb());
        if (cmd == null) {
            String hint = SessionLanguage.suggest(s.verb(), SessionLanguage.verbs());
            throw err(s.line(), s.verbColumn(), "unknown command '" + s.verb() + "'" + (hint != null ? " (did you mean '" + hint + "'?)" : "")
                    + "; 'help' lists the commands");
        }
        s = normalizeFlags(s, cmd);
        checkPositional(s, cmd);
        for (Token t : s.named().values()) {
            if (cmd.positional() == Positional.REST) break; // echo and chaos take their words as text
            Arg a = cmd.arg(t.key());
            if (a == null) {
                String hint = SessionLanguage.suggest(t.key(), cmd.keys());
                throw err(s.line(), t.column(), "unknown argument '" + t.key() + "' for " + cmd.verb()
                        + (hint != null ? " (did you mean '" + hint + "'?)" : "")
                        + (cmd.args().isEmpty() ? "; it takes none" : "; usage: " + cmd.usage()));
            }
            checkValue(s, t, a.type());
        }
        for (Arg a : cmd.args()) {
            if (a.required() && !s.has(a.key())) {
                throw err(s.line(), 0, cmd.verb() + " needs " + a.key() + "=...; usage: " + cmd.usage());
            }
        }
        for (Token t : s.positional()) checkRefs(s, t);
        return semantic(s, cmd);
    }

    // ------------------------------------------------------------------------------------------------

    /** Bare words naming a boolean argument ("solicited") become named ("solicited=true"). */
    private static Statement normalizeFlags(Statement s, Command cmd) {
        if (cmd.positional() == Positional.REST) return s;
        List<Token> positional = new ArrayList<>();
        Map<String, Token> named = new LinkedHashMap<>(s.named());
        boolean changed = false;
        for (Token t : s.positional()) {
            Arg a = !t.quoted() && !t.hasRefs() ? cmd.arg(t.literal()) : null;
            if (a != null && a.type() == Type.BOOL) {
                named.put(a.key(), new Token(a.key(), List.of(new Literal("true")), t.column(), t.column(), false, t.raw()));
                changed = true;
            } else {
                positional.add(t);
            }
        }
        return changed ? new Statement(s.line(), s.text(), s.verb(), s.verbColumn(), List.copyOf(positional), named) : s;
    }

    private void checkPositional(Statement s, Command cmd) throws ScriptException {
        List<Token> p = s.positional();
        switch (cmd.positional()) {
            case NONE -> {
                if (!p.isEmpty()) {
                    Token t = p.get(0);
                    String hint = SessionLanguage.suggest(t.literal(), cmd.keys());
                    throw err(s.line(), t.column(), "unexpected word '" + t.raw() + "' for " + cmd.verb()
                            + (hint != null ? " (did you mean '" + hint + "'?)" : "") + "; usage: " + cmd.usage());
                }
            }
            case NAME -> {
                if (p.isEmpty()) throw err(s.line(), 0, cmd.verb() + " needs a name; usage: " + cmd.usage());
                if (p.size() > 1) throw err(s.line(), p.get(1).column(), "unexpected word '" + p.get(1).raw() + "'; usage: " + cmd.usage());
                Token t = p.get(0);
                if (t.hasRefs()) throw err(s.line(), t.column(), "a name cannot be a $reference");
                try {
                    SessionLanguage.name(t.literal());
                } catch (IllegalArgumentException e) {
                    throw err(s.line(), t.column(), e.getMessage());
                }
            }
            case OPTIONAL_WORD, WORD -> {
                if (p.size() > 1) throw err(s.line(), p.get(1).column(), "unexpected word '" + p.get(1).raw() + "'; usage: " + cmd.usage());
                if (cmd.positional() == Positional.WORD && p.isEmpty()) throw err(s.line(), 0, "usage: " + cmd.usage());
            }
            case REST -> { }
        }
    }

    private void checkValue(Statement s, Token t, Type type) throws ScriptException {
        if (t.hasRefs()) {
            if (type == Type.NAME || type == Type.NAMES) throw err(s.line(), t.valueColumn(), "a name cannot be a $reference");
            checkRefs(s, t);
            return;
        }
        try {
            SessionLanguage.parse(type, t.literal());
        } catch (IllegalArgumentException e) {
            throw err(s.line(), t.valueColumn(), t.key() + ": " + e.getMessage());
        }
    }

    private void checkRefs(Statement s, Token t) throws ScriptException {
        for (Part p : t.parts()) {
            if (p instanceof Ref r) {
                Sym sym = symbols.live.get(r.object());
                if (sym == null) {
                    throw err(s.line(), r.column(), "$" + r.object() + " is not defined here (create it with mr, cq or qp on an earlier line)");
                }
                List<String> fields = switch (sym.kind()) {
                    case MR -> SessionLanguage.MR_FIELDS;
                    case QP -> SessionLanguage.QP_FIELDS;
                    case CQ -> SessionLanguage.CQ_FIELDS;
                };
                if (!fields.contains(r.field())) {
                    throw err(s.line(), r.column(), "a " + sym.kind().name().toLowerCase() + " has no field '" + r.field() + "' (fields: "
                            + String.join(", ", fields) + ")");
                }
            }
        }
    }

    // ------------------------------------------------------------------------------------------------
    // per command

    private Statement semantic(Statement s, Command cmd) throws ScriptException {
        for (String k : List.of("retry_cnt", "rnr_retry")) {
            if (s.has(k) && cmd.arg(k) != null && literalLong(s, k, 0) > 7) {
                throw err(s.line(), s.arg(k).valueColumn(), k + " is 3 bits: 0..7 (7 means retry forever for rnr_retry)");
            }
        }
        switch (s.verb()) {
            case "mr" -> {
                String name = defineName(s, Kind.MR);
                long size = literalLong(s, "size", -1);
                if (size == 0 || size > Integer.MAX_VALUE - 8) {
                    throw err(s.line(), s.arg("size").valueColumn(), "size must be 1 byte .. 2 GiB");
                }
                if (s.has("access")) checkAccess(s, s.arg("access"));
                symbols.live.put(name, new Sym(Kind.MR, s.line(), size, false));
            }
            case "dereg" -> {
                String name = s.positional().get(0).literal();
                requireKind(s, s.positional().get(0), Kind.MR);
                symbols.live.remove(name);
            }
            case "fill", "compare" -> {
                Sym mr = requireKind(s, s.positional().get(0), Kind.MR);
                List<String> sources = new ArrayList<>(List.of("text", "hex", "pattern", "file", "u64"));
                if (s.verb().equals("compare")) sources.add("sha256");
                List<String> given = sources.stream().filter(s::has).toList();
                if (given.size() != 1) {
                    throw err(s.line(), given.size() > 1 ? s.arg(given.get(1)).column() : 0, s.verb() + " takes exactly one of "
                            + String.join("=, ", sources) + "=" + (given.isEmpty() ? "" : " (got " + String.join(" and ", given) + ")"));
                }
                if (s.has("seed") && !"random".equals(literalString(s, "pattern"))) {
                    throw err(s.line(), s.arg("seed").column(), "seed= goes with pattern=random");
                }
                if (s.has("file")) checkFile(s, s.arg("file"));
                long srcLen = switch (given.get(0)) {
                    case "text" -> literal(s, "text") == null ? -1 : literal(s, "text").getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
                    case "hex" -> literal(s, "hex") == null ? -1 : SessionLanguage.hex(literal(s, "hex")).length;
                    case "u64" -> 8;
                    default -> -1;
                };
                if (srcLen == 0 && !s.has("len")) throw err(s.line(), s.arg(given.get(0)).valueColumn(), "the source is empty");
                checkRange(s, mr, s.has("len") ? literalLong(s, "len", -1) : srcLen);
            }
            case "dump" -> checkRange(s, requireKind(s, s.positional().get(0), Kind.MR), literalLong(s, "len", -1));
            case "cq" -> {
                String name = defineName(s, Kind.CQ);
                long depth = literalLong(s, "depth", 256);
                if (depth == 0 || depth > (1 << 22)) throw err(s.line(), s.arg("depth").valueColumn(), "depth must be 1..4194304");
                symbols.live.put(name, new Sym(Kind.CQ, s.line(), depth, false));
            }
            case "qp" -> {
                String name = defineName(s, Kind.QP);
                Map<String, Token> named = new LinkedHashMap<>(s.named());
                if (s.has("cq") && (s.has("send_cq") || s.has("recv_cq"))) {
                    throw err(s.line(), s.arg("cq").column(), "give cq= (one CQ for both queues) or send_cq= and recv_cq=, not both");
                }
                if (s.has("send_cq") != s.has("recv_cq")) {
                    throw err(s.line(), 0, "send_cq= and recv_cq= go together (or use cq= for both)");
                }
                if (s.has("send_cq")) {
                    requireKind(s, s.arg("send_cq"), Kind.CQ);
                    requireKind(s, s.arg("recv_cq"), Kind.CQ);
                } else {
                    String cq = resolveDefault(s, "cq", Kind.CQ, "qp");
                    named.put("cq", synth("cq", cq));
                }
                if (s.has("access")) SessionLanguage.access(s.arg("access").literal());
                for (String k : List.of("send_wr", "recv_wr")) {
                    long v = literalLong(s, k, 1);
                    if (v < 1 || v > 65536) throw err(s.line(), s.arg(k).valueColumn(), k + " must be 1..65536");
                }
                long sge = literalLong(s, "sge", 4);
                if (sge < 1 || sge > 32) throw err(s.line(), s.arg("sge").valueColumn(), "sge must be 1..32");
                long inline = literalLong(s, "inline", 64);
                if (inline > 4096) throw err(s.line(), s.arg("inline").valueColumn(), "inline must be 0..4096");
                symbols.live.put(name, new Sym(Kind.QP, s.line(), 0, false));
                return with(s, named);
            }
            case "listen", "connect" -> {
                Map<String, Token> named = new LinkedHashMap<>(s.named());
                String qp = resolveDefault(s, "qp", Kind.QP, s.verb());
                named.put("qp", synth("qp", qp));
                Sym sym = symbols.live.get(qp);
                if (sym.connected()) {
                    throw err(s.line(), s.has("qp") ? s.arg("qp").valueColumn() : 0, "qp " + qp + " is already connected (line "
                            + sym.line() + "): create another QP for a second connection");
                }
                if (s.has("publish") && !s.arg("publish").hasRefs()) {
                    for (String mr : SessionLanguage.names(s.arg("publish").literal())) {
                        Sym m = symbols.live.get(mr);
                        if (m == null || m.kind() != Kind.MR) {
                            throw err(s.line(), s.arg("publish").valueColumn(), "publish: '" + mr + "' is not a memory region defined before this line");
                        }
                    }
                }
                if (s.verb().equals("connect") && !s.has("host") && !hasPeerDefault) {
                    throw err(s.line(), 0, "connect needs host=ADDR (or run the node with --peer ADDR)");
                }
                long rd = literalLong(s, "rd_atomic", 1);
                if (rd > io.jroce.endpoint.QueuePair.MAX_RD_ATOMIC) {
                    throw err(s.line(), s.arg("rd_atomic").valueColumn(), "rd_atomic must be 0.." + io.jroce.endpoint.QueuePair.MAX_RD_ATOMIC);
                }
                symbols.live.put(qp, new Sym(Kind.QP, s.line(), 0, true));
                return with(s, named);
            }
            case "recv" -> {
                Map<String, Token> named = new LinkedHashMap<>(s.named());
                named.put("qp", synth("qp", resolveDefault(s, "qp", Kind.QP, "recv")));
                checkLocalBuffer(s, false);
                return with(s, named);
            }
            case "send", "write", "read", "cas", "fadd" -> {
                Map<String, Token> named = new LinkedHashMap<>(s.named());
                String qp = resolveDefault(s, "qp", Kind.QP, s.verb());
                named.put("qp", synth("qp", qp));
                if (!symbols.live.get(qp).connected()) {
                    throw err(s.line(), s.has("qp") ? s.arg("qp").valueColumn() : s.verbColumn(), "qp " + qp
                            + " is not connected yet: 'listen' or 'connect' it on an earlier line (or modify it to RTS)");
                }
                if (s.has("imm") && s.has("inv")) throw err(s.line(), s.arg("inv").column(), "imm= and inv= exclude each other");
                boolean atomic = s.verb().equals("cas") || s.verb().equals("fadd");
                checkLocalBuffer(s, atomic);
                if (s.verb().equals("send") && s.has("inv") && s.arg("inv").hasRefs()) {
                    throw err(s.line(), s.arg("inv").valueColumn(), "inv= is a peer's region name or an rkey number");
                }
                return with(s, named);
            }
            case "poll", "wait", "expect" -> {
                Map<String, Token> named = new LinkedHashMap<>(s.named());
                named.put("cq", synth("cq", resolveDefault(s, "cq", Kind.CQ, s.verb())));
                if (s.has("qp")) requireKind(s, s.arg("qp"), Kind.QP);
                if (s.verb().equals("expect") && s.has("status") && !s.arg("status").hasRefs()
                        && SessionLanguage.parse(Type.STATUS, s.arg("status").literal()) != io.jroce.endpoint.WcStatus.SUCCESS) {
                    for (String k : List.of("opcode", "len", "imm", "inv")) {
                        if (s.has(k)) {
                            throw err(s.line(), s.arg(k).column(), "a failed completion carries only wr_id, status and qp: drop " + k
                                    + "= or expect status=SUCCESS");
                        }
                    }
                }
                if (s.verb().equals("wait") && literalLong(s, "count", 1) == 0) {
                    throw err(s.line(), s.arg("count").valueColumn(), "count must be at least 1");
                }
                return with(s, named);
            }
            case "counters" -> {
                if (!s.positional().isEmpty()) {
                    Token t = s.positional().get(0);
                    try {
                        SessionLanguage.choice(t.literal(), "counter set", "device", "qp", "chaos", "all");
                    } catch (IllegalArgumentException e) {
                        throw err(s.line(), t.column(), e.getMessage());
                    }
                }
            }
            case "modify", "query" -> {
                Map<String, Token> named = new LinkedHashMap<>(s.named());
                String qp = resolveDefault(s, "qp", Kind.QP, s.verb());
                named.put("qp", synth("qp", qp));
                if (s.verb().equals("modify")) {
                    if (named.size() == 1) throw err(s.line(), 0, "modify needs at least one attribute; usage: " + cmd.usage());
                    if (s.has("state") && !s.arg("state").hasRefs()) {
                        QpState st = (QpState) SessionLanguage.parse(Type.STATE, s.arg("state").literal());
                        Sym sym = symbols.live.get(qp);
                        if (st == QpState.RTS || st == QpState.SQD) symbols.live.put(qp, new Sym(Kind.QP, s.line(), 0, true));
                        else if (st == QpState.RESET) symbols.live.put(qp, new Sym(Kind.QP, sym.line(), 0, false));
                    }
                }
                return with(s, named);
            }
            case "chaos" -> {
                String spec = restText(s, false);
                if (spec.isBlank()) throw err(s.line(), 0, "usage: chaos SPEC | chaos off, e.g. chaos drop=0.05,seed=42");
                if (!spec.equals("off") && !spec.contains("$")) {
                    try {
                        FaultInjector.parse(spec);
                    } catch (IllegalArgumentException e) {
                        int col = s.positional().isEmpty() ? s.named().values().iterator().next().column() : s.positional().get(0).column();
                        throw err(s.line(), col, e.getMessage());
                    }
                }
                for (Token t : s.named().values()) checkRefs(s, t);
            }
            case "echo" -> {
                for (Token t : s.named().values()) checkRefs(s, t);
            }
            case "sleep" -> {
                Token t = s.positional().get(0);
                if (!t.hasRefs()) {
                    try {
                        SessionLanguage.duration(t.literal());
                    } catch (IllegalArgumentException e) {
                        throw err(s.line(), t.column(), e.getMessage());
                    }
                }
            }
            case "help" -> {
                if (!s.positional().isEmpty() && SessionLanguage.command(s.positional().get(0).literal()) == null) {
                    Token t = s.positional().get(0);
                    throw err(s.line(), t.column(), "no command '" + t.literal() + "'; 'help' lists them");
                }
            }
            case "exit" -> {
                if (!s.positional().isEmpty()) {
                    Token t = s.positional().get(0);
                    try {
                        SessionLanguage.exitCode(t.literal());
                    } catch (IllegalArgumentException e) {
                        throw err(s.line(), t.column(), e.getMessage());
                    }
                }
            }
            default -> { }
        }
        return s;
    }

    /** The text of a REST command: positional words and named tokens as written, blank- or comma-joined. */
    static String restText(Statement s, boolean blanks) {
        List<Token> all = new ArrayList<>(s.positional());
        all.addAll(s.named().values());
        all.sort((a, b) -> Integer.compare(a.column(), b.column()));
        List<String> words = new ArrayList<>();
        for (Token t : all) words.add(t.named() ? t.key() + "=" + t.literal() : t.literal());
        return String.join(blanks ? " " : ",", words);
    }

    private void checkLocalBuffer(Statement s, boolean atomic) throws ScriptException {
        if (!s.has("mr")) {
            for (String k : List.of("offset", "len")) {
                if (s.has(k)) throw err(s.line(), s.arg(k).column(), k + "= needs mr=");
            }
            if (s.has("inline")) throw err(s.line(), s.arg("inline").column(), "inline needs mr= (the bytes to copy)");
            return;
        }
        Sym mr = requireKind(s, s.arg("mr"), Kind.MR);
        long len = atomic ? 8 : literalLong(s, "len", -1);
        checkRange(s, mr, len);
        if (atomic) {
            long off = literalLong(s, "offset", 0);
            if (off % 8 != 0) throw err(s.line(), s.arg("offset").valueColumn(), "an atomic's result word must be 8-byte aligned (offset " + off + ")");
            if (s.has("roffset") && literalLong(s, "roffset", 0) % 8 != 0) {
                throw err(s.line(), s.arg("roffset").valueColumn(), "the peer's atomic word must be 8-byte aligned");
            }
        }
    }

    private void checkRange(Statement s, Sym mr, long len) throws ScriptException {
        if (mr.size() < 0) return;
        long off = literalLong(s, "offset", 0);
        if (off > mr.size()) {
            throw err(s.line(), s.arg("offset").valueColumn(), "offset " + off + " is beyond the end of the region (" + mr.size() + " bytes)");
        }
        if (len >= 0 && off + len > mr.size()) {
            Token at = s.has("len") ? s.arg("len") : s.has("offset") ? s.arg("offset") : null;
            throw err(s.line(), at == null ? 0 : at.valueColumn(), "offset " + off + " + length " + len + " exceeds the region ("
                    + mr.size() + " bytes, line " + mr.line() + ")");
        }
    }

    private void checkFile(Statement s, Token t) throws ScriptException {
        if (t.hasRefs()) return;
        Path p = baseDir == null ? Path.of(t.literal()) : baseDir.resolve(t.literal());
        if (!Files.isRegularFile(p) || !Files.isReadable(p)) {
            throw err(s.line(), t.valueColumn(), "file " + p + " does not exist or cannot be read");
        }
    }

    private void checkAccess(Statement s, Token t) throws ScriptException {
        if (t.hasRefs()) return;
        try {
            SessionLanguage.checkRegionAccess(SessionLanguage.access(t.literal()));
        } catch (IllegalArgumentException e) {
            throw err(s.line(), t.valueColumn(), e.getMessage());
        }
    }

    private String defineName(Statement s, Kind kind) throws ScriptException {
        Token t = s.positional().get(0);
        String name = t.literal();
        Sym old = symbols.live.get(name);
        if (old != null) {
            throw err(s.line(), t.column(), "'" + name + "' is already the " + old.kind().name().toLowerCase() + " of line " + old.line()
                    + (old.kind() == Kind.MR ? " (dereg it first, or pick another name)" : " (pick another name)"));
        }
        if (name.equals("last") || name.equals("peer")) throw err(s.line(), t.column(), "'" + name + "' is reserved; pick another name");
        return name;
    }

    private Sym requireKind(Statement s, Token t, Kind kind) throws ScriptException {
        String name = t.literal();
        Sym sym = symbols.live.get(name);
        String what = kind == Kind.MR ? "memory region" : kind == Kind.CQ ? "completion queue" : "queue pair";
        if (sym == null) {
            String hint = SessionLanguage.suggest(name, symbols.names(kind));
            throw err(s.line(), t.named() ? t.valueColumn() : t.column(), "no " + what + " '" + name + "' here"
                    + (hint != null ? " (did you mean '" + hint + "'?)" : "") + "; create it with '" + kind.name().toLowerCase()
                    + " " + name + " ...' on an earlier line");
        }
        if (sym.kind() != kind) {
            throw err(s.line(), t.named() ? t.valueColumn() : t.column(), "'" + name + "' is a " + sym.kind().name().toLowerCase()
                    + " (line " + sym.line() + "), not a " + what);
        }
        return sym;
    }

    /** The object named by {@code key}, or the only object of that kind. */
    private String resolveDefault(Statement s, String key, Kind kind, String verb) throws ScriptException {
        if (s.has(key)) {
            requireKind(s, s.arg(key), kind);
            return s.arg(key).literal();
        }
        List<String> all = symbols.names(kind);
        if (all.size() == 1) return all.get(0);
        String what = kind == Kind.CQ ? "completion queue" : "queue pair";
        if (all.isEmpty()) {
            throw err(s.line(), 0, verb + " needs a " + what + ": create one first ('" + kind.name().toLowerCase() + " NAME')");
        }
        throw err(s.line(), 0, verb + ": there are " + all.size() + " " + what + "s (" + String.join(", ", all) + "); name one with "
                + key + "=NAME");
    }

    private static Token synth(String key, String value) {
        return new Token(key, List.of(new Literal(value)), 0, 0, false, key + "=" + value);
    }

    private static Statement with(Statement s, Map<String, Token> named) {
        return new Statement(s.line(), s.text(), s.verb(), s.verbColumn(), s.positional(), named);
    }

    private static String literal(Statement s, String key) {
        Token t = s.arg(key);
        return t == null || t.hasRefs() ? null : t.literal();
    }

    private static String literalString(Statement s, String key) {
        String v = literal(s, key);
        return v == null ? null : v.toLowerCase();
    }

    /** The literal value of a size-like argument, {@code dflt} if absent, -1 if it is a $reference. */
    private static long literalLong(Statement s, String key, long dflt) {
        Token t = s.arg(key);
        if (t == null) return dflt;
        if (t.hasRefs()) return -1;
        return SessionLanguage.size(t.literal());
    }

    private static ScriptException err(int line, int column, String message) {
        return new ScriptException(line, column, message);
    }
}
