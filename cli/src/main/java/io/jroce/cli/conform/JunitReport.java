package io.jroce.cli.conform;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * {@code --junit FILE}: the verdicts as JUnit XML, the format CI systems show: one testcase per case (classname
 * "conform.GROUP", name the case id); a departure is a failure naming the expected and observed answers and the
 * section, a case that cannot tell is skipped with its reason.
 */
final class JunitReport {
    private JunitReport() {
    }

    static void write(Path file, String peer, List<Case.Result> rs) throws IOException {
        StringBuilder sb = new StringBuilder("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        sb.append(String.format("<testsuite name=\"%s\" tests=\"%d\" failures=\"%d\" skipped=\"%d\" errors=\"0\">%n", esc("jroce conform " + peer),
                rs.size(), ConformReport.count(rs, Case.Verdict.DEPARTS), ConformReport.count(rs, Case.Verdict.CANNOT_TELL)));
        for (Case.Result r : rs) {
            sb.append(String.format("  <testcase classname=\"conform.%s\" name=\"%s\">", esc(r.c().group()), esc(r.c().id())));
            switch (r.verdict()) {
                case DEPARTS -> sb.append(String.format("%n    <failure message=\"%s\">%s</failure>%n  ",
                        esc("observed " + r.observed() + ", expected " + String.join(" | ", r.c().expected())),
                        esc(r.c().title() + "\n" + r.c().section() + "\nrdma_rxe: " + r.c().rxe())));
                case CANNOT_TELL -> sb.append(String.format("%n    <skipped message=\"%s\"/>%n  ", esc(r.note())));
                default -> { }
            }
            sb.append("</testcase>\n");
        }
        sb.append("</testsuite>\n");
        Files.writeString(file, sb.toString(), StandardCharsets.UTF_8);
    }

    static String esc(String s) {
        if (s == null) return "";
        StringBuilder b = new StringBuilder(s.length());
        for (char c : s.toCharArray()) {
            switch (c) {
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '&' -> b.append("&amp;");
                case '"' -> b.append("&quot;");
                default -> b.append(c < 0x20 && c != '\n' && c != '\t' ? ' ' : c);
            }
        }
        return b.toString();
    }
}
