package io.jroce.cli.perf;

import io.jroce.cli.Converters;
import io.jroce.cli.conn.PeerTimeout;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

import java.io.IOException;
import java.time.Duration;

/**
 * How long {@code perf} and {@code pingpong} wait for their peer: --timeout, and --qp-timeout of the QP itself.
 * A server waits for its client until interrupted, as ibv_rc_pingpong and perftest do, unless --timeout is given;
 * every other wait (a client's connect, each exchange, each completion) is --timeout or {@link #DEFAULT}.
 */
final class PeerWaits {
    /** The wait for an answering peer without --timeout. */
    static final Duration DEFAULT = Duration.ofSeconds(30);

    /** The --timeout text; perf adds what its passive server does. */
    static final String TIMEOUT_HELP = "Longest wait for the peer: a client's TCP connect, each exchange, each completion; "
            + "seconds, or e.g. 500ms (default: 30). A server waits for its client until interrupted, as the C tools do, "
            + "unless --timeout is given.";

    @Option(names = "--timeout", paramLabel = "SECONDS", converter = Converters.Time.class, description = TIMEOUT_HELP)
    Duration given;

    /** The wait for an answering peer: --timeout, else {@link #DEFAULT}. Set by {@link #check}. */
    Duration timeout = DEFAULT;

    @Option(names = "--qp-timeout", paramLabel = "EXP", defaultValue = "18", description = "Local ACK timeout of our QP, 4.096 us * 2^EXP, "
            + "retried 7 times (default: ${DEFAULT-VALUE}, about 1 s; ibv_rc_pingpong and perftest use 14, 67 ms, which a JVM pausing "
            + "under load can miss). Invisible to the peer.")
    int qpTimeout;

    /** Both in range, or a one-line usage error. */
    void check(CommandSpec spec) {
        if (given != null && (given.isZero() || given.compareTo(Duration.ofDays(1)) > 0)) {
            throw new ParameterException(spec.commandLine(), "invalid --timeout " + Converters.seconds(given) + ": must be >0 and <= 86400 s");
        }
        timeout = given != null ? given : DEFAULT;
        if (qpTimeout < 1 || qpTimeout > 31) throw new ParameterException(spec.commandLine(), "invalid --qp-timeout " + qpTimeout + ": must be 1..31");
    }

    /** How long a server waits for its client: --timeout, or null (until interrupted) without it. */
    Duration clientWait() {
        return given;
    }

    /** A wait that ran out, as the user sees it: naming the option that sets it. */
    IOException named(PeerTimeout e) {
        return new IOException(e.getMessage() + " (--timeout " + Converters.seconds(timeout) + (given == null ? ", the default" : "") + ")", e);
    }
}
