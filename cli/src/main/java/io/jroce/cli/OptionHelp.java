package io.jroce.cli;

import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A command whose shared options (the {@link DeviceOptions} mixin and the like) need words of its own in its
 * help: what an absent option means for this command, its default, what it does here. The shared option
 * declares only what holds for every command; the command gives the whole description of each option that
 * differs. {@link #apply} puts these texts into the command line model once, before anything is parsed.
 */
public interface OptionHelp {
    /** Option name (any of its names, e.g. {@code --mtu}) to its description in this command's help. */
    Map<String, String> optionHelp();

    /**
     * Replaces the descriptions named by every {@link OptionHelp} command under {@code root}, keeping the order
     * in which the options are shown. An option name the command does not have is a programming error.
     */
    static void apply(CommandLine root) {
        if (root.getCommand() instanceof OptionHelp h) {
            CommandSpec spec = root.getCommandSpec();
            Map<String, String> texts = h.optionHelp();
            for (String name : texts.keySet()) {
                if (spec.findOption(name) == null) {
                    throw new IllegalStateException(spec.qualifiedName() + " has no option " + name);
                }
            }
            // picocli's option specs are immutable: rebuild the list in order, with the new texts
            List<OptionSpec> options = new ArrayList<>(spec.options());
            for (OptionSpec o : options) spec.remove(o);
            for (OptionSpec o : options) {
                String text = null;
                for (String n : o.names()) {
                    if (texts.containsKey(n)) text = texts.get(n);
                }
                spec.addOption(text == null ? o : o.toBuilder().description(text).build());
            }
        }
        for (CommandLine sub : root.getSubcommands().values()) apply(sub);
    }
}
