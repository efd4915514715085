package io.jroce.cli.node;

import io.jroce.cli.Converters;
import io.jroce.endpoint.Access;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.WcOpcode;
import io.jroce.endpoint.WcStatus;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The session language: its commands, listed once in {@link #COMMANDS} (read by the checker, the session,
 * {@code help} and the reference table in docs/session-language.md, which a test keeps equal), and the types
 * of the values their arguments take.
 */
public final class SessionLanguage {
    private SessionLanguage() {
    }

    /** Value types; each parses a literal or throws IllegalArgumentException saying what was expected. */
    enum Type {
        NAME, NAMES, SIZE, U32, U64, PSN, QPN, PORT, SMALL, U8, DURATION, BOOL, TEXT, HEX, SHA256, ACCESS, PATTERN, FORMAT,
        STATUS, OPCODE, STATE, MTU, ADDRESS, IMM_OR_NONE, KEY_OR_REMOTE, EXIT_CODE
    }

    /** Every command, in the order of the reference table and of {@code help}: the one place a command is listed. */
    static final List<SessionCommand> COMMANDS = List.of(
            MemoryCommands.MR, MemoryCommands.DEREG, MemoryCommands.FILL, MemoryCommands.DUMP, MemoryCommands.COMPARE,
            QueueCommands.CQ, QueueCommands.QP,
            ConnectCommands.LISTEN, ConnectCommands.CONNECT, ConnectCommands.DISCONNECT,
            PostCommands.RECV, PostCommands.SEND, PostCommands.WRITE, PostCommands.READ, PostCommands.CAS, PostCommands.FADD,
            CompletionCommands.POLL, CompletionCommands.WAIT, CompletionCommands.EXPECT,
            ControlCommands.COUNTERS, ControlCommands.STATS,
            QueueCommands.MODIFY, QueueCommands.QUERY,
            ControlCommands.CHAOS, ControlCommands.ECHO, ControlCommands.SLEEP, ControlCommands.HISTORY, ControlCommands.HELP,
            ControlCommands.EXIT);

    private static final Map<String, SessionCommand> BY_VERB = COMMANDS.stream()
            .collect(Collectors.toMap(c -> c.syntax().verb(), c -> c, (a, b) -> {
                throw new IllegalStateException("two commands are called " + a.syntax().verb());
            }, LinkedHashMap::new));

    static SessionCommand command(String verb) {
        return BY_VERB.get(verb);
    }

    static List<String> verbs() {
        return List.copyOf(BY_VERB.keySet());
    }

    /** The words of the PATTERN and FORMAT types, and the access flags (for the checker and the prompt's completion). */
    static final List<String> PATTERNS = List.of("zero", "seq", "random");
    static final List<String> FORMATS = List.of("hex", "text", "u64", "sha256");
    static final List<String> ACCESS_FLAGS = List.of("local_write", "remote_write", "remote_read", "remote_atomic", "all", "none");

    /** Fields of {@code $object.field} references, by kind of object. */
    static final List<String> MR_FIELDS = List.of("addr", "len", "lkey", "rkey");
    static final List<String> QP_FIELDS = List.of("qpn", "state", "psn");
    static final List<String> CQ_FIELDS = List.of("depth", "size");

    /** The reference table rows of docs/session-language.md, one per command: "| `usage` | summary |". */
    static List<String> referenceRows() {
        return COMMANDS.stream().map(c -> c.syntax().referenceRow()).toList();
    }

    /** The closest word in {@code choices} within two edits, or null. */
    static String suggest(String word, List<String> choices) {
        String best = null;
        int bestD = 3;
        for (String c : choices) {
            int d = distance(word.toLowerCase(Locale.ROOT), c.toLowerCase(Locale.ROOT));
            if (d < bestD) {
                bestD = d;
                best = c;
            }
        }
        return best;
    }

