package io.jroce.cli.conform;

import io.jroce.cli.Converters;
import io.jroce.cli.DeviceOptions;
import io.jroce.cli.Main;
import io.jroce.cli.conn.LocalAddress;
import io.jroce.cli.conn.PerftestHandshake;
import io.jroce.endpoint.Gid;
import io.jroce.endpoint.Mtu;
import io.jroce.wire.IpText;
import io.jroce.wire.RoceV2;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import io.jroce.wire.pcap.PcapWriter;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * {@code jroce conform}: gets a QP on a RoCEv2 peer the way the peer offers one, sends it packets built byte by
 * byte from our own UDP socket, and judges each answer against the IBTA rules (and names where rdma_rxe implements
 * them). Exit 0 when no case departs, 1 when one does (or the run failed), 2 for bad usage.
 */
@Command(name = "conform",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Conformance test of a RoCEv2 peer: get a QP on it (--via), send it requests and responses built byte by byte "
                + "(valid ones, duplicates, PSN gaps, bad keys and lengths, corrupt headers, unsolicited responses, UD datagrams), "
                + "and judge each answer against the InfiniBand spec: conforms, departs, or cannot tell.",
            "Through the connection manager (--via rping, perftest-*-cm) the tester makes the connection itself with CM MADs on QP 1 and "
                + "also runs the cm group: how the REP answers the REQ, a lost RTU, a duplicate REQ, REQs to refuse, the MAD "
                + "layer's answers, SIDR, and the DREQs that end the connection.",
            "Exit status: 0 when no case departs, 1 when one does or the run fails (the peer cannot be reached), 2 on bad usage "
                    + "or an argument that cannot be used (an address not of this machine, a port in use, a file that cannot be written).",
        })
public final class ConformCommand implements Callable<Integer> {
    enum Via {
        JROCE("jroce"), PERFTEST_WRITE("perftest-write"), PERFTEST_READ("perftest-read"), PERFTEST_SEND("perftest-send"),
        PERFTEST_ATOMIC("perftest-atomic"), RC_PINGPONG("rc-pingpong"), RPING("rping", true),
        PERFTEST_WRITE_CM("perftest-write-cm", true), PERFTEST_READ_CM("perftest-read-cm", true), PERFTEST_SEND_CM("perftest-send-cm", true),
        PERFTEST_ATOMIC_CM("perftest-atomic-cm", true);

        final String name;
        /** The QP comes through the peer's connection manager: the cm cases run. */
        final boolean cm;

        Via(String name) {
            this(name, false);
        }

        Via(String name, boolean cm) {
            this.name = name;
            this.cm = cm;
        }

        static Via parse(String s) {
            for (Via v : values()) if (v.name.equals(s)) return v;
            return null;
        }

