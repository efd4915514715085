package io.jroce.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The help of every command, found by walking the command tree (a new command is covered without a change
 * here): {@code --help}, {@code -h} and {@code jroce help COMMAND} answer with exit 0, and the text speaks of that
 * command only, names no internal Java identifier, and points at nothing the user does not have.
 */
class CommandHelpTest {
    /**
     * The commands another command's help may name as a word: demo runs two nodes; conform's and exec's help name
     * rdma-core's C tool rping (a peer to reach, a program to run).
     */
    private static final Map<String, Set<String>> MAY_NAME = Map.of("demo", Set.of("node"), "conform", Set.of("rping"),
            "exec", Set.of("rping"));
    /** A Java class and member, e.g. DeviceConfig.tailProbeMicros. */
    private static final Pattern JAVA_NAME = Pattern.compile("\\b[A-Z][a-z]+[A-Z][A-Za-z]*\\.[a-z]+[A-Z][A-Za-z]*\\b");

    /** Every command under jroce, by its path of names (e.g. [perf]), from the command tree itself. */
    private static List<List<String>> commands() {
        CommandLine root = Main.commandLine(new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()));
        List<List<String>> out = new ArrayList<>();
        walk(root, new ArrayList<>(), out);
        return out;
    }

    private static void walk(CommandLine cl, List<String> path, List<List<String>> out) {
        for (Map.Entry<String, CommandLine> e : cl.getSubcommands().entrySet()) {
            if (!e.getKey().equals(e.getValue().getCommandName())) continue; // an alias
            List<String> p = new ArrayList<>(path);
            p.add(e.getKey());
            out.add(p);
            walk(e.getValue(), p, out);
        }
    }

    private static Set<String> topLevelNames() {
        Set<String> names = new TreeSet<>();
        for (List<String> p : commands()) names.add(p.get(0));
        names.remove("help");
        return names;
    }

    @Test
    void theTreeHasTheCommandsWeKnow() {
        // a guard that the walk sees the commands at all (the checks below would pass vacuously on none)
        assertTrue(topLevelNames().containsAll(List.of("inspect", "demo", "pingpong", "perf", "rping", "node")), topLevelNames().toString());
    }

    @Test
    void everyCommandAnswersHelpAndH() {
        for (List<String> path : commands()) {
            String name = String.join(" ", path);
            for (String flag : List.of("--help", "-h")) {
                List<String> args = new ArrayList<>(path);
                args.add(flag);
                Cli.Result r = Cli.run(args.toArray(String[]::new));
                assertEquals(0, r.exit(), name + " " + flag + ": " + r.err());
                assertEquals("", r.err(), name + " " + flag);
                if (!path.get(0).equals("help")) {
                    assertTrue(r.out().startsWith("Usage: jroce " + name + " "), name + " " + flag + ": " + r.out());
                }
            }
            if (path.size() == 1 && !name.equals("help")) {
                Cli.Result h = Cli.run("help", name);
                assertEquals(0, h.exit(), "help " + name + ": " + h.err());
                assertTrue(h.out().startsWith("Usage: jroce " + name + " "), h.out());
            }
        }
    }

    @Test
    void rpingKeepsDashCapitalVForValidate() {
        Cli.Result r = Cli.run("rping", "--help");
        assertTrue(r.out().contains("-V                        Validate ping data"), r.out());
        // and its usage errors point at a help that works
        Cli.Result bad = Cli.run("rping", "--no-such-option");
        assertEquals(2, bad.exit());
        assertTrue(bad.err().contains("(see 'jroce rping --help')"), bad.err());
        assertEquals(0, Cli.run("rping", "--help").exit());
    }

    @Test
    void eachOptionTextSpeaksOfItsOwnCommand() {
        Set<String> names = topLevelNames();
        CommandLine root = Main.commandLine(new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()));
        List<String> problems = new ArrayList<>();
        for (String cmd : names) {
            CommandLine cl = root.getSubcommands().get(cmd);
            Set<String> others = new TreeSet<>(names);
            others.remove(cmd);
            others.removeAll(MAY_NAME.getOrDefault(cmd, Set.of()));
            // another command as a bare word ("pingpong and node"), not a pointer to it ("'jroce inspect FILE'")
            Pattern other = Pattern.compile("(?<!jroce )(?<![\\w-])(" + String.join("|", others) + ")(?![\\w-])");
            List<String> texts = new ArrayList<>(List.of(cl.getCommandSpec().usageMessage().description()));
            for (OptionSpec o : cl.getCommandSpec().options()) {
                String d = String.join(" ", o.description());
                if (d.isBlank()) problems.add(cmd + " " + o.longestName() + ": no description");
                texts.add(o.longestName() + ": " + d);
                Object dv = o.defaultValue();
                if (dv != null && !o.usageHelp() && !o.versionHelp() && o.type() != boolean.class && o.type() != Boolean.class
                        && !d.toLowerCase().contains("default")) {
                    problems.add(cmd + " " + o.longestName() + ": has a default (" + dv + ") its help does not state");
                }
            }
            for (String t : texts) {
                Matcher m = other.matcher(t);
                if (m.find()) problems.add(cmd + " " + t + ": names '" + m.group(1) + "'");
                Matcher j = JAVA_NAME.matcher(t);
                if (j.find()) problems.add(cmd + " " + t + ": names the internal '" + j.group() + "'");
                for (String pointer : List.of("README", "docs/", ".md")) {
                    if (t.contains(pointer)) problems.add(cmd + " " + t + ": points at " + pointer + ", which the jar does not ship");
                }
            }
        }
        assertEquals(List.of(), problems);
    }

    /**
     * Every long option a command's help names ({@code --timeout}, {@code --no-gso}) is one of that command's own, so
     * text shared between commands cannot send a reader to an option this command does not have. Short options are
     * left out: the help quotes the C tools' own ({@code ibv_rc_pingpong -g 1}).
     */
    @Test
    void eachHelpNamesOnlyItsOwnLongOptions() {
        CommandLine root = Main.commandLine(new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()));
        List<String> problems = new ArrayList<>();
        for (String cmd : topLevelNames()) {
            CommandLine cl = root.getSubcommands().get(cmd);
            String help = cl.getUsageMessage(CommandLine.Help.Ansi.OFF);
            problems.addAll(foreignLongOptions(cmd, cl.getCommandSpec(), help));
        }
        assertEquals(List.of(), problems);
        // and the check sees one: perf's --oob named in pingpong's help would be caught, pingpong's own --timeout not
        CommandLine pingpong = root.getSubcommands().get("pingpong");
        CommandLine rping = root.getSubcommands().get("rping");
        assertEquals(List.of(), foreignLongOptions("pingpong", pingpong.getCommandSpec(), "wait --timeout, then --no-gso"));
        assertEquals(List.of("rping: --oob"), foreignLongOptions("rping", rping.getCommandSpec(), "listens on --oob instead"));
    }

    /** The {@code --name} words of {@code text} that are not options of {@code command} (a {@code --no-X} is X's). */
    private static List<String> foreignLongOptions(String name, CommandSpec command, String text) {
        List<String> out = new ArrayList<>();
        Matcher m = Pattern.compile("(?<![\\w-])--([a-z][a-z0-9_-]*[a-z0-9])").matcher(text);
        Set<String> seen = new TreeSet<>();
        while (m.find()) {
            String option = "--" + m.group(1);
            if (!seen.add(option)) continue;
            boolean own = command.findOption(option) != null
                    || option.startsWith("--no-") && command.findOption("--" + option.substring(5)) != null;
            if (!own) out.add(name + ": " + option);
        }
        return out;
    }

    @Test
    void sharedOptionsSayWhatTheyMeanForEachCommand() {
        assertFalse(optionHelp("rping", "--bind").contains("Required for a server"));
        assertTrue(optionHelp("rping", "--bind").contains("-a"), optionHelp("rping", "--bind"));
        assertFalse(optionHelp("pingpong", "--timeout").contains("perf"), optionHelp("pingpong", "--timeout"));
        assertTrue(optionHelp("perf", "--timeout").contains("passive server"), optionHelp("perf", "--timeout"));
        for (String cmd : List.of("perf", "pingpong", "node", "rping", "demo")) {
            assertTrue(optionHelp(cmd, "--mtu").contains("efault"), cmd + " --mtu: " + optionHelp(cmd, "--mtu"));
            assertTrue(optionHelp(cmd, "--chaos").contains("drop="), cmd);
        }
        assertTrue(optionHelp("pingpong", "--mtu").contains("Default: 1024"), optionHelp("pingpong", "--mtu"));
        assertTrue(optionHelp("node", "--mtu").contains("default: 1024"), optionHelp("node", "--mtu"));
        assertTrue(optionHelp("demo", "--mtu").contains("default: 4096"), optionHelp("demo", "--mtu"));
        assertTrue(optionHelp("perf", "--mtu").contains("interface"), optionHelp("perf", "--mtu"));
        assertTrue(optionHelp("rping", "--mtu").contains("interface"), optionHelp("rping", "--mtu"));
        assertTrue(optionHelp("node", "--tail-probe").contains("Default: 1000"), optionHelp("node", "--tail-probe"));
        assertTrue(optionHelp("perf", "--tail-probe").contains("Default: 0"), optionHelp("perf", "--tail-probe"));
    }

    @Test
    void theOptionsCToolUsersTypeFirstExist() {
        CommandLine root = Main.commandLine(new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()));
        Map<String, List<String>> expected = Map.of(
                "perf", List.of("-d", "--ib-dev", "-i", "-a", "--all", "--report_gbits", "-F", "-v", "--verbose", "--timeout"),
                "pingpong", List.of("-d", "--ib-dev", "-i", "-v", "--verbose", "--timeout"),
                "node", List.of("-v", "--verbose"),
                "rping", List.of("-h", "--help", "-V", "-v"),
                "ucmatose", List.of("-s", "-b", "-c", "-C", "-S", "-p", "-P", "-f", "-t"),
                "udaddy", List.of("-s", "-b", "-c", "-C", "-S", "-p", "-P", "-f", "-t"));
        expected.forEach((cmd, options) -> {
            for (String o : options) {
                assertTrue(root.getSubcommands().get(cmd).getCommandSpec().findOption(o) != null, cmd + " " + o);
            }
        });
        assertTrue(optionHelp("perf", "-d").contains("--bind"), optionHelp("perf", "-d"));
    }

    /** The help text of one option of one command, as the usage message shows it (joined lines). */
    private static String optionHelp(String cmd, String option) {
        CommandLine root = Main.commandLine(new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()));
        OptionSpec o = root.getSubcommands().get(cmd).getCommandSpec().findOption(option);
        return String.join(" ", o.description());
    }
}
