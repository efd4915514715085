package io.jroce.cli.node;

import io.jroce.cli.node.Session.Failure;
import io.jroce.cli.node.SessionChecker.Kind;
import io.jroce.cli.node.SessionChecker.Sym;
import io.jroce.cli.node.SessionLanguage.Type;
import io.jroce.cli.node.SessionSyntax.ScriptException;
import io.jroce.cli.node.SessionSyntax.Statement;
import io.jroce.cli.node.Syntax.Positional;
import io.jroce.endpoint.Access;
import io.jroce.endpoint.MemoryRegion;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static io.jroce.cli.node.SessionChecker.err;
import static io.jroce.cli.node.Syntax.Arg.opt;
import static io.jroce.cli.node.Syntax.Arg.req;

/** Memory regions and their bytes: mr, dereg, fill, dump, compare. */
final class MemoryCommands {
    private MemoryCommands() {
    }

    static final SessionCommand MR = new SessionCommand(Syntax.of("mr", Positional.NAME,
            "mr NAME size=SIZE [access=FLAGS]",
            "register a zero-filled memory region; FLAGS: local_write,remote_write,remote_read,remote_atomic or all (default)",
            req("size", Type.SIZE), opt("access", Type.ACCESS))) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            String name = c.defineName(s, Kind.MR);
            long size = SessionChecker.literalLong(s, "size", -1);
            if (size == 0 || size > Integer.MAX_VALUE - 8) {
                throw err(s.line(), s.arg("size").valueColumn(), "size must be 1 byte .. 2 GiB");
            }
            if (s.has("access")) c.checkAccess(s, s.arg("access"));
            c.symbols().live.put(name, new Sym(Kind.MR, s.line(), size, false));
            return s;
        }

        @Override
        void run(Session x, Statement s) throws Failure {
            String name = s.positional().get(0).literal();
            Values v = x.values;
            long size = v.size(s, "size", 0);
            int access = v.get(s, "access", Type.ACCESS, Access.ALL);
            SessionLanguage.checkRegionAccess(access);
            MemoryRegion mr = x.pd.allocateAndRegister(Math.toIntExact(size), access);
            x.regions.put(name, mr);
            x.out.printf("mr %s: %d bytes at 0x%x, lkey 0x%x, rkey 0x%x, %s%n", name, size, mr.address(), mr.lkey(), mr.rkey(),
                    Access.toString(access));
        }
    };

    static final SessionCommand DEREG = new SessionCommand(Syntax.of("dereg", Positional.NAME, "dereg NAME",
            "deregister a region: its lkey and rkey stop working")) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            c.requireKind(s, s.positional().get(0), Kind.MR);
            c.symbols().live.remove(s.positional().get(0).literal());
            return s;
        }

        @Override
        void run(Session x, Statement s) {
            String name = s.positional().get(0).literal();
            x.regions.remove(name).deregister();
            x.out.printf("dereg %s%n", name);
        }
    };

    static final SessionCommand FILL = new SourceCommand(Syntax.of("fill", Positional.NAME,
            "fill NAME SOURCE [offset=N] [len=N]",
            "write bytes into a region; SOURCE: text=STR, hex=HEX, pattern=zero|seq|random [seed=N], file=PATH or u64=N (host order)",
            Syntax.SOURCES, Syntax.RANGE)) {
        @Override
        void run(Session x, Statement s) throws Failure {
            String name = s.positional().get(0).literal();
            MemoryRegion mr = x.regions.require(name);
            SessionBytes.Source src = source(x, s);
            int[] r = x.values.range(s, mr, src.length());
            SessionBytes.fill(mr.buffer(), r[0], r[1], src);
            x.out.printf("fill %s: %d bytes at offset %d%n", name, r[1], r[0]);
        }
    };

    static final SessionCommand DUMP = new SessionCommand(Syntax.of("dump", Positional.NAME,
            "dump NAME [offset=N] [len=N] [as=hex|text|u64|sha256]",
            "print region bytes (default: hex of the first 64 bytes)", Syntax.RANGE, opt("as", Type.FORMAT))) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            c.checkRange(s, c.requireKind(s, s.positional().get(0), Kind.MR), SessionChecker.literalLong(s, "len", -1));
            return s;
        }

        @Override
        void run(Session x, Statement s) throws Failure {
            String name = s.positional().get(0).literal();
            MemoryRegion mr = x.regions.require(name);
            Values v = x.values;
            String as = v.get(s, "as", Type.FORMAT, "hex");
            long dflt = as.equals("sha256") ? -1 : Math.min(64, mr.length() - v.size(s, "offset", 0));
            int[] r = v.range(s, mr, dflt);
            switch (as) {
                case "sha256" -> x.out.printf("dump %s: sha256 of %d bytes at offset %d: %s%n", name, r[1], r[0],
                        SessionBytes.hex(SessionBytes.sha256(mr.buffer(), r[0], r[1])));
                case "text" -> x.out.printf("dump %s: \"%s\"%n", name, SessionBytes.text(mr.buffer(), r[0], r[1]));
                case "u64" -> x.out.printf("dump %s: %d bytes at offset %d, 64-bit words in host order%n%s", name, r[1], r[0],
                        SessionBytes.words(mr.buffer(), r[0], r[1]));
                default -> x.out.printf("dump %s: %d bytes at offset %d%n%s", name, r[1], r[0],
                        SessionBytes.hexDump(mr.buffer(), r[0], r[1]));
            }
        }
    };

    static final SessionCommand COMPARE = new SourceCommand(Syntax.of("compare", Positional.NAME,
            "compare NAME SOURCE|sha256=HEX [offset=N] [len=N]",
            "check region bytes against a SOURCE (as for fill) or a SHA-256; a difference fails the session",
            Syntax.SOURCES, opt("sha256", Type.SHA256), Syntax.RANGE)) {
        @Override
        void run(Session x, Statement s) throws Failure {
            String name = s.positional().get(0).literal();
            MemoryRegion mr = x.regions.require(name);
            if (s.has("sha256")) {
                byte[] want = (byte[]) x.values.value(s.arg("sha256"), Type.SHA256);
                int[] r = x.values.range(s, mr, -1);
                byte[] have = SessionBytes.sha256(mr.buffer(), r[0], r[1]);
                if (!Arrays.equals(want, have)) {
                    throw new Failure("compare " + name + " failed: the SHA-256 of " + r[1] + " bytes at offset " + r[0] + " is "
                            + SessionBytes.hex(have) + ", expected " + SessionBytes.hex(want));
                }
                x.compareMet();
                x.out.printf("compare %s: ok, sha256 of %d bytes at offset %d is %s%n", name, r[1], r[0], SessionBytes.hex(have));
                return;
            }
            SessionBytes.Source src = source(x, s);
            int[] r = x.values.range(s, mr, src.length());
            String diff = SessionBytes.compare(mr.buffer(), r[0], r[1], src);
            if (diff != null) throw new Failure("compare " + name + " failed: " + diff);
            x.compareMet();
            x.out.printf("compare %s: ok, %d bytes at offset %d%n", name, r[1], r[0]);
        }
    };

    /** fill and compare: a region and exactly one source that fits it. */
    private abstract static class SourceCommand extends SessionCommand {
        SourceCommand(Syntax syntax) {
            super(syntax);
        }

        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            return checkSource(c, s);
        }
    }

    private static Statement checkSource(SessionChecker c, Statement s) throws ScriptException {
        Sym mr = c.requireKind(s, s.positional().get(0), Kind.MR);
        List<String> sources = new ArrayList<>(List.of("text", "hex", "pattern", "file", "u64"));
        if (s.verb().equals("compare")) sources.add("sha256");
        List<String> given = sources.stream().filter(s::has).toList();
        if (given.size() != 1) {
            throw err(s.line(), given.size() > 1 ? s.arg(given.get(1)).column() : 0, s.verb() + " takes exactly one of "
                    + String.join("=, ", sources) + "=" + (given.isEmpty() ? "" : " (got " + String.join(" and ", given) + ")"));
        }
        if (s.has("seed") && !"random".equals(SessionChecker.literalString(s, "pattern"))) {
            throw err(s.line(), s.arg("seed").column(), "seed= goes with pattern=random");
        }
        if (s.has("file")) c.checkFile(s, s.arg("file"));
        String text = SessionChecker.literal(s, "text");
        String hex = SessionChecker.literal(s, "hex");
        long srcLen = switch (given.get(0)) {
            case "text" -> text == null ? -1 : text.getBytes(StandardCharsets.UTF_8).length;
            case "hex" -> hex == null ? -1 : SessionLanguage.hex(hex).length;
            case "u64" -> 8;
            default -> -1;
        };
        if (srcLen == 0 && !s.has("len")) throw err(s.line(), s.arg(given.get(0)).valueColumn(), "the source is empty");
        c.checkRange(s, mr, s.has("len") ? SessionChecker.literalLong(s, "len", -1) : srcLen);
        return s;
    }

    /** The bytes a fill or compare statement names, repeated as far as needed. */
    private static SessionBytes.Source source(Session x, Statement s) throws Failure {
        Values v = x.values;
        if (s.has("text")) return SessionBytes.repeat(v.text(s.arg("text")).getBytes(StandardCharsets.UTF_8));
        if (s.has("hex")) return SessionBytes.repeat((byte[]) v.value(s.arg("hex"), Type.HEX));
        if (s.has("u64")) return SessionBytes.repeat(SessionBytes.u64((long) v.value(s.arg("u64"), Type.U64)));
        if (s.has("pattern")) {
            String p = (String) v.value(s.arg("pattern"), Type.PATTERN);
            long seed = v.get(s, "seed", Type.U64, 0L);
            return SessionBytes.pattern(p, seed);
        }
        if (s.has("file")) {
            Path base = x.settings.baseDir();
            Path p = base == null ? Path.of(v.text(s.arg("file"))) : base.resolve(v.text(s.arg("file")));
            try {
                byte[] b = Files.readAllBytes(p);
                if (b.length == 0) throw new Failure(s.verb() + ": file " + p + " is empty");
                return SessionBytes.repeat(b);
            } catch (IOException e) {
                throw new Failure(s.verb() + ": cannot read " + p + ": " + e.getMessage());
            }
        }
        throw new Failure(s.verb() + ": no source");
    }
}
