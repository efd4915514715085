package io.jroce.cli.conform;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code --compare REF.json}: a recorded run ({@code --json} output, e.g. of rdma_rxe) read back as case id &rarr;
 * observed answer, and the cases whose answer now differs. Only the fields this needs are read: the {@code cases}
 * array's {@code id} and {@code observed} strings; the file is bounded to {@value #MAX_BYTES} bytes.
 */
final class Reference {
    static final int MAX_BYTES = 1 << 22;

    /** A case whose answer differs: now and in the reference ("-" for none, "absent" when not in it). */
    record Difference(String id, String now, String then) {
    }

    private Reference() {
    }

    static Map<String, String> read(Path file) throws IOException {
        if (Files.size(file) > MAX_BYTES) throw new IOException(file + " is larger than " + MAX_BYTES + " bytes: not a conform recording");
        String text = Files.readString(file, StandardCharsets.UTF_8);
        Object top;
        try {
            top = new MiniJson(text).value();
        } catch (IllegalArgumentException e) {
            throw new IOException(file + " is not JSON (" + e.getMessage() + "): give a file written by conform --json");
        }
        if (!(top instanceof Map<?, ?> m) || !(m.get("cases") instanceof List<?> cases)) {
            throw new IOException(file + " has no \"cases\" array: give a file written by conform --json");
        }
        Map<String, String> out = new LinkedHashMap<>();
        for (Object o : cases) {
            if (o instanceof Map<?, ?> c && c.get("id") instanceof String id) {
                out.put(id, c.get("observed") instanceof String s ? s : null);
            }
        }
        return out;
    }

    static List<Difference> differences(List<Case.Result> rs, Map<String, String> ref) {
        List<Difference> d = new ArrayList<>();
        for (Case.Result r : rs) {
            if (!ref.containsKey(r.c().id())) {
                d.add(new Difference(r.c().id(), show(r.observed()), "absent"));
            } else if (!java.util.Objects.equals(r.observed(), ref.get(r.c().id()))) {
                d.add(new Difference(r.c().id(), show(r.observed()), show(ref.get(r.c().id()))));
            }
        }
        return d;
    }

    private static String show(String s) {
        return s == null ? "-" : s;
    }

    /** Just enough JSON: objects, arrays, strings (with escapes), numbers, true, false, null. */
    private static final class MiniJson {
        private final String s;
        private int i;

        MiniJson(String s) {
            this.s = s;
        }

        Object value() {
            ws();
            if (i >= s.length()) throw new IllegalArgumentException("ends early");
            char c = s.charAt(i);
            if (c == '{') {
                i++;
                Map<String, Object> m = new LinkedHashMap<>();
                ws();
                if (peek('}')) return m;
                do {
                    ws();
                    String k = string();
                    ws();
                    expect(':');
                    m.put(k, value());
                    ws();
                } while (take(','));
                expect('}');
                return m;
            }
            if (c == '[') {
                i++;
                List<Object> l = new ArrayList<>();
                ws();
                if (peek(']')) return l;
                do {
                    l.add(value());
                    ws();
                } while (take(','));
                expect(']');
                return l;
            }
            if (c == '"') return string();
            int start = i;
            while (i < s.length() && "{}[],: \t\r\n".indexOf(s.charAt(i)) < 0) i++;
            String w = s.substring(start, i);
            return switch (w) {
                case "true" -> Boolean.TRUE;
                case "false" -> Boolean.FALSE;
                case "null" -> null;
                default -> {
                    try {
                        yield Double.parseDouble(w);
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException("unexpected '" + w + "' at " + start);
                    }
                }
            };
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (i < s.length() && s.charAt(i) != '"') {
                char c = s.charAt(i++);
                if (c == '\\' && i < s.length()) {
                    char e = s.charAt(i++);
                    switch (e) {
                        case 'n' -> b.append('\n');
                        case 't' -> b.append('\t');
                        case 'r' -> b.append('\r');
                        case 'b' -> b.append('\b');
                        case 'f' -> b.append('\f');
                        case 'u' -> {
                            if (i + 4 > s.length()) throw new IllegalArgumentException("bad \\u escape");
                            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                            i += 4;
                        }
                        default -> b.append(e);
                    }
                } else {
                    b.append(c);
                }
            }
            expect('"');
            return b.toString();
        }

        private void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
        }

        private boolean peek(char c) {
            if (i < s.length() && s.charAt(i) == c) {
                i++;
                return true;
            }
            return false;
        }

        private boolean take(char c) {
            return peek(c);
        }

        private void expect(char c) {
            if (i >= s.length() || s.charAt(i) != c) throw new IllegalArgumentException("expected '" + c + "' at " + i);
            i++;
        }
    }
}
