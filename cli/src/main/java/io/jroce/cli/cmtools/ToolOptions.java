package io.jroce.cli.cmtools;

import io.jroce.cli.Converters;
import io.jroce.cli.DeviceOptions;
import io.jroce.cli.conn.LocalAddress;
import io.jroce.cli.metrics.MetricsExport;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.Mtu;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;

/**
 * The options both connection-manager test tools share, named as in librdmacm's examples (-s, -b, -c, -C, -S, -f,
 * -t), how they turn into our device's address and the peer's, and the run of either tool on our device.
 */
public final class ToolOptions {
    /** At most this many connections: each has its own queue pair, completion queues and buffers. */
    static final int MAX_CONNECTIONS = 1024;
    /** At most this many messages each way per connection: one work request each, all posted at once. */
    static final int MAX_COUNT = 65536;

    @Option(names = "-s", paramLabel = "SERVER", description = "Client: the server's address. Without -s this side is the server.")
    String server;

    @Option(names = "-b", paramLabel = "ADDR", description = "Our device's address (the same as --bind): a server listens there (it "
            + "needs -b or --bind); a client sends from there (default: the address the route towards -s leaves from).")
    String bind;

    @Option(names = "-c", paramLabel = "N", defaultValue = "1", description = "Connections, 1.." + MAX_CONNECTIONS
            + " (default: ${DEFAULT-VALUE}): a client opens that many at once; a server waits for that many, then moves on.")
    int connections;

    @Option(names = "-C", paramLabel = "COUNT", defaultValue = "10", description = "Messages each way on every connection, 0.."
            + MAX_COUNT + " (default: ${DEFAULT-VALUE}; 0: the connections only, no messages).")
    int count;

    @Option(names = "-S", paramLabel = "SIZE", defaultValue = "100", converter = Converters.Size.class,
            description = "Message size in bytes, e.g. 100 or 4k (default: ${DEFAULT-VALUE}; 0 sends no messages).")
    long size;

    @Option(names = "-f", paramLabel = "FORMAT", description = "Address format: ip or name (both accepted: an address is "
            + "taken as written, a name is resolved); gid is not offered.")
    String format;

