package io.jroce.cli.conform;

import io.jroce.cli.Json;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The verdicts as a table (one line per case, grouped, a summary line) or as one JSON object. */
final class ConformReport {
    private ConformReport() {
    }

    static long count(List<Case.Result> rs, Case.Verdict v) {
        return rs.stream().filter(r -> r.verdict() == v).count();
    }

    static String summary(List<Case.Result> rs) {
        return String.format("%d cases: %d conform, %d depart, %d cannot tell", rs.size(), count(rs, Case.Verdict.CONFORMS),
                count(rs, Case.Verdict.DEPARTS), count(rs, Case.Verdict.CANNOT_TELL));
    }

    static void table(PrintWriter out, String peer, List<Case.Result> rs) {
        out.println("conformance of " + peer);
        String fmt = "%-17s %-26s %-12s %-40s %s%n";
        out.printf(fmt, "GROUP", "CASE", "VERDICT", "OBSERVED", "EXPECTED / NOTE");
        List<String> groups = new ArrayList<>();
        for (Case.Result r : rs) if (!groups.contains(r.c().group())) groups.add(r.c().group());
        for (String g : groups) {
            for (Case.Result r : rs) {
                if (!r.c().group().equals(g)) continue;
                String right = switch (r.verdict()) {
                    case CONFORMS -> String.join(" | ", r.c().expected());
                    case DEPARTS -> String.join(" | ", r.c().expected()) + "  (" + r.c().section() + "; " + r.c().rxe() + ")";
                    case CANNOT_TELL -> r.note();
                };
                out.printf(fmt, g, r.c().id(), r.verdict().text, r.observed() == null ? "-" : r.observed(), right);
            }
        }
        out.println("summary: " + summary(rs));
    }

    /** After the table: the cases whose answer differs from the recorded run. */
    static void differences(PrintWriter out, String ref, List<Reference.Difference> ds) {
        out.println("compared with " + ref + ": " + ds.size() + (ds.size() == 1 ? " case differs" : " cases differ"));
        for (Reference.Difference d : ds) out.printf("  %-26s now %s, recorded %s%n", d.id(), d.now(), d.then());
    }

    static String json(String peer, List<Case.Result> rs, String ref, List<Reference.Difference> ds) {
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("peer", peer);
        List<Object> cases = new ArrayList<>();
        for (Case.Result r : rs) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", r.c().id());
            m.put("group", r.c().group());
            m.put("title", r.c().title());
            m.put("section", r.c().section());
            m.put("rxe", r.c().rxe());
            m.put("fatal", r.c().fatal());
            m.put("expected", r.c().expected());
            m.put("observed", r.observed());
            m.put("verdict", r.verdict().text);
            m.put("note", r.note());
            cases.add(m);
        }
        top.put("cases", cases);
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("cases", rs.size());
        s.put("conforms", count(rs, Case.Verdict.CONFORMS));
        s.put("departs", count(rs, Case.Verdict.DEPARTS));
        s.put("cannot_tell", count(rs, Case.Verdict.CANNOT_TELL));
        top.put("summary", s);
        if (ds != null) {
            Map<String, Object> c = new LinkedHashMap<>();
            c.put("reference", ref);
            List<Object> l = new ArrayList<>();
            for (Reference.Difference d : ds) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("id", d.id());
                m.put("now", d.now());
                m.put("recorded", d.then());
                l.add(m);
            }
            c.put("differences", l);
            top.put("compare", c);
        }
        return Json.toJson(top);
    }
}
