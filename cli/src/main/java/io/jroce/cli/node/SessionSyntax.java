package io.jroce.cli.node;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The lexical layer of the session language: one command per line, words separated by blanks, {@code #}
 * starting a comment at the beginning of a word, {@code name=value} named arguments, double quotes with
 * backslash escapes, single quotes taken literally, and {@code $object.field} references resolved when the
 * line runs. Every token remembers its column so that errors point at it.
 */
final class SessionSyntax {
    private SessionSyntax() {
    }

    /** A syntax or validation error at a line and column (1-based); column 0 means the whole line. */
    static final class ScriptException extends Exception {
        private static final long serialVersionUID = 1L;
        final int line;
        final int column;

        ScriptException(int line, int column, String message) {
            super(message);
            this.line = line;
            this.column = column;
        }

        /** "server.jroce:12:7: message". */
        String format(String source) {
            return source + ":" + line + (column > 0 ? ":" + column : "") + ": " + getMessage();
        }
    }

    /** A piece of a value: literal text, or a reference {@code $object.field} resolved at run time. */
    sealed interface Part permits Literal, Ref {
    }

    record Literal(String text) implements Part {
    }

    record Ref(String object, String field, int column) implements Part {
        @Override
        public String toString() {
            return "$" + object + "." + field;
        }
    }

    /**
     * One word of a line: for a named argument its key, else null; its value as parts; the columns of the word
     * and of its value; whether any part was quoted.
     */
    record Token(String key, List<Part> parts, int column, int valueColumn, boolean quoted, String raw) {
        boolean hasRefs() {
            for (Part p : parts) if (p instanceof Ref) return true;
            return false;
        }

        /** The value with no references (check {@link #hasRefs} first). */
        String literal() {
            StringBuilder sb = new StringBuilder();
            for (Part p : parts) sb.append(p instanceof Literal l ? l.text() : p.toString());
            return sb.toString();
        }

        boolean named() {
            return key != null;
        }
    }

    /** One non-empty line: its number, text, verb and arguments. */
    record Statement(int line, String text, String verb, int verbColumn, List<Token> positional, Map<String, Token> named) {
        boolean has(String key) {
            return named.containsKey(key);
        }

        Token arg(String key) {
            return named.get(key);
        }

        /** Every word after the verb, positional and named, in the order of the line. */
        List<Token> inOrder() {
            List<Token> all = new ArrayList<>(positional);
            all.addAll(named.values());
            all.sort((a, b) -> Integer.compare(a.column(), b.column()));
            return all;
        }
    }

    /** Parses every line of a script; blank and comment-only lines are skipped. Stops at the first error. */
    static List<Statement> parseScript(String text) throws ScriptException {
        List<Statement> out = new ArrayList<>();
        String[] lines = text.split("\\R", -1);
        for (int i = 0; i < lines.length; i++) {
            Statement s = parseLine(lines[i], i + 1);
            if (s != null) out.add(s);
        }
        return out;
    }

    /** One line, or null when it is blank or a comment. */
    static Statement parseLine(String text, int lineNo) throws ScriptException {
        List<Token> words = tokenize(text, lineNo);
        if (words.isEmpty()) return null;
        Token verbToken = words.get(0);
        if (verbToken.named() || verbToken.quoted() || verbToken.hasRefs()) {
            throw new ScriptException(lineNo, verbToken.column(), "a line starts with a command word, not '" + verbToken.raw()
                    + "' (see 'help')");
        }
        String verb = verbToken.literal();
        List<Token> positional = new ArrayList<>();
        Map<String, Token> named = new LinkedHashMap<>();
        for (Token t : words.subList(1, words.size())) {
            if (t.named()) {
                if (named.containsKey(t.key())) {
                    throw new ScriptException(lineNo, t.column(), "'" + t.key() + "' is given twice");
                }
                named.put(t.key(), t);
            } else {
                positional.add(t);
            }
        }
        return new Statement(lineNo, text, verb, verbToken.column(), Collections.unmodifiableList(positional),
                Collections.unmodifiableMap(named));
    }

    static List<Token> tokenize(String text, int lineNo) throws ScriptException {
        List<Token> tokens = new ArrayList<>();
        int n = text.length();
        int i = 0;
        while (true) {
            while (i < n && isBlank(text.charAt(i))) i++;
            if (i >= n || text.charAt(i) == '#') break;
            int start = i;
            String key = null;
            int valueStart = start;
            // name=value: the key is a bare identifier followed by '=' before any quote
            int j = i;
            while (j < n && isKeyChar(text.charAt(j), j == i)) j++;
            if (j > i && j < n && text.charAt(j) == '=') {
                key = text.substring(i, j);
                valueStart = j + 1;
                i = j + 1;
            }
            List<Part> parts = new ArrayList<>();
            StringBuilder lit = new StringBuilder();
            boolean quoted = false;
            while (i < n && !isBlank(text.charAt(i))) {
                char c = text.charAt(i);
                if (c == '\'') {
                    int close = text.indexOf('\'', i + 1);
                    if (close < 0) throw new ScriptException(lineNo, i + 1, "unterminated ' quote (close it with ')");
                    lit.append(text, i + 1, close);
                    quoted = true;
                    i = close + 1;
                } else if (c == '"') {
                    quoted = true;
                    int q = i;
                    i++;
                    boolean closed = false;
                    while (i < n) {
                        char d = text.charAt(i);
                        if (d == '"') {
                            closed = true;
                            i++;
                            break;
                        }
                        if (d == '\\') {
                            if (i + 1 >= n) break;
                            i = escape(text, i, lit, lineNo);
                        } else if (d == '$' && i + 1 < n && isRefStart(text.charAt(i + 1))) {
                            i = reference(text, i, lit, parts, lineNo);
                        } else {
                            lit.append(d);
                            i++;
                        }
                    }
                    if (!closed) throw new ScriptException(lineNo, q + 1, "unterminated \" quote (close it with \")");
                } else if (c == '$' && i + 1 < n && isRefStart(text.charAt(i + 1))) {
                    i = reference(text, i, lit, parts, lineNo);
                } else if (c == '\\' && i + 1 < n) {
                    i = escape(text, i, lit, lineNo);
                } else {
                    lit.append(c);
                    i++;
                }
            }
            if (lit.length() > 0 || parts.isEmpty()) parts.add(new Literal(lit.toString()));
            tokens.add(new Token(key, List.copyOf(merge(parts)), start + 1, valueStart + 1, quoted, text.substring(start, i)));
        }
        return tokens;
    }

    private static List<Part> merge(List<Part> parts) {
        List<Part> out = new ArrayList<>();
        for (Part p : parts) {
            if (p instanceof Literal l && l.text().isEmpty() && parts.size() > 1) continue;
            out.add(p);
        }
        return out.isEmpty() ? List.of(new Literal("")) : out;
    }

    /** Appends the escaped character at text[i] == '\\'; returns the index after it. */
    private static int escape(String text, int i, StringBuilder lit, int lineNo) throws ScriptException {
        char e = text.charAt(i + 1);
        switch (e) {
            case 'n' -> lit.append('\n');
            case 't' -> lit.append('\t');
            case 'r' -> lit.append('\r');
            case '0' -> lit.append('\0');
            case '\\', '"', '\'', '$', '#', ' ' -> lit.append(e);
            case 'x' -> {
                String hex = i + 4 <= text.length() ? text.substring(i + 2, i + 4) : "";
                if (hex.length() != 2 || Character.digit(hex.charAt(0), 16) < 0 || Character.digit(hex.charAt(1), 16) < 0) {
                    throw new ScriptException(lineNo, i + 1, "\\x needs two hex digits, as in \\x0a");
                }
                lit.append((char) Integer.parseInt(hex, 16));
                return i + 4;
            }
            default -> throw new ScriptException(lineNo, i + 1, "unknown escape \\" + e
                    + " (use \\n \\t \\r \\0 \\xHH \\\\ \\\" \\' \\$ or \\#)");
        }
        return i + 2;
    }

    /** Reads $object.field or ${object.field} at text[i] == '$'; returns the index after it. */
    private static int reference(String text, int i, StringBuilder lit, List<Part> parts, int lineNo) throws ScriptException {
        int n = text.length();
        boolean braced = text.charAt(i + 1) == '{';
        int j = braced ? i + 2 : i + 1;
        int s = j;
        while (j < n && isNameChar(text.charAt(j))) j++;
        String object = text.substring(s, j);
        String field = null;
        if (j < n && text.charAt(j) == '.') {
            int f = ++j;
            while (j < n && isNameChar(text.charAt(j)) && text.charAt(j) != '.') j++;
            field = text.substring(f, j);
        }
        if (braced) {
            if (j >= n || text.charAt(j) != '}') throw new ScriptException(lineNo, i + 1, "unterminated ${...} reference");
            j++;
        }
        if (object.isEmpty() || field == null || field.isEmpty()) {
            throw new ScriptException(lineNo, i + 1, "a reference is $object.field, as in $buf.rkey (write \\$ for a dollar sign)");
        }
        if (lit.length() > 0) {
            parts.add(new Literal(lit.toString()));
            lit.setLength(0);
        }
        parts.add(new Ref(object, field, i + 1));
        return j;
    }

    private static boolean isRefStart(char c) {
        return c == '{' || Character.isLetter(c) || c == '_';
    }

    static boolean isNameChar(char c) {
        return Character.isLetterOrDigit(c) || c == '_' || c == '-';
    }

    private static boolean isKeyChar(char c, boolean first) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!first && c >= '0' && c <= '9');
    }

    private static boolean isBlank(char c) {
        return c == ' ' || c == '\t' || c == '\r' || c == '\f';
    }
}
