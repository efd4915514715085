package io.jroce.cli.perf;

import io.jroce.cli.Converters;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

import java.time.Duration;

/** How long {@code perf} and {@code pingpong} wait for their peer: --timeout, and --qp-timeout of the QP itself. */
final class PeerWaits {
    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "30", converter = Converters.Time.class,
            description = "Longest wait for the peer: TCP accept/connect, each exchange, each completion (a passive perf server "
                    + "waits as long as traffic flows); seconds, or e.g. 500ms (default: ${DEFAULT-VALUE}).")
    Duration timeout;

    @Option(names = "--qp-timeout", paramLabel = "EXP", defaultValue = "18", description = "Local ACK timeout of our QP, 4.096 us * 2^EXP, "
            + "retried 7 times (default: ${DEFAULT-VALUE}, about 1 s; ibv_rc_pingpong and perftest use 14, 67 ms, which a JVM pausing "
            + "under load can miss). Invisible to the peer.")
    int qpTimeout;

    /** Both in range, or a one-line usage error. */
    void check(CommandSpec spec) {
        if (timeout.isZero() || timeout.compareTo(Duration.ofDays(1)) > 0) {
            throw new ParameterException(spec.commandLine(), "invalid --timeout " + Converters.seconds(timeout) + ": must be >0 and <= 86400 s");
        }
        if (qpTimeout < 1 || qpTimeout > 31) throw new ParameterException(spec.commandLine(), "invalid --qp-timeout " + qpTimeout + ": must be 1..31");
    }
}
