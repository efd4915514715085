package io.jroce.cli.perf;

import io.jroce.cli.DeviceOptions;
import io.jroce.wire.IpText;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

import java.net.Inet6Address;
import java.net.InetAddress;

/**
 * Where the TCP exchange of {@code perf} and {@code pingpong} runs, which need not be the IP version of the
 * RoCE traffic. The exchange only carries each side's QPN, PSN and GID, and the RoCE packets go to the GID the
 * peer announced. The tools jroce meets exchange over IPv4 even when their GID index names an IPv6 address:
 * perftest 4.5 asks getaddrinfo for {@code AF_INET} only (perftest_communication.c, ethernet_server_connect and
 * ethernet_client_connect), and ibv_rc_pingpong's server binds the first passive address getaddrinfo returns,
 * {@code 0.0.0.0} (rc_pingpong.c, pp_server_exch_dest). So HOST may be IPv4 while --bind is IPv6, and a server
 * can listen on another address than its device's with {@code --oob}.
 */
final class OobOptions {
    /** What --bind adds for the commands with a TCP exchange (perf, pingpong). */
    static final String BIND_HELP = " The TCP exchange listens on it too (or on --oob). Required for a server; a client defaults "
            + "to the address the kernel routes towards HOST.";

    @Option(names = "--oob", paramLabel = "ADDR", description = "Local address of the TCP exchange: a server listens there instead of on "
            + "the --bind address; a client connects from it. IPv4 or IPv6 whatever --bind is, e.g. --bind fd77::1 --oob 10.77.0.1 "
            + "for perftest and ibv_rc_pingpong clients, which exchange over IPv4 only.")
    String oob;

    /** --oob, parsed, or null when absent. */
    InetAddress local(CommandSpec spec) {
        return oob == null ? null : DeviceOptions.address(spec, oob, "--oob");
    }

    /**
     * A server's exchange port: if it cannot be listened on (in use), a usage error before the device opens, as for
     * every argument that cannot be used. (The listener binds it again later; this only fails early.)
     */
    void checkListen(CommandSpec spec, InetAddress device, int port) {
        InetAddress at = listen(spec, device);
        try (java.net.ServerSocket probe = new java.net.ServerSocket()) {
            probe.setReuseAddress(true);
            probe.bind(new java.net.InetSocketAddress(at, port), 1);
        } catch (java.io.IOException e) {
            throw new ParameterException(spec.commandLine(), "cannot listen on TCP " + IpText.withPort(at, port) + " ("
                    + e.getMessage() + "): choose another port with -p or stop the program using it");
        }
    }

    /** The address a server's exchange listens on: --oob, else the device's. */
    InetAddress listen(CommandSpec spec, InetAddress device) {
        InetAddress a = local(spec);
        return a != null ? a : device;
    }

    /**
     * The client's exchange: HOST as the TCP peer. Of the device's IP version it is treated as a RoCE peer is
     * (a link-local HOST takes the device's scope); of the other version it is used as it is. --oob, when
     * given, must be of HOST's version, since the TCP connection goes from one to the other.
     */
    InetAddress host(CommandSpec spec, InetAddress device, InetAddress host) {
        InetAddress from = local(spec);
        if (from != null && (from instanceof Inet6Address) != (host instanceof Inet6Address)) {
            throw new ParameterException(spec.commandLine(), "--oob " + IpText.of(from) + " and HOST " + IpText.of(host)
                    + " are of different IP versions: the TCP exchange goes from one to the other");
        }
        if ((device instanceof Inet6Address) != (host instanceof Inet6Address)) return host;
        return DeviceOptions.peerFor(spec, device, host, "HOST");
    }
}
