package io.jroce.cli.node;

import io.jroce.cli.node.Session.Failure;
import io.jroce.cli.node.Session.Qp;
import io.jroce.cli.node.SessionLanguage.Type;
import io.jroce.cli.node.SessionSyntax.Literal;
import io.jroce.cli.node.SessionSyntax.Part;
import io.jroce.cli.node.SessionSyntax.Ref;
import io.jroce.cli.node.SessionSyntax.Statement;
import io.jroce.cli.node.SessionSyntax.Token;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.MemoryRegion;

import java.util.ArrayList;
import java.util.List;

/**
 * The values of a statement when it runs: {@code $object.field} references replaced by what the objects of
 * the session hold now, then the text parsed as the argument's type.
 */
final class Values {
    private final Session session;

    Values(Session session) {
        this.session = session;
    }

    /** The token's text with references resolved. */
    String text(Token t) throws Failure {
        if (!t.hasRefs()) return t.literal();
        StringBuilder sb = new StringBuilder();
        for (Part p : t.parts()) {
            if (p instanceof Literal l) sb.append(l.text());
            else sb.append(resolve((Ref) p));
        }
        return sb.toString();
    }

    /** The token's value as {@code type}; a bad value names the argument and, for a reference, what it was. */
    Object value(Token t, Type type) throws Failure {
        String text = text(t);
        try {
            return SessionLanguage.parse(type, text);
        } catch (IllegalArgumentException e) {
            throw new Failure((t.key() != null ? t.key() + ": " : "") + e.getMessage()
                    + (t.hasRefs() ? " (from " + t.raw() + ")" : ""));
        }
    }

    /** The value of {@code key=}, or {@code dflt} when the statement does not give it. */
    @SuppressWarnings("unchecked")
    <T> T get(Statement s, String key, Type type, T dflt) throws Failure {
        return s.has(key) ? (T) value(s.arg(key), type) : dflt;
    }

    String name(Statement s, String key) throws Failure {
        return (String) value(s.arg(key), Type.NAME);
    }

    long size(Statement s, String key, long dflt) throws Failure {
        return get(s, key, Type.SIZE, dflt);
    }

    boolean flag(Statement s, String key) throws Failure {
        return get(s, key, Type.BOOL, false);
    }

    /** The words of echo and chaos as written, references resolved, joined with blanks or commas. */
    String rest(Statement s, boolean blanks) throws Failure {
        List<String> words = new ArrayList<>();
        for (Token t : s.inOrder()) words.add(t.named() ? t.key() + "=" + text(t) : text(t));
        return String.join(blanks ? " " : ",", words);
    }

    /** [offset, offset+len) of a region; len defaults to {@code dflt} or, when negative, to the rest of the region. */
    int[] range(Statement s, MemoryRegion mr, long dflt) throws Failure {
        long off = size(s, "offset", 0);
        long len = s.has("len") ? size(s, "len", 0) : dflt >= 0 ? dflt : mr.length() - off;
        if (off > mr.length() || len < 0 || off + len > mr.length()) {
            throw new Failure(s.verb() + ": offset " + off + " + length " + len + " is outside the region (" + mr.length() + " bytes)");
        }
        return new int[] {(int) off, (int) len};
    }

    private String resolve(Ref r) throws Failure {
        MemoryRegion mr = session.regions.get(r.object());
        if (mr != null) {
            return switch (r.field()) {
                case "addr" -> "0x" + Long.toHexString(mr.address());
                case "len" -> Integer.toString(mr.length());
                case "lkey" -> "0x" + Integer.toHexString(mr.lkey());
                case "rkey" -> "0x" + Integer.toHexString(mr.rkey());
                default -> throw new Failure("a memory region has no field " + r.field());
            };
        }
        Qp q = session.qps.get(r.object());
        if (q != null) {
            return switch (r.field()) {
                case "qpn" -> String.format("0x%06x", q.qp.qpNum());
                case "state" -> q.qp.state().name();
                case "psn" -> String.format("0x%06x", q.qp.query().sqPsn());
                default -> throw new Failure("a queue pair has no field " + r.field());
            };
        }
        CompletionQueue cq = session.cqs.get(r.object());
        if (cq != null) {
            return switch (r.field()) {
                case "depth" -> Integer.toString(cq.depth());
                case "size" -> Integer.toString(session.completions.size(cq));
                default -> throw new Failure("a completion queue has no field " + r.field());
            };
        }
        throw new Failure("$" + r.object() + " is not defined");
    }
}
