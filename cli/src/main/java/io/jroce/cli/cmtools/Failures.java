package io.jroce.cli.cmtools;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What went wrong, one line per distinct cause: four connections rejected for the same reason are one line that says
 * so, not four (the C tools print one per event).
 */
final class Failures {
    private final String prefix;
    private final Map<String, List<Integer>> lines = new LinkedHashMap<>();

    /** {@code prefix}: the tool's name as its lines start ("cmatose", "udaddy"). */
    Failures(String prefix) {
        this.prefix = prefix;
    }

    /** A failure of connection {@code index} (0-based; -1: not of one connection). */
    void add(int index, String line) {
        lines.computeIfAbsent(line, k -> new ArrayList<>()).add(index);
    }

    boolean any() {
        return !lines.isEmpty();
    }

    /** How many connections failed (distinct indexes). */
    int connections() {
        return (int) lines.values().stream().flatMap(List::stream).filter(i -> i >= 0).distinct().count();
    }

    /** Prints each cause once, with the connections it hit when more than one. */
    void print(PrintWriter err, int total) {
        for (Map.Entry<String, List<Integer>> e : lines.entrySet()) {
            List<Integer> which = e.getValue();
            String where = "";
            if (total > 1 && which.size() > 1) where = which.size() == total ? " (all " + total + " connections)" : " (" + which.size() + " of " + total + " connections)";
            else if (total > 1 && which.get(0) >= 0) where = " (connection " + which.get(0) + ")";
            err.println(prefix + ": " + e.getKey() + where);
        }
        err.flush();
    }
}
