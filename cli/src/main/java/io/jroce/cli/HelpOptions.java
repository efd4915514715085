package io.jroce.cli;

import picocli.CommandLine.Option;

/**
 * -h/--help and --version for the commands that take a C tool's options, where -V means something else (rping's
 * validate) and picocli's standard -V cannot be used ({@code @Mixin HelpOptions help = new HelpOptions();}).
 */
public final class HelpOptions {
    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help message and exit.")
    boolean help;

    @Option(names = "--version", versionHelp = true, description = "Print version information and exit.")
    boolean version;
}
