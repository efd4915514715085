package io.jroce.cli.soak;

import io.jroce.cli.Converters;
import io.jroce.cli.DeviceOptions;
import io.jroce.cli.OptionHelp;
import io.jroce.cli.Verbosity;
import io.jroce.cli.conn.LocalAddress;
import io.jroce.cli.conn.PeerTimeout;
import io.jroce.cli.metrics.MetricsExport;
import io.jroce.endpoint.AgentMode;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.Mtu;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.net.InetAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;

/**
 * {@code jroce soak [HOST]}: a long run between two jroce devices that checks every byte. Without HOST the server,
 * which waits for one client on TCP -p; with HOST the client, which drives the traffic, prints a row of figures
 * every --interval and judges the run at the end ({@link SoakRun}).
 */
@Command(name = "soak",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "A long run between two jroce devices that verifies every byte: on each of -q RC QPs, rounds of RDMA WRITE, SEND and "
                    + "FETCH_AND_ADD from the client, a SEND back from the server and an RDMA READ, with up to --depth rounds in flight. "
                    + "Each message holds a pattern of the seed, the QP, the operation and the round, checked where it lands; each "
                    + "FETCH_AND_ADD must return its round's number. Without HOST: server (waits for one client on TCP -p); with HOST: "
                    + "client, which prints a row every --interval (messages and MiB verified, retransmissions, RSS and heap after a "
                    + "full GC of both processes, failures) and a verdict at the end.",
            "Add loss and reordering with --chaos on either side or both, e.g. --chaos out.drop=0.01,out.reorder=0.01.",
            "Exit status: 0 when nothing was lost, duplicated or corrupted, no QP went to error and (client) RSS and heap after GC "
                    + "grew at most --max-growth percent from minute 2 to the end; 1 otherwise or on a failure at run time; 2 on bad "
                    + "usage or an argument that cannot be used."
        })
public final class SoakCommand implements Callable<Integer>, OptionHelp {
    /** TCP port of the exchange unless -p. */
    static final int DEFAULT_PORT = 18515;

    @Spec
    CommandSpec spec;

    @Parameters(index = "0", arity = "0..1", paramLabel = "HOST", description = "Server to connect to (client mode). Without it: server mode.")
    String host;

