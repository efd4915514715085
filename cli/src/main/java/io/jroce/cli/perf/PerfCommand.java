package io.jroce.cli.perf;

import io.jroce.cli.Converters;
import io.jroce.cli.DeviceOptions;
import io.jroce.cli.OptionHelp;
import io.jroce.endpoint.AgentMode;
import io.jroce.cli.metrics.MetricsExport;
import io.jroce.cli.conn.LocalAddress;
import io.jroce.cli.conn.PeerTimeout;
import io.jroce.cli.conn.PerftestHandshake;
import io.jroce.cli.conn.PerftestHandshake.Test;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.DeviceConfig;
import io.jroce.endpoint.Mtu;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.net.InetAddress;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code jroce perf send|write|read|atomic [HOST]}: perftest's ib_send_bw, ib_write_bw, ib_read_bw and
 * ib_atomic_bw (and with {@code --lat} the {@code _lat} tools), interoperable with them through
 * {@link PerftestHandshake}. Defaults follow perftest: size 65536 (bandwidth) or 2 (latency; 8 for atomics),
 * iterations 5000 for write bandwidth and 1000 otherwise, MTU the smaller of both sides' (ours: the
 * interface MTU of --bind minus 80 bytes, as rxe computes it).
 */
@Command(name = "perf",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "perftest-compatible bandwidth (default) or latency (--lat) test over RC: TEST is send, write, read or atomic. "
                    + "Without HOST: server (waits for one client on TCP -p); with HOST: client.",
            "Interoperates with ib_send_bw, ib_write_bw, ib_read_bw, ib_atomic_bw and their _lat variants; "
                    + "peers on rxe need '-x <index of their RoCEv2 GID of our IP version>' (e.g. -x 1 for IPv4).",
            "Exit status: 0 on success, 1 on a failure at run time (the peer did not answer within --timeout, a completion error), "
                    + "2 on bad usage or an argument that cannot be used (an address not of this machine, a port in use, a file that cannot be written)."
        })
public final class PerfCommand implements Callable<Integer>, OptionHelp {
    enum Verb { SEND, WRITE, READ, ATOMIC }

