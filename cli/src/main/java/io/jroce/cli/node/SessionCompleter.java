package io.jroce.cli.node;

import io.jroce.cli.node.SessionLanguage.Type;
import io.jroce.cli.node.Syntax.Arg;
import io.jroce.cli.node.Syntax.Positional;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.WcOpcode;
import io.jroce.endpoint.WcStatus;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * What Tab offers at the prompt, from the language itself: the verbs of {@link SessionLanguage#COMMANDS}, the
 * argument names of the verb being typed ({@code size=}), and where a name is expected the names of this
 * session's regions, CQs and QPs (and the peer's published regions after {@code remote=}). It knows nothing
 * of terminals: it is given the words of the line and answers with whole words.
 */
final class SessionCompleter {
    /** Which of the session's names an argument takes. */
    enum Kind { REGION, CQ, QP, REMOTE }

    /**
     * One candidate: the whole word as it will stand in the line, what the list shows, and whether the word is
     * finished (a blank follows) or goes on ({@code size=} waits for its value).
     */
    record Suggestion(String value, String display, boolean complete) {
    }

    /** Named arguments whose value is a name of the session, by key. */
    static final Map<String, Kind> NAME_ARGS = Map.of(
            "mr", Kind.REGION, "publish", Kind.REGION,
            "cq", Kind.CQ, "send_cq", Kind.CQ, "recv_cq", Kind.CQ,
            "qp", Kind.QP,
            "remote", Kind.REMOTE, "inv", Kind.REMOTE);

    /** Commands whose NAME after the verb is an existing region; the other NAME commands define a new name. */
    static final Set<SessionCommand> NAME_REFERS_TO_REGION = Set.of(MemoryCommands.DEREG, MemoryCommands.FILL, MemoryCommands.DUMP,
            MemoryCommands.COMPARE);
    static final Set<SessionCommand> NAME_DEFINES = Set.of(MemoryCommands.MR, QueueCommands.CQ, QueueCommands.QP);

    private final Function<Kind, Collection<String>> names;

    /** @param names the session's current names of a kind (read when Tab is pressed) */
    SessionCompleter(Function<Kind, Collection<String>> names) {
        this.names = names;
    }

    /**
     * The candidates for the word at {@code wordIndex} of {@code words}, of which {@code prefix} has been typed,
     * that start with {@code prefix}.
     */
    List<Suggestion> complete(List<String> words, int wordIndex, String prefix) {
        List<Suggestion> out = new ArrayList<>();
        if (wordIndex == 0) {
            words(out, prefix, "", SessionLanguage.verbs());
            return out;
        }
        SessionCommand command = SessionLanguage.command(words.get(0));
        if (command == null) return out;
        Syntax syntax = command.syntax();
        int eq = prefix.indexOf('=');
        if (eq > 0) {
            value(out, syntax, prefix.substring(0, eq), prefix.substring(eq + 1));
            return out;
        }
        if (firstWord(words, wordIndex) && syntax.positional() != Positional.NONE) {
            positional(out, command, prefix);
            if (syntax.positional() == Positional.NAME || syntax.positional() == Positional.WORD) return out;
        }
        if (syntax.positional() == Positional.REST) return out;
        Set<String> given = given(syntax, words, wordIndex);
        for (Arg a : syntax.args()) {
            if (given.contains(a.key())) continue;
            // a flag is written bare ("solicited"); the others wait for their value after '='
            if (a.type() == Type.BOOL) add(out, prefix, a.key(), a.key(), true);
            else add(out, prefix, a.key() + "=", a.key() + "=", false);
        }
        return out;
    }

    /** Whether the word at wordIndex is the first word after the verb that is neither named nor a flag. */
    private static boolean firstWord(List<String> words, int wordIndex) {
        for (int i = 1; i < wordIndex && i < words.size(); i++) {
            if (!words.get(i).isEmpty() && words.get(i).indexOf('=') <= 0) return false;
        }
        return true;
    }

    private void positional(List<Suggestion> out, SessionCommand command, String prefix) {
        if (NAME_REFERS_TO_REGION.contains(command)) words(out, prefix, "", names.apply(Kind.REGION));
        else if (command == ControlCommands.HELP) words(out, prefix, "", SessionLanguage.verbs());
        else if (command == ControlCommands.COUNTERS) words(out, prefix, "", ControlCommands.COUNTER_SETS);
    }

    /** The keys already on the line (named, or a bare flag), so they are not offered twice. */
    private static Set<String> given(Syntax syntax, List<String> words, int wordIndex) {
        Set<String> given = new HashSet<>();
        for (int i = 1; i < words.size(); i++) {
            if (i == wordIndex) continue;
            String w = words.get(i);
            int eq = w.indexOf('=');
            if (eq > 0) given.add(w.substring(0, eq));
            else if (syntax.arg(w) != null && syntax.arg(w).type() == Type.BOOL) given.add(w);
        }
        return given;
    }

    /** The values of {@code key=}; a comma list (publish=, access=) completes its last element. */
    private void value(List<Suggestion> out, Syntax syntax, String key, String typed) {
        Arg arg = syntax.arg(key);
        if (arg == null) return;
        boolean list = arg.type() == Type.NAMES || arg.type() == Type.ACCESS;
        int comma = list ? typed.lastIndexOf(',') : -1;
        String head = key + "=" + typed.substring(0, comma + 1);
        String last = typed.substring(comma + 1);
        Kind kind = NAME_ARGS.get(key);
        if (kind != null && (arg.type() == Type.NAME || arg.type() == Type.NAMES || arg.type() == Type.KEY_OR_REMOTE)) {
            words(out, last, head, names.apply(kind));
            return;
        }
        words(out, last, head, choices(arg.type()));
    }

    /** The words a value of this type can be, where they are few. */
    static List<String> choices(Type type) {
        return switch (type) {
            case PATTERN -> SessionLanguage.PATTERNS;
            case FORMAT -> SessionLanguage.FORMATS;
            case ACCESS -> SessionLanguage.ACCESS_FLAGS;
            case BOOL -> List.of("true", "false");
            case STATUS -> enumNames(WcStatus.values());
            case OPCODE -> enumNames(WcOpcode.values());
            case STATE -> enumNames(QpState.values());
            case MTU -> Arrays.stream(Mtu.values()).map(m -> Integer.toString(m.bytes())).toList();
            case IMM_OR_NONE -> List.of("none");
            default -> List.of();
        };
    }

    private static List<String> enumNames(Enum<?>[] values) {
        return Arrays.stream(values).map(Enum::name).toList();
    }

    /** Each of {@code choices} that starts with {@code typed}, as {@code head + choice}, finished. */
    private static void words(List<Suggestion> out, String typed, String head, Collection<String> choices) {
        for (String c : choices) {
            if (c.startsWith(typed)) out.add(new Suggestion(head + c, c, true));
        }
    }

    private static void add(List<Suggestion> out, String typed, String value, String display, boolean complete) {
        if (value.startsWith(typed)) out.add(new Suggestion(value, display, complete));
    }
}
