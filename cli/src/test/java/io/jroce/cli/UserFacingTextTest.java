package io.jroce.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What users read (README.md, every Markdown file under docs/ and the repository's other READMEs, the example
 * sessions shipped in the jar and the help of every command) speaks to users: no tracker numbers and no words about how the project was built.
 * A user reads those as noise, and they go stale the day they are written. The phrases below are precise on
 * purpose: "session" is also a jroce word (a node's session, the session language, CM sessions), so only the
 * phrases that mean a stretch of work are caught.
 */
class UserFacingTextTest {

    /** One kind of phrase that must not come back, and why. */
    private record Forbidden(Pattern pattern, String why) {
        static Forbidden of(String regex, String why) {
            return new Forbidden(Pattern.compile(regex, Pattern.CASE_INSENSITIVE), why);
        }
    }

    private static final List<Forbidden> FORBIDDEN = List.of(
            // "issue 13", "Issue #14", "ticket 7", anchors like #targets-issue-13: numbers of the project's tracker mean nothing to a reader
            Forbidden.of("\\b(?:issue|ticket)s?[\\s-]*#?\\d+", "a tracker number"),
            // "#13" as a reference to the project's own issues or pull requests. Upstream references keep their
            // owner/repo prefix (netty/netty#17492) and Markdown anchors are not numbers alone (#2026-12-01-...)
            Forbidden.of("(?<![\\w/])#\\d+(?![\\w-])", "a tracker reference"),
            // "the targets", "(was 0.18 in the issue)", "what the issue asks for": the tracker entry
            // the work came from; a user is told what the target is, not where it was written
            Forbidden.of("\\b(?:in|of|by|from) the issue\\b|\\bthe issue(?:'s|\\s+(?:asks|says|wants|lists))",
                    "the tracker entry the work came from"),
            // "other helpers built", "five other helpers were building": who did the work, not what jroce does.
            // Test utilities are named by their class (RcConnect), never "helper"
            Forbidden.of("\\bhelpers?\\b", "who built the project"),
            // "the lead engineer", "filed by", "worktree", "agents": how the work was organised
            Forbidden.of("\\blead engineer\\b|\\bfiled by\\b|\\bwork ?trees?\\b|\\bsub-?agents?\\b",
                    "how the work was organised"),
            // "built from this branch", "the jar of main before the change", "on the main branch": a user
            // compares releases, dates or commits, not branches
            Forbidden.of("\\b(?:this|that|the same|a|my|our|feature) branch\\b|\\b(?:main|master) branch\\b"
                    + "|\\bmain before\\b|\\bjar of main\\b|\\bon main\\b", "a branch of the work"),
            // "this session's changes", "in the same session", "(session 1)", "split into sessions": a stretch
            // of work or of measuring. jroce's own sessions (a node's session, "this session's lines" in the
            // prompt, CM sessions, the session language) do not match
            Forbidden.of("\\b(?:same|that|first|second|third|previous|earlier|later|next|work|working) sessions?\\b"
                    + "|\\bthis session's (?:changes|work|fixes|figures|runs?)\\b|\\b(?:in|during) this session\\b"
                    + "|\\bsession \\d+\\b|\\binto sessions\\b", "a session of work, not a jroce session"));

    private static final Path ROOT = repositoryRoot();

    @Test
    void userFacingTextNamesNoTrackerNumbersAndNoWorkOrganisation() throws IOException {
        List<String> found = new ArrayList<>();
        for (Map.Entry<String, String> text : userFacingTexts().entrySet()) {
            found.addAll(forbiddenPhrases(text.getKey(), text.getValue()));
        }
        assertTrue(found.isEmpty(), "user-facing text that speaks of the work instead of to the user:\n"
                + String.join("\n", found));
    }

    /** Each pattern catches the phrases it was written for (so the check can fail) and spares jroce's own words. */
    @Test
    void theChecksCatchTheirPhrasesAndSpareJrocesOwnWords() {
        for (String bad : List.of(
                "see where issue 13's targets stand", "## Issue 13 targets", "Issue 14 asks how jroce behaves",
                "fixed in #13.", "(see #13)", "(was 0.18 in the issue)", "the issue's targets",
                "what the issue asks for", "while other helpers built", "five other helpers were building",
                "`cli/target/jroce.jar` built from this branch", "A = the jar of main before the change",
                "after this\nsession's changes", "[below](#targets-issue-14-second-part)", "measured in the same session", "(session 1)",
                "in the second session", "split into sessions", "compare only figures taken in the same session",
                "No gain could be shown in this session", "as the lead engineer said")) {
            assertFalse(forbiddenPhrases("example", bad).isEmpty(), "not caught: " + bad);
        }
        for (String good : List.of(
                "driven by a session: a script, standard input", "the [session language](session-language.md)",
                "`history` still lists this session's lines", "A node's session can change", "CM sessions",
                "when a session ends", "(netty/netty#17492, fixed after 4.2.18)", "[below](#2026-12-01-2308-after)",
                "the public `RcConnect` class", "the issue of a WR", "retry 7 times")) {
            assertTrue(forbiddenPhrases("example", good).isEmpty(), "caught by mistake: " + good);
        }
    }

    /**
     * docs/testing.md's table of integration tests names every {@code *IT} class of the repository (integration-tests/
     * and any other module's sources), so it stays complete.
     */
    @Test
    void theTestingGuideNamesEveryIntegrationTest() throws IOException {
        String guide = Files.readString(ROOT.resolve("docs/testing.md"), StandardCharsets.UTF_8);
        List<String> integrationTests;
        try (Stream<Path> files = Files.walk(ROOT)) {
            integrationTests = files.filter(p -> p.toString().endsWith("IT.java"))
                    .filter(p -> !ROOT.relativize(p).toString().matches("(?:.*/)?(?:target|node_modules)/.*|\\..*"))
                    .filter(p -> ROOT.relativize(p).toString().contains("src/"))
                    .map(p -> p.getFileName().toString())
                    .filter(name -> name.endsWith("IT.java"))
                    .map(name -> name.substring(0, name.length() - ".java".length()))
                    .sorted().collect(Collectors.toList());
        }
        assertTrue(integrationTests.contains("ProcessesIT"), "the walk finds the *IT classes: " + integrationTests);
        List<String> missing = integrationTests.stream()
                .filter(it -> !guide.contains("| `" + it + "` |")).collect(Collectors.toList());
        assertTrue(missing.isEmpty(), "docs/testing.md's table of integration tests lacks a row for " + missing);
    }

    /** Every forbidden phrase in {@code text}, also when a line break falls inside it, with its line number. */
    private static List<String> forbiddenPhrases(String where, String text) {
        List<String> found = new ArrayList<>();
        String oneLine = text.replace('\n', ' ');   // same length: offsets stay those of text
        for (Forbidden f : FORBIDDEN) {
            Matcher m = f.pattern().matcher(oneLine);
            while (m.find()) {
                int line = 1 + (int) text.substring(0, m.start()).chars().filter(c -> c == '\n').count();
                found.add(where + ":" + line + ": '" + m.group() + "' (" + f.why() + ")");
            }
        }
        return found;
    }

    /** Every Markdown file of the repository (README.md, docs/, the other READMEs), the jar's resources, every command's help. */
    private static Map<String, String> userFacingTexts() throws IOException {
        Map<String, String> texts = new LinkedHashMap<>();
        List<Path> files = new ArrayList<>();
        try (Stream<Path> markdown = Files.walk(ROOT)) {   // README.md, docs/, and the READMEs of examples, test data, bench, lab
            markdown.filter(p -> p.toString().endsWith(".md"))
                    .filter(p -> !ROOT.relativize(p).toString().matches("(?:.*/)?(?:target|node_modules)/.*|\\..*"))
                    .forEach(files::add);
        }
        try (Stream<Path> resources = Files.walk(ROOT.resolve("cli/src/main/resources"))) {
            resources.filter(Files::isRegularFile).forEach(files::add);
        }
        files.sort(null);
        for (Path file : files) {
            texts.put(ROOT.relativize(file).toString(), Files.readString(file, StandardCharsets.UTF_8));
        }
        assertTrue(texts.containsKey("README.md") && texts.containsKey("docs/java-api.md"),
                "README and docs found under " + ROOT + ": " + texts.keySet());
        CommandLine root = Main.commandLine(new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()));
        addHelp(root, texts);
        return texts;
    }

    private static void addHelp(CommandLine command, Map<String, String> texts) {
        texts.put("help of '" + command.getCommandSpec().qualifiedName() + "'", command.getUsageMessage(CommandLine.Help.Ansi.OFF));
        for (CommandLine sub : command.getSubcommands().values()) {
            if (!texts.containsKey("help of '" + sub.getCommandSpec().qualifiedName() + "'")) {
                addHelp(sub, texts);
            }
        }
    }

    private static Path repositoryRoot() {
        Path dir = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        for (Path p = dir; p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("README.md")) && Files.isDirectory(p.resolve("docs"))) {
                return p;
            }
        }
        throw new IllegalStateException("no repository root (README.md and docs/) above " + dir);
    }
}