    private static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) prev[j] = j;
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int sub = prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                cur[j] = Math.min(sub, Math.min(prev[j] + 1, cur[j - 1] + 1));
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }

    // ------------------------------------------------------------------------------------------------
    // values

    /** Parses {@code text} as {@code type}; the result's Java type depends on the type. */
    static Object parse(Type type, String text) {
        return switch (type) {
            case NAME -> name(text);
            case NAMES -> names(text);
            case SIZE -> size(text);
            case U32 -> (int) unsigned(text, 32, "a 32-bit number");
            case U64 -> u64(text);
            case PSN -> (int) unsigned(text, 24, "a 24-bit PSN (0..0xffffff)");
            case QPN -> (int) unsigned(text, 24, "a 24-bit QP number (0..0xffffff)");
            case PORT -> port(text);
            case SMALL -> small(text);
            case U8 -> (int) unsigned(text, 8, "a number 0..255");
            case DURATION -> duration(text);
            case BOOL -> bool(text);
            case TEXT -> text;
            case HEX -> hex(text);
            case SHA256 -> sha256(text);
            case ACCESS -> access(text);
            case PATTERN -> choice(text, "pattern", PATTERNS.toArray(String[]::new));
            case FORMAT -> choice(text, "format", FORMATS.toArray(String[]::new));
            case STATUS -> enumValue(WcStatus.class, text, "status");
            case OPCODE -> enumValue(WcOpcode.class, text, "opcode");
            case STATE -> enumValue(QpState.class, text, "QP state");
            case MTU -> mtu(text);
            case ADDRESS -> address(text);
            case IMM_OR_NONE -> text.equalsIgnoreCase("none") ? null : (Object) (int) unsigned(text, 32, "a 32-bit number or none");
            case KEY_OR_REMOTE -> looksNumeric(text) ? (Object) (int) unsigned(text, 32, "an rkey") : name(text);
            case EXIT_CODE -> exitCode(text);
        };
    }

    static boolean looksNumeric(String s) {
        return !s.isEmpty() && (Character.isDigit(s.charAt(0)) || s.charAt(0) == '-');
    }

    static String name(String s) {
        if (s.isEmpty()) throw new IllegalArgumentException("expected a name");
        if (!Character.isLetter(s.charAt(0)) && s.charAt(0) != '_') {
            throw new IllegalArgumentException("'" + s + "' is not a name (start with a letter: buf, rx1, word)");
        }
        for (int i = 0; i < s.length(); i++) {
            if (!SessionSyntax.isNameChar(s.charAt(i))) {
                throw new IllegalArgumentException("'" + s + "' is not a name (letters, digits, _ and -)");
            }
        }
        return s;
    }

    static List<String> names(String s) {
        List<String> out = new ArrayList<>();
        if (s.isEmpty()) return out;
        for (String n : s.split(",", -1)) out.add(name(n.strip()));
        return out;
    }

    /** A byte count or offset: decimal, 0x hex, with an optional k, m or g suffix (powers of 1024). */
    static long size(String s) {
        return Converters.size(s);
    }

    /** 0..2^bits-1, decimal or 0x hex; negative decimals in two's complement for 32 bits. */
    static long unsigned(String s, int bits, String what) {
        long max = (1L << bits) - 1;
        try {
            String t = s.replace("_", "");
            long v;
            if (t.startsWith("0x") || t.startsWith("0X")) v = Long.parseLong(t.substring(2), 16);
            else v = Long.parseLong(t);
            if (bits == 32 && v < 0 && v >= Integer.MIN_VALUE) v &= 0xFFFFFFFFL;
            if (v < 0 || v > max) throw new NumberFormatException();
            return v;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + s + "' is not " + what);
        }
    }

    /** A 64-bit value: signed or unsigned decimal, or up to 16 hex digits after 0x. */
    static long u64(String s) {
        String t = s.replace("_", "");
        try {
            if (t.startsWith("0x") || t.startsWith("0X")) return Long.parseUnsignedLong(t.substring(2), 16);
            if (t.startsWith("-")) return Long.parseLong(t);
            return Long.parseUnsignedLong(t);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + s + "' is not a 64-bit number (decimal, negative, or 0x hex)");
        }
    }

    static int port(String s) {
        long v;
        try {
            v = Long.parseLong(s);
        } catch (NumberFormatException e) {
            v = -1;
        }
        if (v < 1 || v > 65535) throw new IllegalArgumentException("'" + s + "' is not a port (1..65535)");
        return (int) v;
    }

    static int small(String s) {
        long v = unsigned(s, 5, "a number 0..31");
        return (int) v;
    }

    static int exitCode(String s) {
        long v;
        try {
            v = Long.parseLong(s);
        } catch (NumberFormatException e) {
            v = -1;
        }
        if (v < 0 || v > 255) throw new IllegalArgumentException("'" + s + "' is not an exit status (0..255)");
        return (int) v;
    }

    /** 10s, 500ms, 250us, 2m, 1.5s; a bare number is seconds. */
    static Duration duration(String s) {
        return Converters.duration(s);
    }

    static boolean bool(String s) {
        return switch (s.toLowerCase(Locale.ROOT)) {
            case "true", "yes", "on", "1" -> true;
            case "false", "no", "off", "0" -> false;
            default -> throw new IllegalArgumentException("'" + s + "' is not true or false");
        };
    }

    static byte[] hex(String s) {
        String t = s.replace(" ", "").replace(":", "").replace("_", "");
        if (t.startsWith("0x") || t.startsWith("0X")) t = t.substring(2);
        if (t.length() % 2 != 0) throw new IllegalArgumentException("'" + s + "' has an odd number of hex digits");
        try {
            return java.util.HexFormat.of().parseHex(t);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("'" + s + "' is not hex bytes (such as 00ff10 or de:ad:be:ef)");
        }
    }

    static byte[] sha256(String s) {
        byte[] b;
        try {
            b = hex(s);
        } catch (IllegalArgumentException e) {
            b = null;
        }
        if (b == null || b.length != 32) throw new IllegalArgumentException("'" + s + "' is not a SHA-256 (64 hex digits)");
        return b;
    }

    /** Comma-separated access flags; case-insensitive; the long verbs names or local, write, read, atomic. */
    static int access(String s) {
        int flags = 0;
        for (String f : s.split(",", -1)) {
            switch (f.strip().toLowerCase(Locale.ROOT)) {
                case "all" -> flags |= Access.ALL;
                case "none" -> { }
                case "local_write", "local" -> flags |= Access.LOCAL_WRITE;
                case "remote_write", "write" -> flags |= Access.REMOTE_WRITE;
                case "remote_read", "read" -> flags |= Access.REMOTE_READ;
                case "remote_atomic", "atomic" -> flags |= Access.REMOTE_ATOMIC;
                default -> throw new IllegalArgumentException("unknown access flag '" + f.strip()
                        + "' (use local_write, remote_write, remote_read, remote_atomic, all or none, joined with commas)");
            }
        }
        return flags;
    }

    /** IBA 10.6.3.1: remote write and atomic access need local write. */
    static void checkRegionAccess(int flags) {
        if ((flags & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) != 0 && (flags & Access.LOCAL_WRITE) == 0) {
            throw new IllegalArgumentException("remote_write and remote_atomic need local_write as well (access=local_write,...)");
        }
    }

    static String choice(String s, String what, String... choices) {
        for (String c : choices) if (c.equalsIgnoreCase(s)) return c;
        throw new IllegalArgumentException("unknown " + what + " '" + s + "' (one of: " + String.join(", ", choices) + ")");
    }

    static <E extends Enum<E>> E enumValue(Class<E> type, String s, String what) {
        String t = s.toUpperCase(Locale.ROOT);
        if (t.startsWith("IBV_WC_")) t = t.substring(7);
        if (t.startsWith("IBV_QPS_")) t = t.substring(8);
        for (E e : type.getEnumConstants()) if (e.name().equals(t)) return e;
        throw new IllegalArgumentException("unknown " + what + " '" + s + "' (one of: "
                + Arrays.stream(type.getEnumConstants()).map(Enum::name).collect(Collectors.joining(", ")) + ")");
    }

    static Mtu mtu(String s) {
        return Converters.mtu(s);
    }

    /** A literal IPv4 or IPv6 address (no name lookups in scripts: they must not depend on DNS). */
    public static java.net.InetAddress address(String s) {
        return Converters.ip(s);
    }
}
