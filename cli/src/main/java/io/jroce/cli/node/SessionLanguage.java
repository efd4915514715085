package io.jroce.cli.node;

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
 * The commands of the session language, their arguments and the types of their values: the single source
 * for validation ({@link SessionChecker}), for {@code help} and for the reference table in docs/session-language.md (a test
 * keeps the two equal).
 */
public final class SessionLanguage {
    private SessionLanguage() {
    }

    /** Value types; each parses a literal or throws IllegalArgumentException saying what was expected. */
    enum Type {
        NAME, NAMES, SIZE, U32, U64, PSN, QPN, PORT, SMALL, DURATION, BOOL, TEXT, HEX, SHA256, ACCESS, PATTERN, FORMAT,
        STATUS, OPCODE, STATE, MTU, ADDRESS, IMM_OR_NONE, KEY_OR_REMOTE, EXIT_CODE
    }

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
    }

    record Command(String verb, Positional positional, String usage, String summary, List<Arg> args) {
        Arg arg(String key) {
            for (Arg a : args) if (a.key().equals(key)) return a;
            return null;
        }

        List<String> keys() {
            return args.stream().map(Arg::key).toList();
        }
    }

    private static Arg req(String key, Type t) {
        return new Arg(key, t, true);
    }

    private static Arg opt(String key, Type t) {
        return new Arg(key, t, false);
    }

    private static List<Arg> args(Object... a) {
        List<Arg> out = new ArrayList<>();
        for (Object o : a) {
            if (o instanceof Arg x) out.add(x);
            else if (o instanceof List<?> l) for (Object y : l) out.add((Arg) y);
        }
        return List.copyOf(out);
    }

    private static final List<Arg> SOURCES = List.of(opt("text", Type.TEXT), opt("hex", Type.HEX), opt("pattern", Type.PATTERN),
            opt("seed", Type.U64), opt("file", Type.TEXT), opt("u64", Type.U64));
    private static final List<Arg> RANGE = List.of(opt("offset", Type.SIZE), opt("len", Type.SIZE));
    private static final List<Arg> WR = List.of(opt("qp", Type.NAME), opt("wr_id", Type.U64), opt("unsignaled", Type.BOOL),
            opt("fence", Type.BOOL));
    private static final List<Arg> REMOTE = List.of(req("remote", Type.NAME), opt("roffset", Type.SIZE), opt("rkey", Type.U32));
    private static final List<Arg> CONNECT = List.of(opt("qp", Type.NAME), opt("port", Type.PORT), opt("publish", Type.NAMES),
            opt("mtu", Type.MTU), opt("psn", Type.PSN), opt("rd_atomic", Type.SMALL), opt("timeout", Type.DURATION),
            opt("ack_timeout", Type.SMALL), opt("retry_cnt", Type.SMALL), opt("rnr_retry", Type.SMALL), opt("min_rnr_timer", Type.SMALL));

    /** Every command, in the order of the reference table. */
    static final List<Command> COMMANDS = List.of(
            new Command("mr", Positional.NAME, "mr NAME size=SIZE [access=FLAGS]",
                    "register a zero-filled memory region; FLAGS: local_write,remote_write,remote_read,remote_atomic or all (default)",
                    args(req("size", Type.SIZE), opt("access", Type.ACCESS))),
            new Command("dereg", Positional.NAME, "dereg NAME", "deregister a region: its lkey and rkey stop working",
                    args()),
            new Command("fill", Positional.NAME, "fill NAME SOURCE [offset=N] [len=N]",
                    "write bytes into a region; SOURCE: text=STR, hex=HEX, pattern=zero|seq|random [seed=N], file=PATH or u64=N (host order)",
                    args(SOURCES, RANGE)),
            new Command("dump", Positional.NAME, "dump NAME [offset=N] [len=N] [as=hex|text|u64|sha256]",
                    "print region bytes (default: hex of the first 64 bytes)",
                    args(RANGE, opt("as", Type.FORMAT))),
            new Command("compare", Positional.NAME, "compare NAME SOURCE|sha256=HEX [offset=N] [len=N]",
                    "check region bytes against a SOURCE (as for fill) or a SHA-256; a difference fails the session",
                    args(SOURCES, opt("sha256", Type.SHA256), RANGE)),
            new Command("cq", Positional.NAME, "cq NAME [depth=N]", "create a completion queue (default depth 256)",
                    args(opt("depth", Type.SIZE))),
            new Command("qp", Positional.NAME,
                    "qp NAME [cq=CQ] [send_cq=CQ] [recv_cq=CQ] [send_wr=N] [recv_wr=N] [sge=N] [inline=N] [sig_all] [access=FLAGS]",
                    "create an RC queue pair and move it to INIT, so receives can be posted before the connection exists",
                    args(opt("cq", Type.NAME), opt("send_cq", Type.NAME), opt("recv_cq", Type.NAME), opt("send_wr", Type.SIZE),
                            opt("recv_wr", Type.SIZE), opt("sge", Type.SIZE), opt("inline", Type.SIZE), opt("sig_all", Type.BOOL),
                            opt("access", Type.ACCESS))),
            new Command("listen", Positional.NONE,
                    "listen [qp=QP] [port=N] [publish=MR,...] [mtu=N] [psn=N] [rd_atomic=N] [timeout=DUR] [ack_timeout=N] [retry_cnt=N] [rnr_retry=N] [min_rnr_timer=N]",
                    "wait for one peer's connect on TCP (default port: --port, timeout 60s), exchange QPN, PSN, GID, MTU and published regions, "
                            + "move the QP to RTS (defaults: rd_atomic 4, ack_timeout 17 = 0.5 s, retry_cnt 7, rnr_retry 7 = forever, min_rnr_timer 12)",
                    args(CONNECT)),
            new Command("connect", Positional.NONE,
                    "connect [qp=QP] [host=ADDR] [port=N] [publish=MR,...] [mtu=N] [psn=N] [rd_atomic=N] [timeout=DUR] [ack_timeout=N] [retry_cnt=N] [rnr_retry=N] [min_rnr_timer=N]",
                    "connect to a listening peer (default host: --peer), retrying until it listens; then as listen",
                    args(CONNECT, opt("host", Type.ADDRESS))),
            new Command("recv", Positional.NONE, "recv [qp=QP] [mr=MR [offset=N] [len=N]] [wr_id=N]",
                    "post a receive (without mr=: no buffer, for RDMA WRITE with immediate)",
                    args(opt("qp", Type.NAME), opt("mr", Type.NAME), RANGE, opt("wr_id", Type.U64))),
            new Command("send", Positional.NONE,
                    "send [qp=QP] [mr=MR [offset=N] [len=N]] [imm=N | inv=REMOTE|N] [solicited] [inline] [unsignaled] [fence] [wr_id=N]",
                    "post a SEND (SEND_WITH_IMM with imm=, SEND_WITH_INV invalidating the peer's rkey with inv=)",
                    args(WR, opt("mr", Type.NAME), RANGE, opt("imm", Type.U32), opt("inv", Type.KEY_OR_REMOTE),
                            opt("solicited", Type.BOOL), opt("inline", Type.BOOL))),
            new Command("write", Positional.NONE,
                    "write [qp=QP] mr=MR [offset=N] [len=N] remote=REMOTE [roffset=N] [rkey=N] [imm=N] [solicited] [inline] [unsignaled] [fence] [wr_id=N]",
                    "post an RDMA WRITE (WITH_IMM with imm=) into a region the peer published",
                    args(WR, req("mr", Type.NAME), RANGE, REMOTE, opt("imm", Type.U32), opt("solicited", Type.BOOL),
                            opt("inline", Type.BOOL))),
            new Command("read", Positional.NONE,
                    "read [qp=QP] mr=MR [offset=N] [len=N] remote=REMOTE [roffset=N] [rkey=N] [unsignaled] [fence] [wr_id=N]",
                    "post an RDMA READ from a region the peer published into a local one",
                    args(WR, req("mr", Type.NAME), RANGE, REMOTE)),
            new Command("cas", Positional.NONE,
                    "cas [qp=QP] mr=MR [offset=N] remote=REMOTE [roffset=N] [rkey=N] compare=N swap=N [unsignaled] [fence] [wr_id=N]",
                    "post an atomic compare-and-swap on the peer's 8-byte word; the original value lands in mr",
                    args(WR, req("mr", Type.NAME), opt("offset", Type.SIZE), REMOTE, req("compare", Type.U64), req("swap", Type.U64))),
            new Command("fadd", Positional.NONE,
                    "fadd [qp=QP] mr=MR [offset=N] remote=REMOTE [roffset=N] [rkey=N] add=N [unsignaled] [fence] [wr_id=N]",
                    "post an atomic fetch-and-add on the peer's 8-byte word; the original value lands in mr",
                    args(WR, req("mr", Type.NAME), opt("offset", Type.SIZE), REMOTE, req("add", Type.U64))),
            new Command("poll", Positional.NONE, "poll [cq=CQ] [max=N]",
                    "print the completions waiting in a CQ, without waiting",
                    args(opt("cq", Type.NAME), opt("max", Type.SIZE))),
            new Command("wait", Positional.NONE, "wait [cq=CQ] [count=N] [timeout=DUR]",
                    "wait for N completions (default 1) and print them; none within the timeout (default 10s) fails the session",
                    args(opt("cq", Type.NAME), opt("count", Type.SIZE), opt("timeout", Type.DURATION))),
            new Command("expect", Positional.NONE,
                    "expect [cq=CQ] [wr_id=N] [status=S] [opcode=O] [len=N] [imm=N|none] [inv=N|none] [qp=QP] [timeout=DUR]",
                    "take the next completion (the first with wr_id=, if given) and check its fields; status defaults to SUCCESS; "
                            + "a difference or a timeout (default 10s) fails the session",
                    args(opt("cq", Type.NAME), opt("wr_id", Type.U64), opt("status", Type.STATUS), opt("opcode", Type.OPCODE),
                            opt("len", Type.SIZE), opt("imm", Type.IMM_OR_NONE), opt("inv", Type.IMM_OR_NONE), opt("qp", Type.NAME),
                            opt("timeout", Type.DURATION))),
            new Command("counters", Positional.OPTIONAL_WORD, "counters [device|qp|chaos|all]",
                    "print non-zero counters of the device, each QP and the fault injector (all: zeros too)",
                    args()),
            new Command("stats", Positional.NONE, "stats", "one line of live state per QP: state, PSNs, queue use, retries",
                    args()),
            new Command("modify", Positional.NONE,
                    "modify [qp=QP] [state=S] [access=FLAGS] [mtu=N] [dest=ADDR] [dest_qpn=N] [rq_psn=N] [sq_psn=N] [ack_timeout=N] "
                            + "[retry_cnt=N] [rnr_retry=N] [min_rnr_timer=N] [rd_atomic=N] [dest_rd_atomic=N]",
                    "ibv_modify_qp with the attributes given (e.g. state=ERR to flush, state=SQD to drain)",
                    args(opt("qp", Type.NAME), opt("state", Type.STATE), opt("access", Type.ACCESS), opt("mtu", Type.MTU),
                            opt("dest", Type.ADDRESS), opt("dest_qpn", Type.QPN), opt("rq_psn", Type.PSN), opt("sq_psn", Type.PSN),
                            opt("ack_timeout", Type.SMALL), opt("retry_cnt", Type.SMALL), opt("rnr_retry", Type.SMALL),
                            opt("min_rnr_timer", Type.SMALL), opt("rd_atomic", Type.SMALL), opt("dest_rd_atomic", Type.SMALL))),
            new Command("query", Positional.NONE, "query [qp=QP]", "print the QP's attributes (ibv_query_qp)",
                    args(opt("qp", Type.NAME))),
            new Command("chaos", Positional.REST, "chaos SPEC | chaos off",
                    "change fault injection now, e.g. chaos drop=0.1,reorder=0.05 (the seed is fixed when the node starts)",
                    args()),
            new Command("echo", Positional.REST, "echo TEXT...", "print the text ($mr.rkey and other references expanded)",
                    args()),
            new Command("sleep", Positional.WORD, "sleep DUR", "pause, e.g. sleep 200ms", args()),
            new Command("history", Positional.NONE, "history", "list the lines entered so far (!N runs line N again, !! the last)",
                    args()),
            new Command("help", Positional.OPTIONAL_WORD, "help [COMMAND]", "list the commands, or describe one", args()),
            new Command("exit", Positional.OPTIONAL_WORD, "exit [CODE]", "end the session (default status 0, or 1 if anything failed)",
                    args()));

    private static final Map<String, Command> BY_VERB = COMMANDS.stream()
            .collect(Collectors.toMap(Command::verb, c -> c, (a, b) -> a, LinkedHashMap::new));

    static Command command(String verb) {
        return BY_VERB.get(verb);
    }

    static List<String> verbs() {
        return List.copyOf(BY_VERB.keySet());
    }

    /** Fields of {@code $object.field} references, by kind of object. */
    static final List<String> MR_FIELDS = List.of("addr", "len", "lkey", "rkey");
    static final List<String> QP_FIELDS = List.of("qpn", "state", "psn");
    static final List<String> CQ_FIELDS = List.of("depth", "size");

    /** The reference table rows of docs/session-language.md, one per command: "| `usage` | summary |". */
    static List<String> referenceRows() {
        List<String> rows = new ArrayList<>();
        for (Command c : COMMANDS) rows.add("| `" + c.usage().replace("|", "\\|") + "` | " + c.summary().replace("|", "\\|") + " |");
        return rows;
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
            case DURATION -> duration(text);
            case BOOL -> bool(text);
            case TEXT -> text;
            case HEX -> hex(text);
            case SHA256 -> sha256(text);
            case ACCESS -> access(text);
            case PATTERN -> choice(text, "pattern", "zero", "seq", "random");
            case FORMAT -> choice(text, "format", "hex", "text", "u64", "sha256");
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
        String t = s.replace("_", "");
        long mult = 1;
        if (!t.isEmpty() && !t.startsWith("0x") && !t.startsWith("0X")) {
            char last = Character.toLowerCase(t.charAt(t.length() - 1));
            if (last == 'k') mult = 1 << 10;
            else if (last == 'm') mult = 1 << 20;
            else if (last == 'g') mult = 1 << 30;
            if (mult != 1) t = t.substring(0, t.length() - 1);
        }
        try {
            long v = t.startsWith("0x") || t.startsWith("0X") ? Long.parseLong(t.substring(2), 16) : Long.parseLong(t);
            if (v < 0) throw new NumberFormatException();
            return Math.multiplyExact(v, mult);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException("'" + s + "' is not a size (a number such as 4096, 0x1000, 4k or 1m)");
        }
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
        String t = s.strip().toLowerCase(Locale.ROOT);
        long nanosPerUnit;
        String num;
        if (t.endsWith("ms")) { nanosPerUnit = 1_000_000L; num = t.substring(0, t.length() - 2); }
        else if (t.endsWith("us")) { nanosPerUnit = 1_000L; num = t.substring(0, t.length() - 2); }
        else if (t.endsWith("s")) { nanosPerUnit = 1_000_000_000L; num = t.substring(0, t.length() - 1); }
        else if (t.endsWith("m")) { nanosPerUnit = 60_000_000_000L; num = t.substring(0, t.length() - 1); }
        else { nanosPerUnit = 1_000_000_000L; num = t; }
        try {
            double v = Double.parseDouble(num);
            if (!(v >= 0) || Double.isInfinite(v) || v * nanosPerUnit > 86_400e9 * 365) throw new NumberFormatException();
            return Duration.ofNanos(Math.round(v * nanosPerUnit));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + s + "' is not a duration (such as 10s, 500ms, 250us or 2m)");
        }
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
        long v;
        try {
            v = Long.parseLong(s);
        } catch (NumberFormatException e) {
            v = -1;
        }
        for (Mtu m : Mtu.values()) if (m.bytes() == v) return m;
        throw new IllegalArgumentException("'" + s + "' is not a path MTU (256, 512, 1024, 2048 or 4096)");
    }

    /** A literal IPv4 address (no name lookups in scripts: they must not depend on DNS). */
    public static java.net.InetAddress address(String s) {
        String[] parts = s.split("\\.", -1);
        if (parts.length == 4) {
            byte[] b = new byte[4];
            boolean ok = true;
            for (int i = 0; i < 4 && ok; i++) {
                try {
                    int v = Integer.parseInt(parts[i]);
                    if (v < 0 || v > 255 || parts[i].length() > 3) ok = false;
                    b[i] = (byte) v;
                } catch (NumberFormatException e) {
                    ok = false;
                }
            }
            if (ok) {
                try {
                    return java.net.InetAddress.getByAddress(b);
                } catch (java.net.UnknownHostException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        throw new IllegalArgumentException("'" + s + "' is not an IPv4 address (such as 192.0.2.10)");
    }
}
