package io.jroce.cli.rping;

import io.jroce.cli.Converters;
import io.jroce.cli.DeviceOptions;
import io.jroce.cli.HelpOptions;
import io.jroce.cli.Main;
import io.jroce.cli.OptionHelp;
import io.jroce.cli.conn.CmAgents;
import io.jroce.cli.conn.LocalAddress;
import io.jroce.cli.metrics.MetricsExport;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.JroceExtensions;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.cm.CmConnParam;
import io.jroce.endpoint.cm.CmEvent;
import io.jroce.endpoint.cm.CmId;
import io.jroce.wire.IpText;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code jroce rping -s|-c}: rdma-core's {@code rping} (librdmacm/examples/rping.c), interoperable with it. The
 * connection goes through the connection manager ({@link CmSide}); the data protocol is {@link RpingSession}.
 */
@Command(name = "rping",
        versionProvider = Main.Version.class,
        sortOptions = false,
        description = {
            "rping over the RDMA connection manager: -s waits for one client on -p, -c connects to -a. Each ping: the client "
                    + "advertises a buffer, the server RDMA READs it and RDMA WRITEs it back into a second one.",
            "Interoperates with rdma-core's rping (rping -s / rping -c -a ADDR) on rdma_rxe and NICs.",
            "Exit status: 0 on success, 1 on failure (including a rejected or unanswered connect), "
                    + "2 on bad usage or an argument that cannot be used (an address not of this machine, a port in use, a file that cannot be written)."
        })
public final class RpingCommand implements Callable<Integer>, OptionHelp {
    /** rping's default port. */
    static final int DEFAULT_PORT = 7174;

    @Spec
    CommandSpec spec;

    // rping's -V is validate, so -V is not --version here
    @Mixin
    HelpOptions help = new HelpOptions();

    @Option(names = "-s", description = "Server side.")
    boolean server;

    @Option(names = "-c", description = "Client side.")
    boolean client;

    @Option(names = "-a", paramLabel = "ADDR", description = "Server: address to listen on (our device's address, like --bind); client: the server's address.")
    String address;

    @Option(names = "-I", paramLabel = "ADDR", description = "Client: source address (our device's address, like --bind).")
    String source;

    @Option(names = "-p", paramLabel = "PORT", defaultValue = "" + DEFAULT_PORT, description = "rdma_cm port (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = "-C", paramLabel = "COUNT", defaultValue = "0", description = "Ping count (client; 0, the default, pings until interrupted).")
    int count;

    @Option(names = "-S", paramLabel = "SIZE", defaultValue = "64", converter = Converters.Size.class,
            description = "Ping data size, " + RpingSession.MIN_SIZE + ".." + RpingSession.MAX_SIZE + ", e.g. 4k (default: ${DEFAULT-VALUE}).")
    long size;

    @Option(names = "-v", description = "Display ping data to stdout.")
    boolean verbose;

    @Option(names = "-V", description = "Validate ping data (client).")
    boolean validate;

    @Option(names = "-d", description = "Debug output.")
    boolean debug;

    @Option(names = "--jroce-extensions", paramLabel = "LIST", defaultValue = "none",
            description = "Offer (client) or allow (server) jroce-to-jroce transport extensions in the CM's private data: "
                    + "none (default: messages exactly as rping's), sr (selective retransmission), cc (congestion "
                    + "control), all. Used only when both sides are jroce and name them; any other peer ignores the offer.")
    String jroceExtensions;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "0", converter = Converters.Time.class,
            description = "Give up after this long without the connection coming up: seconds, or e.g. 500ms (0, the default: "
                    + "wait as rping does; a client still gives up when the CM's retries run out).")
    Duration timeoutGiven;

    @Mixin
    DeviceOptions device = new DeviceOptions();

    @Override
    public Map<String, String> optionHelp() {
        return Map.of(
                "--bind", DeviceOptions.BIND_HELP + " The same as -a for a server and -I for a client (a client without either "
                        + "takes the address the kernel routes towards -a).",
                "--mtu", DeviceOptions.MTU_HELP + " Default: the interface's MTU less the RoCE headers (as rdma_rxe takes it); "
                        + "the connection manager agrees on the smaller of both sides'.",
                "--tail-probe", DeviceOptions.TAIL_PROBE_HELP + DeviceOptions.TAIL_PROBE_OFF,
                "--agent", DeviceOptions.AGENT_HELP + " Default: dedicated, the endpoint's default, which rping keeps: a thread "
                        + "of its own runs the device and the connection manager, and rping's thread waits for each completion "
                        + "with a blocking poll of its completion queue, which the device's thread fills.");
    }

