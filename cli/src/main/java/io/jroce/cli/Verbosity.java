package io.jroce.cli;

import org.slf4j.LoggerFactory;
import picocli.CommandLine.Option;

/**
 * {@code -v/--verbose} of the commands that log (a picocli mixin): -v INFO, -vv DEBUG; without it the logging
 * configuration decides (WARN by default, or a {@code -Dlogback.configurationFile} of the user's).
 */
public final class Verbosity {
    @Option(names = {"-v", "--verbose"}, description = "More logging on stderr: -v INFO, -vv DEBUG (default: WARN).")
    boolean[] verbose = new boolean[0];

    /** How many times -v was given. */
    public int level() {
        return verbose.length;
    }

    /** Sets the root log level from -v/-vv; without them nothing changes. */
    public void apply() {
        int v = verbose.length;
        if (v <= 0) return;
        org.slf4j.Logger root = LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        if (root instanceof ch.qos.logback.classic.Logger lb) {
            lb.setLevel(v >= 2 ? ch.qos.logback.classic.Level.DEBUG : ch.qos.logback.classic.Level.INFO);
        }
    }
}