    /** Most QPs of one run (each has its buffers, at most 2 GiB in all, and its line in the exchange). */
    static final int MAX_QPS = 16384;
    /** --warmup of a test without --pcap or --chaos: the most it waits for the JIT to go idle. */
    static final Duration DEFAULT_WARMUP = Duration.ofSeconds(3);
    /** Most messages a QP keeps posted: perftest's limit of -t. */
    static final int MAX_TX_DEPTH = 15000;

    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "TEST", converter = VerbConverter.class, description = "send, write, read or atomic.")
    Verb verb;

    @Parameters(index = "1", arity = "0..1", paramLabel = "HOST", description = "Server to connect to (client mode). Without it: server mode.")
    String host;

    @Option(names = "--jroce-extensions", paramLabel = "LIST", defaultValue = "none",
            description = "jroce-to-jroce transport extensions: none (default, plain IBA Go-Back-N), sr (selective "
                    + "retransmission), cc (congestion control), all. The perftest exchange cannot negotiate them, so give "
                    + "the same value on both sides, and only when both are jroce: an rdma_rxe, NIC or perftest peer would "
                    + "misread the SACKs. With -R they are negotiated in the CM's private data instead: the client offers "
                    + "them, a jroce server given the option too answers with what both name, any other peer with none.")
    String jroceExtensions;

    @Option(names = "--lat", description = "Latency test (ib_*_lat) instead of bandwidth (ib_*_bw).")
    boolean lat;

    @Option(names = {"-s", "--size"}, paramLabel = "BYTES", converter = Converters.Size.class,
            description = "Message size, e.g. 65536 or 64k (default: 65536 for bandwidth, 2 for latency, 8 for atomics).")
    Long size;

    @Option(names = {"-n", "--iters"}, paramLabel = "N", description = "Iterations (default: 5000 for write bandwidth, else 1000).")
    Long iters;

    @Option(names = {"-D", "--duration"}, paramLabel = "SECONDS", converter = Converters.Time.class,
            description = "Run for this long (seconds, or e.g. 500ms) instead of a number of iterations.")
    Duration duration;

    @Option(names = {"-f", "--margin"}, paramLabel = "SECONDS", converter = Converters.Time.class,
            description = "With -D: the time left out of the figures at the start and at the end of the run, as perftest's "
                    + "--margin (default: a quarter of -D, in whole seconds; 0 counts the whole run). What completes in "
                    + "between is reported over that window's length.")
    Duration margin;

    @Option(names = {"-q", "--qp"}, paramLabel = "N", defaultValue = "1", description = "Number of QPs (default: ${DEFAULT-VALUE}).")
    int qpCount;

    @Option(names = {"-t", "--tx-depth"}, paramLabel = "N", description = "Messages each QP of a bandwidth test keeps posted "
            + "(default: 128), as perftest's -t. Lower it for many QPs: when -D ends, what is still posted (QPs x N messages) "
            + "is sent before the run closes.")
    Integer txDepth;

    @Option(names = {"-A", "--atomic_type"}, paramLabel = "TYPE", description = "Atomic operation of an atomic test: FETCH_AND_ADD (default) or CMP_AND_SWAP, as perftest's -A.")
    PerfRun.AtomicType atomicType;

    @Option(names = {"-p", "--port"}, paramLabel = "PORT", defaultValue = "18515", description = "TCP port of the exchange (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = {"-x", "--gid-index"}, paramLabel = "INDEX", description = "Local GID index; ours has one entry, 0 (the --bind address).")
    Integer gidIndex;

    @Option(names = {"-R", "--rdma_cm"}, description = "Connect through the RDMA connection manager, as perftest's -R: the exchange "
            + "runs over an RC QP connected to rdma_cm port -p, and each test QP gets its own rdma_cm connection to that port.")
    boolean rdmaCm;

    @Option(names = "--json", description = "Print one JSON object with the results instead of perftest's tables.")
    boolean json;

    @Option(names = {"-a", "--all"}, description = "Run every size from 2 to 2^23 bytes (8 MiB) in turn, a row each, as perftest's "
            + "-a (write and read bandwidth; give -a on both sides, so that the server's buffer holds the largest). Excludes -s and -D.")
    boolean allSizes;

    @Option(names = "--progress", paramLabel = "INTERVAL", converter = Converters.Time.class,
            description = "Print the progress line on stderr every INTERVAL (seconds, or e.g. 200ms) from the start of the run "
                    + "(default: every second from the run's third second, for runs longer than 2 s).")
    Duration progress;

    @Option(names = "--warmup", paramLabel = "SECONDS", converter = Converters.Time.class,
            description = "Once the test's QPs are connected and before the exchange starts, run the test's own loop between "
                    + "private QPs of this device (a latency test: one message in flight between two; a bandwidth test: as many "
                    + "pairs as the test has QPs, at most 16, with the test's depth and cq_mod) until the JVM's "
                    + "JIT compiler has been idle for 0.3 s, for at most SECONDS (default: "
                    + "3, or 0 with --pcap or --chaos; 0 turns it off; none with -R, whose connection manager must "
                    + "answer the peer at once). A fresh JVM otherwise spends the first thousands "
                    + "of messages interpreted and its first seconds compiling. Not counted in the results; no packet leaves the host "
                    + "and the peer, waiting to start, sees nothing of it (perftest has no such phase: C needs none).")
    Duration warmup;

    @Option(names = "--report_gbits", description = "Report bandwidth in Gb/sec (10^9 bits) instead of MB/sec (2^20 bytes), as perftest's --report_gbits.")
    boolean reportGbits;

    @Option(names = {"-F", "--CPU-freq"}, description = "Accepted for perftest command lines and does nothing: jroce measures time "
            + "with the JVM's nanosecond clock, not CPU cycles, so the CPU frequency does not change its results.")
    boolean cpuFreq;

    @Mixin
    IbDevice ibDevice = new IbDevice();

    @Mixin
    io.jroce.cli.Verbosity verbosity = new io.jroce.cli.Verbosity();

    @Mixin
    PeerWaits waits = new PeerWaits();

    @Mixin
    DeviceOptions device = new DeviceOptions();

    @Mixin
    OobOptions oob = new OobOptions();


    @Override
    public Map<String, String> optionHelp() {
        return Map.of(
                "--bind", DeviceOptions.BIND_HELP + OobOptions.BIND_HELP,
                "--mtu", DeviceOptions.MTU_HELP + " Default: the interface's MTU less the RoCE headers (as rdma_rxe takes it); "
                        + "the smaller of both sides' is used.",
                "--tail-probe", DeviceOptions.TAIL_PROBE_HELP + DeviceOptions.TAIL_PROBE_OFF,
                "--timeout", PeerWaits.TIMEOUT_HELP + " A passive server (write, read and atomic bandwidth) waits as long as traffic flows.",
                "--agent", DeviceOptions.AGENT_HELP + " Default: invoked where this side polls (every latency run, every client, a SEND "
                        + "server), dedicated for the passive server of write, read and atomic bandwidth, which polls nothing.",
                "--busy-poll", DeviceOptions.BUSY_POLL_HELP + " Default with --lat: " + DeviceOptions.BUSY_POLL_LATENCY
                        + ". Default without --lat: 0 (off).");
    }

    /** One-line error for an unknown TEST. */
    static final class VerbConverter implements CommandLine.ITypeConverter<Verb> {
        @Override
        public Verb convert(String value) {
            try {
                return Verb.valueOf(value.toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException("unknown test '" + value + "': one of send, write, read, atomic");
            }
        }
    }

    /** Parses --jroce-extensions. */
    private int extensions(String list) {
        try {
            return Converters.jroceExtensions(list);
        } catch (IllegalArgumentException e) {
            usage(e.getMessage());
            return 0;
        }
    }

    @Override
    public Integer call() throws Exception {
        verbosity.apply();
        Test test = switch (verb) {
            case SEND -> lat ? Test.SEND_LAT : Test.SEND_BW;
            case WRITE -> lat ? Test.WRITE_LAT : Test.WRITE_BW;
            case READ -> lat ? Test.READ_LAT : Test.READ_BW;
            case ATOMIC -> lat ? Test.ATOMIC_LAT : Test.ATOMIC_BW;
        };
        if (allSizes) {
            if (lat || (verb != Verb.WRITE && verb != Verb.READ)) usage("-a/--all applies to write and read bandwidth tests");
            if (size != null) usage("-a/--all and -s/--size exclude each other");
            if (duration != null) usage("-a/--all and -D/--duration exclude each other");
            if (json) usage("-a/--all prints a row per size; --json reports one size");
        }
        long sz = allSizes ? PerfRun.ALL_SIZES_MAX : size != null ? size : verb == Verb.ATOMIC ? 8 : lat ? 2 : 65536;
        if (verb == Verb.ATOMIC && sz != 8) usage("atomic tests use 8-byte messages; -s/--size cannot be changed (perftest: 'Message size cannot be changed for Atomic tests')");
        if (atomicType != null && verb != Verb.ATOMIC) usage("-A/--atomic_type applies to atomic tests only");
        if (sz < 1 || sz > (1 << 29)) usage("invalid -s/--size " + sz + ": must be 1..536870912");
        if (progress != null && (progress.toMillis() < 10 || progress.compareTo(Duration.ofHours(1)) > 0)) {
            usage("invalid --progress " + Converters.seconds(progress) + ": must be between 10 ms and 3600 seconds");
        }
        if (warmup != null && rdmaCm && !warmup.isZero()) {
            usage("--warmup does not apply with -R/--rdma_cm: its connection manager must answer the peer at once, so the test runs without a warm-up");
        }
        if (warmup != null && (warmup.isNegative() || warmup.compareTo(Duration.ofSeconds(60)) > 0)) {
            usage("invalid --warmup " + Converters.seconds(warmup) + ": must be 0..60 seconds");
        }
        if (iters != null && duration != null) usage("-n/--iters and -D/--duration exclude each other");
        long it = iters != null ? iters : (test == Test.WRITE_BW ? 5000 : 1000);
        if (iters != null && (it < 1 || it > 100_000_000L)) usage("invalid -n/--iters " + it + ": must be 1..100000000");
        if (lat && duration == null && it < 5) usage("invalid -n/--iters " + it + ": a latency test needs at least 5 iterations");
        if (duration != null && (duration.isZero() || duration.compareTo(Duration.ofDays(1)) > 0)) {
            usage("invalid -D/--duration " + Converters.seconds(duration) + ": must be >0 and <= 86400 seconds");
        }
        if (margin != null && duration == null) usage("-f/--margin applies to a timed run (-D/--duration)");
        if (duration != null) {
            Duration m = SampleWindow.margin(duration, margin);
            if (margin != null && margin.isNegative()) usage("invalid -f/--margin " + Converters.seconds(margin) + ": must be 0 or more");
            if (duration.compareTo(m.multipliedBy(2)) <= 0) {
                usage("-D/--duration " + Converters.seconds(duration) + " must be longer than twice -f/--margin " + Converters.seconds(m));
            }
        }
        if (qpCount < 1 || qpCount > MAX_QPS) usage("invalid -q/--qp " + qpCount + ": must be 1.." + MAX_QPS);
        if (txDepth != null && (txDepth < 1 || txDepth > MAX_TX_DEPTH)) usage("invalid -t/--tx-depth " + txDepth + ": must be 1.." + MAX_TX_DEPTH);
        if (txDepth != null && lat) usage("-t/--tx-depth is for bandwidth tests: a latency test keeps one message in flight");
        if (lat && qpCount != 1) usage("latency tests use one QP (-q 1)");
        if (port < 1 || port > 65535) usage("invalid -p/--port " + port + ": must be 1..65535");
        if (gidIndex != null && gidIndex != 0) {
            usage("invalid -x/--gid-index " + gidIndex + ": our GID table has one entry, index 0 (the --bind address); "
                    + "the peer's -x (1 on rxe) is its own index");
        }
        waits.check(spec);
        ibDevice.check(spec);
        long total = 2 * Math.max(sz, PerftestHandshake.DEFAULT_CYCLE_BUFFER) * qpCount;
        if (total > (1L << 31)) usage("-s/--size times -q/--qp needs " + total + " bytes of buffers; at most 2 GiB");
        InetAddress peerHost = host == null ? null : DeviceOptions.address(spec, host, "HOST");
        InetAddress local = device.bind(spec);
        if (local == null) {
            if (peerHost == null) usage("a server needs --bind ADDR (the local IPv4 or IPv6 address of its RoCE device)");
            local = DeviceOptions.sourceTowards(spec, peerHost, "HOST", "--bind");
        }
        if (peerHost != null) peerHost = oob.host(spec, local, peerHost);
        DeviceOptions.checkLocal(spec, local);
        if (peerHost == null && !rdmaCm) oob.checkListen(spec, local, port);
        ibDevice.note(spec.commandLine().getErr(), "perf", local);
        Mtu m = device.mtu(null);
        if (m == null) m = LocalAddress.activeMtu(local);
        int ext = extensions(jroceExtensions);
        // the side that polls runs the device itself: a latency run, a client, a SEND server (it polls for its
        // receives); a passive server (WRITE, READ and atomic bandwidth) polls nothing, so a thread of its own runs it
        AgentMode defaultAgent = lat || peerHost != null || test == Test.SEND_BW ? AgentMode.INVOKED : AgentMode.DEDICATED;
        DeviceConfig config = device.config(spec, local, defaultAgent);
        if (lat) device.forLatency(config);
        try (Device dev = DeviceOptions.open(spec, config);
             MetricsExport exported = device.exportMetrics(spec, dev);
             PerfCm cm = rdmaCm ? new CmPerfCm(dev, m, peerHost, port, waits.timeout, ext).waitingForClient(waits.clientWait()) : null) {
            PerfRun.Settings settings = new PerfRun.Settings(test, peerHost, local, oob.local(spec), port, sz, it, duration, m, qpCount, waits.timeout,
                    json, waits.qpTimeout, atomicType != null ? atomicType : PerfRun.AtomicType.FETCH_AND_ADD, ext, cm,
                    waits.clientWait());
            try {
                int rc;
                try {
                    rc = PerfRun.of(settings, dev, spec.commandLine().getOut(), spec.commandLine().getErr()).reportGbits(reportGbits).txDepth(txDepth).margin(margin).allSizes(allSizes).progressEvery(progress)
                            .warmup(warmup != null ? warmup
                                    : device.pcapGiven() || device.chaosGiven() ? Duration.ZERO : DEFAULT_WARMUP).run();
                } catch (PeerTimeout e) {
                    throw waits.named(e);
                } catch (java.net.BindException e) {
                    throw new ParameterException(spec.commandLine(), e.getMessage(), e); // -p in use, as a bad argument
                }
                device.report(spec.commandLine().getErr(), dev);
                return rc;
            } finally {
                device.printCounters(spec.commandLine().getErr(), dev);
            }
        }
    }


    private void usage(String message) {
        throw new ParameterException(spec.commandLine(), message);
    }

}
