package io.jroce.cli.node;

import io.jroce.cli.node.SessionLanguage.Type;
import io.jroce.cli.node.SessionSyntax.Literal;
import io.jroce.cli.node.SessionSyntax.Part;
import io.jroce.cli.node.SessionSyntax.Ref;
import io.jroce.cli.node.SessionSyntax.ScriptException;
import io.jroce.cli.node.SessionSyntax.Statement;
import io.jroce.cli.node.SessionSyntax.Token;
import io.jroce.cli.node.Syntax.Arg;
import io.jroce.cli.node.Syntax.Positional;

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

    /**
     * What the checker knows of a name at a point of the script; {@code ud}: a UD queue pair (sends name their
     * destination, or go to {@code udPeer}: the peer a {@code connect cm} resolved).
     */
    record Sym(Kind kind, int line, long size, boolean connected, boolean ud, boolean udPeer) {
        Sym(Kind kind, int line, long size, boolean connected) {
            this(kind, line, size, connected, false, false);
        }

        Sym(Kind kind, int line, long size, boolean connected, boolean ud) {
            this(kind, line, size, connected, ud, false);
        }
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

    /** Whether {@code connect} may leave out {@code host=}. */
    boolean hasPeerDefault() {
        return hasPeerDefault;
    }

    /** Checks a whole script against a fresh symbol table; the normalized statements, or the first error. */
    static List<Statement> checkScript(List<Statement> script, boolean hasPeerDefault, Path baseDir) throws ScriptException {
        SessionChecker c = new SessionChecker(new Symbols(), hasPeerDefault, baseDir);
        List<Statement> out = new ArrayList<>(script.size());
        for (Statement s : script) out.add(c.check(s));
        return out;
    }

    Statement check(Statement s) throws ScriptException {
        SessionCommand command = SessionLanguage.command(s.verb());
        if (command == null) {
            String hint = SessionLanguage.suggest(s.verb(), SessionLanguage.verbs());
            throw err(s.line(), s.verbColumn(), "unknown command '" + s.verb() + "'" + (hint != null ? " (did you mean '" + hint + "'?)" : "")
                    + "; 'help' lists the commands");
        }
        Syntax cmd = command.syntax();
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
        return semantic(s, command);
    }

    // ------------------------------------------------------------------------------------------------

    /** Bare words naming a boolean argument ("solicited") become named ("solicited=true"). */
    private static Statement normalizeFlags(Statement s, Syntax cmd) {
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

    private void checkPositional(Statement s, Syntax cmd) throws ScriptException {
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

    void checkRefs(Statement s, Token t) throws ScriptException {
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

    /** The checks every command with such arguments shares, then the command's own. */
    private Statement semantic(Statement s, SessionCommand command) throws ScriptException {
        for (String k : List.of("retry_cnt", "rnr_retry")) {
            if (s.has(k) && command.syntax().arg(k) != null && literalLong(s, k, 0) > 7) {
                throw err(s.line(), s.arg(k).valueColumn(), k + " is 3 bits: 0..7 (7 means retry forever for rnr_retry)");
            }
        }
        return command.check(this, s);
    }

    /** The text of a REST command: positional words and named tokens as written, blank- or comma-joined. */
    static String restText(Statement s, boolean blanks) {
        List<String> words = new ArrayList<>();
        for (Token t : s.inOrder()) words.add(t.named() ? t.key() + "=" + t.literal() : t.literal());
        return String.join(blanks ? " " : ",", words);
    }

    void checkLocalBuffer(Statement s, boolean atomic) throws ScriptException {
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

    void checkRange(Statement s, Sym mr, long len) throws ScriptException {
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

    void checkFile(Statement s, Token t) throws ScriptException {
        if (t.hasRefs()) return;
        Path p = baseDir == null ? Path.of(t.literal()) : baseDir.resolve(t.literal());
        if (!Files.isRegularFile(p) || !Files.isReadable(p)) {
            throw err(s.line(), t.valueColumn(), "file " + p + " does not exist or cannot be read");
        }
    }

    void checkAccess(Statement s, Token t) throws ScriptException {
        if (t.hasRefs()) return;
        try {
            SessionLanguage.checkRegionAccess(SessionLanguage.access(t.literal()));
        } catch (IllegalArgumentException e) {
            throw err(s.line(), t.valueColumn(), e.getMessage());
        }
    }

    String defineName(Statement s, Kind kind) throws ScriptException {
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

    Sym requireKind(Statement s, Token t, Kind kind) throws ScriptException {
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

    /** The statement with {@code key=} naming the object it names, or the only object of that kind. */
    Statement withDefault(Statement s, String key, Kind kind) throws ScriptException {
        Map<String, Token> named = new LinkedHashMap<>(s.named());
        named.put(key, synth(key, resolveDefault(s, key, kind)));
        return new Statement(s.line(), s.text(), s.verb(), s.verbColumn(), s.positional(), named);
    }

    private String resolveDefault(Statement s, String key, Kind kind) throws ScriptException {
        if (s.has(key)) {
            requireKind(s, s.arg(key), kind);
            return s.arg(key).literal();
        }
        List<String> all = symbols.names(kind);
        if (all.size() == 1) return all.get(0);
        String what = kind == Kind.CQ ? "completion queue" : "queue pair";
        if (all.isEmpty()) {
            throw err(s.line(), 0, s.verb() + " needs a " + what + ": create one first ('" + kind.name().toLowerCase() + " NAME')");
        }
        throw err(s.line(), 0, s.verb() + ": there are " + all.size() + " " + what + "s (" + String.join(", ", all) + "); name one with "
                + key + "=NAME");
    }

    private static Token synth(String key, String value) {
        return new Token(key, List.of(new Literal(value)), 0, 0, false, key + "=" + value);
    }

    static String literal(Statement s, String key) {
        Token t = s.arg(key);
        return t == null || t.hasRefs() ? null : t.literal();
    }

    static String literalString(Statement s, String key) {
        String v = literal(s, key);
        return v == null ? null : v.toLowerCase();
    }

    /** The literal value of a size-like argument, {@code dflt} if absent, -1 if it is a $reference. */
    static long literalLong(Statement s, String key, long dflt) {
        Token t = s.arg(key);
        if (t == null) return dflt;
        if (t.hasRefs()) return -1;
        return SessionLanguage.size(t.literal());
    }

    static ScriptException err(int line, int column, String message) {
        return new ScriptException(line, column, message);
    }
}