    @Option(names = "-t", paramLabel = "TOS", description = "Type of service: only 0 (our device sends traffic class 0, "
            + "the default).")
    String tos;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "0", converter = Converters.Time.class,
            description = "Give up when a phase makes no progress for this long: the connections coming up, a completion, the "
                    + "disconnect; seconds, or e.g. 500ms. Default 0: a server waits for its clients as long as it takes and a "
                    + "client until the connection manager's retries run out (as the C tools do); the phases after that give up "
                    + "after " + 60 + " s without progress.")
    Duration timeout;

    /** How long the phases after the connections wait without progress when --timeout is 0. */
    static final Duration DEFAULT_IDLE = Duration.ofSeconds(60);

    boolean isClient() {
        return server != null;
    }

    /** The wait for the connections: --timeout, or null (none) with 0. */
    Duration connectWait() {
        return timeout.isZero() ? null : timeout;
    }

    /** The wait without progress in every later phase. */
    Duration idle() {
        return timeout.isZero() ? DEFAULT_IDLE : timeout;
    }

    /** Checks what picocli cannot: the ranges and the options only partly offered. */
    void check(CommandSpec spec) {
        if (connections < 1 || connections > MAX_CONNECTIONS) usage(spec, "invalid -c " + connections + ": must be 1.." + MAX_CONNECTIONS);
        if (count < 0 || count > MAX_COUNT) usage(spec, "invalid -C " + count + ": must be 0.." + MAX_COUNT);
        if (size > Integer.MAX_VALUE) usage(spec, "invalid -S " + size + ": at most " + Integer.MAX_VALUE + " bytes");
        if (format != null) {
            String f = format.toLowerCase(Locale.ROOT);
            if (f.startsWith("gid")) usage(spec, "-f gid: InfiniBand GIDs as addresses are not offered; give an IP address");
            if (!f.startsWith("ip") && !f.startsWith("name")) usage(spec, "invalid -f " + format + ": ip or name");
        }
        if (tos != null) {
            long t;
            try {
                t = Long.decode(tos);
            } catch (NumberFormatException e) {
                t = -1;
            }
            if (t != 0) usage(spec, "-t " + tos + ": our device sends traffic class 0 only");
        }
        if (timeout.compareTo(Duration.ofDays(1)) > 0) usage(spec, "invalid --timeout " + Converters.seconds(timeout) + ": at most 86400 s");
    }

    /**
     * {@link #check(CommandSpec)}, then the tool's rdma_cm port (given as {@code portOption}) and -P, which must name
     * {@code space}, the one port space the tool offers ("tcp", "udp").
     */
    void check(CommandSpec spec, int port, String portOption, String portSpace, String space) {
        check(spec);
        if (port < 1 || port > 65535) usage(spec, "invalid " + portOption + " " + port + ": must be 1..65535");
        if (portSpace != null && !portSpace.toLowerCase(Locale.ROOT).startsWith(space)) {
            usage(spec, "-P " + portSpace + ": only the " + space.toUpperCase(Locale.ROOT) + " port space (" + space + ") is offered");
        }
    }

    /** The device options' help as both tools word it; {@code mtuDefault} says what --mtu defaults to. */
    static Map<String, String> deviceHelp(String mtuDefault) {
        return Map.of(
                "--bind", DeviceOptions.BIND_HELP + " The same as -b.",
                "--mtu", DeviceOptions.MTU_HELP + " Default: " + mtuDefault,
                "--tail-probe", DeviceOptions.TAIL_PROBE_HELP + DeviceOptions.TAIL_PROBE_OFF);
    }

    /** Messages each way per connection: none when -S is 0, as the C tools do. */
    int messages() {
        return size == 0 ? 0 : count;
    }

    /** Our device's address: -b or --bind (the same if both), else for a client the route's source towards the server. */
    InetAddress local(CommandSpec spec, DeviceOptions device, InetAddress peer) throws IOException {
        InetAddress local = device.bind(spec);
        String option = "--bind";
        if (bind != null) {
            InetAddress b = DeviceOptions.address(spec, bind, "-b");
            if (local != null && !local.equals(b)) usage(spec, "-b and --bind name different addresses");
            local = b;
            option = "-b";
        }
        if (local == null) {
            if (peer == null) usage(spec, "a server needs -b ADDR or --bind ADDR (the local address of its RoCE device)");
            local = DeviceOptions.sourceTowards(spec, peer, "-s", "-b");
        }
        DeviceOptions.checkLocal(spec, local, option);
        return local;
    }

    /** The server's address as our device at {@code local} reaches it (client only). */
    InetAddress peer(CommandSpec spec) {
        return server == null ? null : DeviceOptions.address(spec, server, "-s");
    }

    /** Our device's address, the server's as our device reaches it (client only), and the path MTU. */
    record Ends(InetAddress local, InetAddress peer, Mtu mtu) {
    }

    /** Where this side runs: {@link #local}, {@link #peer}, and --mtu or else the interface's active MTU. */
    Ends ends(CommandSpec spec, DeviceOptions device) throws IOException {
        InetAddress peer = peer(spec);
        InetAddress local = local(spec, device, peer);
        if (peer != null) peer = DeviceOptions.peerFor(spec, local, peer, "-s");
        Mtu mtu = device.mtu(null) != null ? device.mtu(null) : LocalAddress.activeMtu(local);
        return new Ends(local, peer, mtu);
    }

    /** How a tool makes its run (the run's constructor). */
    @FunctionalInterface
    interface RunFactory {
        ToolRun<?> create(Device dev, Mtu mtu, ToolOptions o, int port, InetAddress peer, PrintWriter out, PrintWriter err);
    }

    /**
     * Opens our device at {@code ends}, runs the tool's server or client (-s) on rdma_cm port {@code port}, then
     * reports the device and its counters on stderr; the run's exit status.
     */
    int run(CommandSpec spec, DeviceOptions device, Ends ends, int port, RunFactory tool) throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        try (Device dev = DeviceOptions.open(spec, device.config(spec, ends.local()).portMtu(ends.mtu()));
             MetricsExport exported = device.exportMetrics(spec, dev)) {
            try {
                ToolRun<?> run = tool.create(dev, ends.mtu(), this, port, ends.peer(), out, err);
                return isClient() ? run.client() : run.server();
            } finally {
                out.flush();
                device.report(err, dev);
                device.printCounters(err, dev);
            }
        }
    }

    static void usage(CommandSpec spec, String message) {
        throw new ParameterException(spec.commandLine(), message);
    }
}
