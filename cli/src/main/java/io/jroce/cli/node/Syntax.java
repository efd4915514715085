package io.jroce.cli.node;

import io.jroce.cli.node.SessionLanguage.Type;

import java.util.ArrayList;
import java.util.List;

/**
 * What a command looks like: its verb, what follows the verb, its named arguments with their types, and the
 * usage and summary that {@code help} and the reference table print.
 */
record Syntax(String verb, Positional positional, String usage, String summary, List<Arg> args) {
    /** What follows the verb before the named arguments. */
    enum Positional {
        /** nothing */
        NONE,
        /** exactly one object name */
        NAME,
        /** at most one word */
        OPTIONAL_WORD,
        /** exactly one word (a duration for sleep) */
        WORD,
        /** all the rest of the line, as text */
        REST
    }

    record Arg(String key, Type type, boolean required) {
        static Arg req(String key, Type t) {
            return new Arg(key, t, true);
        }

        static Arg opt(String key, Type t) {
            return new Arg(key, t, false);
        }
    }

    /** The arguments of a data source (fill, compare). */
    static final List<Arg> SOURCES = List.of(Arg.opt("text", Type.TEXT), Arg.opt("hex", Type.HEX), Arg.opt("pattern", Type.PATTERN),
            Arg.opt("seed", Type.U64), Arg.opt("file", Type.TEXT), Arg.opt("u64", Type.U64));
    /** A byte range of a local region. */
    static final List<Arg> RANGE = List.of(Arg.opt("offset", Type.SIZE), Arg.opt("len", Type.SIZE));

    /** {@code args} are {@link Arg}s and lists of them, flattened in order. */
    static Syntax of(String verb, Positional positional, String usage, String summary, Object... args) {
        List<Arg> out = new ArrayList<>();
        for (Object o : args) {
            if (o instanceof Arg x) out.add(x);
            else if (o instanceof List<?> l) for (Object y : l) out.add((Arg) y);
        }
        return new Syntax(verb, positional, usage, summary, List.copyOf(out));
    }

    Arg arg(String key) {
        for (Arg a : args) if (a.key().equals(key)) return a;
        return null;
    }

    List<String> keys() {
        return args.stream().map(Arg::key).toList();
    }

    /** Its row of the reference table: "| `usage` | summary |". */
    String referenceRow() {
        return "| `" + usage.replace("|", "\\|") + "` | " + summary.replace("|", "\\|") + " |";
    }
}