    @Option(names = {"-p", "--port"}, paramLabel = "PORT", defaultValue = "18515", description = "TCP port of the exchange (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = {"-q", "--qp"}, paramLabel = "N", defaultValue = "64", description = "Number of RC QPs, 1..256 (client; default: ${DEFAULT-VALUE}).")
    int qps;

    @Option(names = {"-D", "--duration"}, paramLabel = "TIME", converter = Converters.Time.class, defaultValue = "10m",
            description = "How long the traffic runs (client), e.g. 10m, 90s (default: ${DEFAULT-VALUE}); then every round in flight is "
                    + "completed and the run judged.")
    Duration duration;

    @Option(names = "--interval", paramLabel = "TIME", converter = Converters.Time.class, defaultValue = "60s",
            description = "Time between two rows of figures (client; default: ${DEFAULT-VALUE}); each row costs each process a full GC.")
    Duration interval;

    @Option(names = {"-s", "--size"}, paramLabel = "BYTES", converter = Converters.Size.class, defaultValue = "64k",
            description = "Largest SEND, WRITE and READ, a multiple of 8 from 8 to 16m (client; default: ${DEFAULT-VALUE}); lengths are "
                    + "spread log-uniformly from 1 byte up to it. Replies go up to 4k.")
    long maxLen;

    @Option(names = "--depth", paramLabel = "N", defaultValue = "2", description = "Rounds in flight per QP, 1..8 (client; default: "
            + "${DEFAULT-VALUE}).")
    int depth;

    @Option(names = "--seed", paramLabel = "N", description = "Seed of the message patterns (client; default: random, printed).")
    Long seed;

    @Option(names = "--jroce-extensions", paramLabel = "LIST", defaultValue = "none", description = "jroce-to-jroce transport "
            + "extensions on every QP: none (default, plain IBA Go-Back-N), sr (selective retransmission), cc (congestion control), "
            + "all. Given to the client, which tells the server.")
    String extensions;

    @Option(names = "--max-growth", paramLabel = "PERCENT", defaultValue = "10", description = "Largest growth of each process's RSS "
            + "and heap after GC from the first row at or after minute 2 to the last row (client; default: ${DEFAULT-VALUE}); the heap "
            + "may always grow by 4 MiB. Runs without a row after minute 2 are not judged on memory.")
    double maxGrowth;

    @Option(names = "--qp-timeout", paramLabel = "EXP", defaultValue = "18", description = "Local ACK timeout of our QPs, 4.096 us * "
            + "2^EXP, retried 7 times (default: ${DEFAULT-VALUE}, about 1 s, so a full GC does not exhaust the retries).")
    int qpTimeout;

    @Option(names = "--timeout", paramLabel = "SECONDS", converter = Converters.Time.class, description = "Longest wait for the peer: "
            + "the TCP connect, each exchange, the completion of the rounds in flight at the end; seconds, or e.g. 500ms (default: 30). "
            + "A server waits for its client until interrupted unless --timeout is given.")
    Duration timeoutGiven;

    @Mixin
    Verbosity verbosity = new Verbosity();

    @Mixin
    DeviceOptions device = new DeviceOptions();

    @Override
    public Map<String, String> optionHelp() {
        return Map.of(
                "--bind", DeviceOptions.BIND_HELP + " Required for a server; a client without it takes the address the route towards "
                        + "HOST leaves from. A server listens for the TCP exchange on the same address.",
                "--mtu", DeviceOptions.MTU_HELP + " Default: the interface's MTU less the RoCE headers; the smaller of both sides' is used.",
                "--tail-probe", DeviceOptions.TAIL_PROBE_HELP + " Default: 1000, since the peer is always jroce.",
                "--agent", DeviceOptions.AGENT_HELP + " Default: dedicated.");
    }

    /** Null when the run's shape is possible; else why not (shared with the server's check of a client's request). */
    static String checkShape(int qps, int depth, long maxLen) {
        if (qps < 1 || qps > 256) return "-q/--qp " + qps + ": must be 1..256";
        if (depth < 1 || depth > 8) return "--depth " + depth + ": must be 1..8 (a QP has at most 16 READs and atomics outstanding)";
        if (maxLen < 8 || maxLen > (16 << 20) || maxLen % 8 != 0) return "-s/--size " + maxLen + ": must be a multiple of 8 from 8 to 16m";
        long total = SoakLayout.bytes(depth, maxLen, Math.min(maxLen, SoakRun.MAX_REPLY)) * qps;
        if (total > (4L << 30)) return "-q/--qp, --depth and -s/--size need " + total + " bytes of regions per side; at most 4 GiB";
        return null;
    }

    @Override
    public Integer call() throws Exception {
        verbosity.apply();
        String bad = checkShape(qps, depth, maxLen);
        if (bad != null) usage(bad);
        if (port < 1 || port > 65535) usage("invalid -p/--port " + port + ": must be 1..65535");
        if (duration.isZero() || duration.compareTo(Duration.ofDays(7)) > 0) usage("invalid -D/--duration " + Converters.seconds(duration) + ": must be >0 and <= 7 days");
        if (interval.compareTo(Duration.ofMillis(100)) < 0 || interval.compareTo(Duration.ofDays(1)) > 0) {
            usage("invalid --interval " + Converters.seconds(interval) + ": must be 100ms..1 day");
        }
        if (!(maxGrowth >= 0) || maxGrowth > 1000) usage("invalid --max-growth " + maxGrowth + ": must be 0..1000");
        if (qpTimeout < 1 || qpTimeout > 31) usage("invalid --qp-timeout " + qpTimeout + ": must be 1..31");
        if (timeoutGiven != null && (timeoutGiven.isZero() || timeoutGiven.compareTo(Duration.ofDays(1)) > 0)) {
            usage("invalid --timeout " + Converters.seconds(timeoutGiven) + ": must be >0 and <= 86400 s");
        }
        int ext;
        try {
            ext = Converters.jroceExtensions(extensions);
        } catch (IllegalArgumentException e) {
            usage("--jroce-extensions: " + e.getMessage());
            return 2;
        }
        Duration timeout = timeoutGiven != null ? timeoutGiven : Duration.ofSeconds(30);
        InetAddress peer = host == null ? null : DeviceOptions.address(spec, host, "HOST");
        InetAddress local = device.bind(spec);
        if (local == null) {
            if (peer == null) usage("a server needs --bind ADDR (the local IPv4 or IPv6 address of its RoCE device)");
            local = DeviceOptions.sourceTowards(spec, peer, "HOST", "--bind");
        }
        if (peer != null) peer = DeviceOptions.peerFor(spec, local, peer, "HOST");
        DeviceOptions.checkLocal(spec, local);
        Mtu mtu = device.mtu(null);
        if (mtu == null) mtu = LocalAddress.activeMtu(local);
        long runSeed = seed != null ? seed : ThreadLocalRandom.current().nextLong();
        SoakRun.Settings s = new SoakRun.Settings(peer, port, qps, duration, interval, (int) maxLen, depth, runSeed, ext, maxGrowth, qpTimeout,
                timeout, timeoutGiven, mtu);
        var err = spec.commandLine().getErr();
        var out = spec.commandLine().getOut();
        try (Device dev = DeviceOptions.open(spec, device.config(spec, local, AgentMode.DEDICATED, 1000));
             MetricsExport exported = device.exportMetrics(spec, dev)) {
            try {
                int rc = peer == null ? SoakRun.server(dev, local, s, out, err) : SoakRun.client(dev, s, out, err);
                device.report(err, dev);
                return rc;
            } catch (PeerTimeout e) {
                throw new IOException(e.getMessage() + " (--timeout " + Converters.seconds(timeout) + (timeoutGiven == null ? ", the default" : "") + ")", e);
            } catch (java.net.BindException e) {
                throw new ParameterException(spec.commandLine(), e.getMessage(), e); // -p in use, as a bad argument
            } finally {
                out.flush();
                device.printCounters(err, dev);
            }
        }
    }

    private void usage(String message) {
        throw new ParameterException(spec.commandLine(), message);
    }
}