        static String names() {
            return String.join(", ", Arrays.stream(values()).map(v -> v.name).toList());
        }
    }

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "HOST", arity = "0..1", description = "The peer: where its out-of-band exchange or its connection manager "
            + "listens.")
    String host;

    @Option(names = "--via", paramLabel = "MODE", defaultValue = "jroce", description = "How the peer offers a QP: jroce (a jroce node "
            + "that listens with publish=), perftest-write, perftest-read, perftest-send, perftest-atomic (an ib_*_bw server without -R), "
            + "rc-pingpong (ibv_rc_pingpong -g N), rping (rping -s or jroce rping -s: the connection manager on rdma_cm's TCP port "
            + "space), perftest-write-cm, perftest-read-cm, perftest-send-cm, perftest-atomic-cm (an ib_*_bw server with -R: "
            + "the connection manager, then perftest's exchange over SEND/RECV). The cm group runs with rping and perftest-*-cm. "
            + "Default: ${DEFAULT-VALUE}.")
    String via;

    @Option(names = "--bind", paramLabel = "ADDR", description = "Our address: our UDP socket binds the RoCE port there and it is "
            + "our GID (default: the address the kernel routes towards HOST).")
    String bind;

    @Option(names = {"-p", "--port"}, paramLabel = "PORT", description = "TCP port of the exchange, or the rdma_cm port for --via "
            + "rping and perftest-*-cm (default: 18515, and rping's 7174 for --via rping).")
    Integer port;

    @Option(names = "--roce-port", paramLabel = "PORT", defaultValue = "" + RoceV2.UDP_PORT, description = "UDP port of RoCE on both sides "
            + "(default: ${DEFAULT-VALUE}).")
    int rocePort;

    @Option(names = {"-m", "--mtu"}, paramLabel = "BYTES", converter = Converters.PathMtu.class, defaultValue = "1024",
            description = "Path MTU: 256 .. 4096 (default: ${DEFAULT-VALUE}); the peer must use the same.")
    Mtu mtu;

    @Option(names = "--case-timeout", paramLabel = "TIME", converter = Converters.Time.class, defaultValue = "300ms",
            description = "How long each step waits for answers (default: ${DEFAULT-VALUE}); silence for this long is the answer 'none'.")
    Duration caseTimeout;

    @Option(names = "--connect-timeout", paramLabel = "TIME", converter = Converters.Time.class, defaultValue = "10s",
            description = "Bound on each out-of-band exchange (default: ${DEFAULT-VALUE}).")
    Duration connectTimeout;

    @Option(names = "--peer-gid", paramLabel = "ADDR", description = "The peer's RoCE address when it is not HOST (the exchange "
            + "on another address, e.g. perftest over IPv4 with an IPv6 GID): RoCE packets go only to HOST and this address.")
    String peerGid;

    @Option(names = "--region", paramLabel = "NAME", description = "jroce: the published region to use (default: the first one).")
    String region;

    @Option(names = "--ro-region", paramLabel = "NAME", description = "jroce: a published region without remote write, for the "
            + "access-not-granted case.")
    String roRegion;

    @Option(names = "--region-length", paramLabel = "BYTES", converter = Converters.Size.class, description = "perftest: the length of "
            + "the server's buffer, which its exchange does not carry (default: unknown; 4096 bytes are assumed inside it).")
    Long regionLength;

    @Option(names = "--reconnect", description = "Run each case that may leave the peer's QP in the error state on a fresh QP, by "
            + "running the exchange again (the peer must accept another client; see --restart-hook).")
    boolean reconnect;

    @Option(names = "--restart-hook", paramLabel = "CMD", description = "Shell command run before each reconnect (e.g. to start the "
            + "perftest server again); implies --reconnect.")
    String restartHook;

    @Option(names = "--only", paramLabel = "ID", split = ",", description = "Run only the cases whose id starts with one of these "
            + "(e.g. dup.,err.rkey).")
    List<String> only;

    @Option(names = "--list", description = "List the cases (id, group, section, rdma_rxe function) and exit.")
    boolean list;

    @Option(names = "--json", description = "One JSON object with every case instead of the table.")
    boolean json;

    @Option(names = "--junit", paramLabel = "FILE", description = "Also write the verdicts as JUnit XML (a departure is a failure, "
            + "a case that cannot tell is skipped).")
    Path junit;

    @Option(names = "--compare", paramLabel = "REF.json", description = "List the cases whose answer differs from a run recorded "
            + "with --json (e.g. one against rdma_rxe).")
    Path compare;

    @Option(names = "--pcap", paramLabel = "FILE", description = "Record every datagram the tester sends and receives to this pcap file.")
    Path pcap;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        List<Case> cases = Catalogue.all();
        if (only != null) {
            cases = cases.stream().filter(c -> only.stream().anyMatch(o -> c.id().startsWith(o))).toList();
            if (cases.isEmpty()) throw new ParameterException(spec.commandLine(), "--only " + String.join(",", only) + " selects no case (see --list)");
        }
        Via v = Via.parse(via);
        if (!list && v != null && !v.cm && only == null) {
            // most cm cases need a connection made through the peer's connection manager; other ways to a QP run only
            // those that need nothing but the peer's QP 1
            cases = cases.stream().filter(c -> !c.group().equals(Case.CM) || CmCases.CONNECTIONLESS.contains(c.id())).toList();
        }
        if (list) {
            for (Case c : cases) out.printf("%-26s %-17s %s%s | %s | %s%n", c.id(), c.group(), c.title(), c.fatal() ? " [may leave the QP in error]" : c.releases() ? " [ends the connection: runs last]" : "",
                    c.section(), c.rxe());
            out.flush();
            return 0;
        }
        if (v == null) throw new ParameterException(spec.commandLine(), "--via " + via + ": not one of " + Via.names());
        if (host == null) throw new ParameterException(spec.commandLine(), "missing HOST, the peer to test");
        int port = this.port != null ? this.port : v == Via.RPING ? RPING_PORT : PERFTEST_PORT;
        if (port < 1 || port > 65535) throw new ParameterException(spec.commandLine(), "--port must be 1..65535");
        if (rocePort < 1 || rocePort > 65535) throw new ParameterException(spec.commandLine(), "--roce-port must be 1..65535");
        if (caseTimeout.toMillis() < 10 || caseTimeout.toSeconds() > 60) throw new ParameterException(spec.commandLine(), "--case-timeout must be 10ms..60s");
        if ((region != null || roRegion != null) && v != Via.JROCE) throw new ParameterException(spec.commandLine(), "--region and --ro-region are for --via jroce");
        if (regionLength != null && !v.name.startsWith("perftest")) throw new ParameterException(spec.commandLine(), "--region-length is for --via perftest-*");
        Map<String, String> reference = null;
        if (compare != null) {
            try {
                reference = Reference.read(compare);
            } catch (IOException e) {
                throw new ParameterException(spec.commandLine(), "--compare: " + e.getMessage());
            }
        }
        InetAddress peer = DeviceOptions.address(spec, host, "HOST");
        InetAddress gidAddress = peerGid == null ? null : DeviceOptions.address(spec, peerGid, "--peer-gid");
        InetAddress local = bind != null ? DeviceOptions.address(spec, bind, "--bind") : LocalAddress.towards(peer);
        if (bind != null) DeviceOptions.checkLocal(spec, local);
        // the files the run writes: one that cannot be written is a usage error before any packet leaves
        if (junit != null && DeviceOptions.unwritable(junit) != null) {
            throw new ParameterException(spec.commandLine(), "--junit: " + DeviceOptions.unwritable(junit));
        }
        if (pcap != null && DeviceOptions.unwritable(pcap) != null) {
            throw new ParameterException(spec.commandLine(), "--pcap: " + DeviceOptions.unwritable(pcap));
        }
        InetAddress roce = gidAddress != null ? gidAddress : peer;
        HookCommand hook = restartHook == null ? null : new HookCommand(restartHook, connectTimeout);
        List<Case.Result> results;
        String stopped;
        String name;
        RawPort raw;
        try {
            raw = new RawPort(local, rocePort);
        } catch (IOException e) {
            // our RoCE port taken on that address: an argument that cannot be used, as in every other command
            if (String.valueOf(e.getMessage()).contains("in use")) {
                throw new ParameterException(spec.commandLine(), (bind != null ? "--bind: " : "") + DeviceOptions.rocePortInUse(local, rocePort)
                        + (bind != null ? "" : " with --bind"), e);
            }
            throw e;
        }
        try (raw;
             PcapWriter capture = pcap == null ? null : new PcapWriter(pcap)) {
            if (capture != null) raw.capture(capture);
            PeerLink link = switch (v) {
                case JROCE -> new JroceLink(peer, port, rocePort, connectTimeout, region, roRegion);
                case PERFTEST_WRITE -> new PerftestLink(peer, port, rocePort, connectTimeout, PerftestHandshake.Test.WRITE_BW, len());
                case PERFTEST_READ -> new PerftestLink(peer, port, rocePort, connectTimeout, PerftestHandshake.Test.READ_BW, len());
                case PERFTEST_SEND -> new PerftestLink(peer, port, rocePort, connectTimeout, PerftestHandshake.Test.SEND_BW, len());
                case PERFTEST_ATOMIC -> new PerftestLink(peer, port, rocePort, connectTimeout, PerftestHandshake.Test.ATOMIC_BW, len());
                case RC_PINGPONG -> new PingpongLink(peer, port, rocePort, connectTimeout);
                case RPING -> new CmLink(raw, peer, roce, port, rocePort, connectTimeout, caseTimeout.toNanos());
                case PERFTEST_WRITE_CM -> perftestCm(raw, peer, roce, port, PerftestHandshake.Test.WRITE_BW);
                case PERFTEST_READ_CM -> perftestCm(raw, peer, roce, port, PerftestHandshake.Test.READ_BW);
                case PERFTEST_SEND_CM -> perftestCm(raw, peer, roce, port, PerftestHandshake.Test.SEND_BW);
                case PERFTEST_ATOMIC_CM -> perftestCm(raw, peer, roce, port, PerftestHandshake.Test.ATOMIC_BW);
            };
            name = link.describe() + " from " + IpText.of(local);
            try {
                ConformRun run = new ConformRun(link, raw, Gid.of(local), mtu.bytes(), caseTimeout.toNanos(), connectTimeout.toNanos(),
                        reconnect || hook != null, hook, json ? null : out);
                run.allowed.add(peer);
                if (gidAddress != null) run.allowed.add(gidAddress);
                results = run.run(cases);
                stopped = run.stopped;
            } finally {
                link.close(); // while our port is open: the connection manager's DREQ goes through it
            }
            if (raw.captureFailed() != null) spec.commandLine().getErr().println("conform: --pcap stopped early: " + raw.captureFailed());
        }
        List<Reference.Difference> diffs = reference == null ? null : Reference.differences(results, reference);
        if (json) out.println(ConformReport.json(name, results, compare == null ? null : compare.toString(), diffs));
        else {
            ConformReport.table(out, name, results);
            if (diffs != null) ConformReport.differences(out, compare.toString(), diffs);
        }
        if (junit != null) JunitReport.write(junit, name, results);
        out.flush();
        if (stopped != null) {
            spec.commandLine().getErr().println("conform: " + stopped);
            spec.commandLine().getErr().flush();
        }
        return ConformReport.count(results, Case.Verdict.DEPARTS) > 0 ? Main.EXIT_FAILURE : 0;
    }

    /** rping's default port (rping.c). */
    static final int RPING_PORT = 7174;
    /** perftest's default port. */
    static final int PERFTEST_PORT = 18515;

    private PeerLink perftestCm(RawPort raw, InetAddress peer, InetAddress roce, int port, PerftestHandshake.Test test) {
        return new PerftestCmLink(raw, peer, roce, port, rocePort, connectTimeout, test, len(), caseTimeout.toNanos());
    }

    private long len() {
        return regionLength == null ? 0 : regionLength;
    }
}