    @Override
    public Integer call() throws Exception {
        if (server == client) usage("give exactly one of -s (server) and -c (client)");
        if (size < RpingSession.MIN_SIZE || size > RpingSession.MAX_SIZE) {
            usage("Invalid size " + size + " (valid range is " + RpingSession.MIN_SIZE + " to " + RpingSession.MAX_SIZE + ")");
        }
        if (count < 0) usage("Invalid count " + count);
        if (port < 1 || port > 65535) usage("invalid -p " + port + ": must be 1..65535");
        if (timeoutGiven.compareTo(Duration.ofDays(1)) > 0) usage("invalid --timeout " + Converters.seconds(timeoutGiven) + ": at most 86400 s");
        int ext = 0;
        try {
            ext = Converters.jroceExtensions(jroceExtensions);
        } catch (IllegalArgumentException e) {
            usage(e.getMessage());
        }
        if (client && address == null) usage("a client needs -a ADDR (the server's address)");
        if (server && source != null) usage("-I applies to a client only");
        InetAddress local = device.bind(spec);
        String localOption = "--bind";
        if (source != null) {
            localOption = "-I";
            InetAddress src = DeviceOptions.address(spec, source, "-I");
            if (local != null && !local.equals(src)) usage("-I and --bind name different addresses");
            local = src;
        }
        InetAddress peer = null;
        if (server) {
            if (address != null) {
                InetAddress a = DeviceOptions.address(spec, address, "-a");
                if (local != null && !local.equals(a)) usage("-a and --bind name different addresses");
                local = a;
                localOption = "-a";
            }
            if (local == null) usage("a server needs -a ADDR or --bind ADDR (the local address of its RoCE device)");
        } else {
            peer = DeviceOptions.address(spec, address, "-a");
            if (local == null) local = DeviceOptions.sourceTowards(spec, peer, "-a", "-I");
            peer = DeviceOptions.peerFor(spec, local, peer, "-a");
        }
        DeviceOptions.checkLocal(spec, local, localOption);
        RpingSession.Options o = new RpingSession.Options((int) size, validate, verbose, debug);
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        Duration timeout = timeoutGiven.isZero() ? null : timeoutGiven;
        try (Device dev = DeviceOptions.open(spec, device.config(spec, local));
             MetricsExport exported = device.exportMetrics(spec, dev);
             CmSide side = CmSide.open(dev, mtu(local), out, err, debug)) {
            try {
                return server ? runServer(side, dev, o, out, err, timeout, ext) : runClient(side, dev, o, peer, out, err, timeout, ext);
            } finally {
                out.flush();
                device.report(err, dev);
                device.printCounters(err, dev);
            }
        }
    }

    private int runServer(CmSide side, Device dev, RpingSession.Options o, PrintWriter out, PrintWriter err, Duration timeout,
                          int ext) throws IOException, InterruptedException {
        CmId child = side.awaitRequest(port, timeout);
        try (RpingSession s = new RpingSession(dev.allocPd(), true, o, out, err)) {
            child.useQp(s.qp());
            s.postFirstRecv();
            // rping.c rping_accept: rdma_accept(id, NULL), so librdmacm's defaults (the REQ's values mirrored)
            child.accept(CmConnParam.defaults().extensions(ext));
            if (!side.awaitEstablished(child, timeout, "server")) return 1;
            if (ext != 0) out.println("jroce extensions: " + JroceExtensions.toString(child.extensions()));
            s.disconnectedWhen(side::disconnected);
            try {
                s.runServer();
            } catch (IOException e) {
                err.println(e.getMessage());
                err.println("rping server failed: -1");
                return 1;
            } finally {
                side.disconnect(child);
            }
            return 0;
        }
    }

    private int runClient(CmSide side, Device dev, RpingSession.Options o, InetAddress peer, PrintWriter out, PrintWriter err,
                          Duration timeout, int ext) throws IOException, InterruptedException {
        try (RpingSession s = new RpingSession(dev.allocPd(), false, o, out, err)) {
            CmId id = side.newId();
            id.useQp(s.qp());
            s.postFirstRecv();
            if (debug) out.println("rdma_connect to " + IpText.of(peer) + " port " + port);
            id.connect(peer, port, connParam().extensions(ext));
            if (!side.awaitEstablished(id, timeout, "client")) {
                err.println("connect error -1");
                return 1;
            }
            if (ext != 0) out.println("jroce extensions: " + JroceExtensions.toString(id.extensions()));
            s.disconnectedWhen(side::disconnected);
            try {
                s.runClient(count);
            } catch (IOException e) {
                err.println(e.getMessage());
                err.println("rping client failed: -1");
                return 1;
            } finally {
                side.disconnect(id);
            }
            return 0;
        }
    }

    /** The path MTU our CM accepts: --mtu, else the interface's (as rxe derives its own from the netdev). */
    private Mtu mtu(InetAddress local) {
        Mtu m = device.mtu(null);
        return m != null ? m : LocalAddress.activeMtu(local);
    }

    /** rping_init_conn_param: responder resources 1, initiator depth 1, retry and RNR retry 7, no private data. */
    static CmConnParam connParam() {
        return CmConnParam.defaults().responderResources(1).initiatorDepth(1).retryCount(7).rnrRetryCount(7);
    }

    private void usage(String message) {
        throw new ParameterException(spec.commandLine(), message);
    }

    /** rping's line for an error event: "cma event RDMA_CM_EVENT_REJECTED, error 8". */
    static String errorLine(CmEvent e) {
        return "cma event " + CmAgents.eventName(e.type()) + ", error " + e.status();
    }
}
