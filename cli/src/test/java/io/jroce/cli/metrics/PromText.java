package io.jroce.cli.metrics;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A strict reader of the Prometheus text exposition format (version 0.0.4), for tests: every line is a
 * {@code # HELP}, a {@code # TYPE} or a sample, names and labels obey the format's grammar, every sample
 * belongs to the family its {@code # TYPE} line announced just before, and counter samples end in
 * {@code _total}. Anything else fails with the line.
 */
final class PromText {
    private static final String NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
    private static final Pattern HELP = Pattern.compile("# HELP (" + NAME + ") (.*)");
    private static final Pattern TYPE = Pattern.compile("# TYPE (" + NAME + ") (counter|gauge|histogram|summary|untyped)");
    private static final Pattern SAMPLE = Pattern.compile("(" + NAME + ")(\\{(.*)})? (\\S+)( -?\\d+)?");
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\\\n]|\\\\[\\\\\"n])*)\"(,|$)");

    record Sample(String name, Map<String, String> labels, double value) {
    }

    /** The types announced, by family name. */
    final Map<String, String> types = new LinkedHashMap<>();
    final Map<String, String> help = new LinkedHashMap<>();
    final List<Sample> samples = new ArrayList<>();

    static PromText parse(String text) {
        PromText p = new PromText();
        String family = null;
        String[] lines = text.split("\n", -1);
        if (!lines[lines.length - 1].isEmpty()) throw new IllegalArgumentException("the last line has no newline");
        for (int i = 0; i < lines.length - 1; i++) {
            String line = lines[i];
            Matcher m;
            if (line.isEmpty()) continue;
            if ((m = HELP.matcher(line)).matches()) {
                p.help.put(m.group(1), m.group(2));
            } else if ((m = TYPE.matcher(line)).matches()) {
                if (p.types.put(m.group(1), m.group(2)) != null) fail(i, line, "a second TYPE line for the family");
                family = m.group(1);
            } else if (line.startsWith("#")) {
                fail(i, line, "a comment that is neither HELP nor TYPE");
            } else if ((m = SAMPLE.matcher(line)).matches()) {
                String name = m.group(1);
                if (family == null) fail(i, line, "a sample before any TYPE line");
                String type = p.types.get(family);
                boolean ok = type.equals("counter") ? name.equals(family) && name.endsWith("_total")
                        || name.equals(family + "_total") : name.equals(family);
                if (!ok) fail(i, line, "a sample outside its " + type + " family " + family);
                Map<String, String> labels = new LinkedHashMap<>();
                String body = m.group(3);
                if (body != null && !body.isEmpty()) {
                    Matcher l = LABEL.matcher(body);
                    int at = 0;
                    while (at < body.length()) {
                        if (!l.find(at) || l.start() != at) fail(i, line, "bad label syntax at " + body.substring(at));
                        if (labels.put(l.group(1), l.group(2)) != null) fail(i, line, "label " + l.group(1) + " twice");
                        at = l.end();
                    }
                }
                double value;
                try {
                    value = Double.parseDouble(m.group(4));
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("line " + (i + 1) + ": bad value: " + line);
                }
                p.samples.add(new Sample(name, Map.copyOf(labels), value));
            } else {
                fail(i, line, "not a sample");
            }
        }
        return p;
    }

    /** The one sample of {@code name} with exactly these labels; fails if there is none or more than one. */
    double value(String name, Map<String, String> labels) {
        List<Sample> found = samples.stream().filter(s -> s.name.equals(name) && s.labels.equals(labels)).toList();
        if (found.size() != 1) throw new AssertionError(found.size() + " samples of " + name + labels);
        return found.get(0).value;
    }

    /** Samples of {@code name} whose labels include every given one. */
    List<Sample> find(String name, Map<String, String> someLabels) {
        return samples.stream()
                .filter(s -> s.name.equals(name) && s.labels.entrySet().containsAll(someLabels.entrySet()))
                .toList();
    }

    private static void fail(int i, String line, String why) {
        throw new IllegalArgumentException("line " + (i + 1) + ": " + why + ": " + line);
    }
}
