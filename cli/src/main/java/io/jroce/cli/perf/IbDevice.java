package io.jroce.cli.perf;

import io.jroce.wire.IpText;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

import java.io.PrintWriter;
import java.net.InetAddress;

/**
 * {@code -d NAME} and {@code -i PORT} as ibv_rc_pingpong and perftest take them, so that their users' command lines
 * work. jroce opens its own device on the address of {@code --bind} (a client without it: the address routed
 * towards HOST), so a name chooses nothing; a name other than ours gets a note saying which device is used.
 */
final class IbDevice {
    /** The name jroce's device answers to. */
    static final String NAME = "jroce0";

    @Option(names = {"-d", "--ib-dev"}, paramLabel = "NAME", description = "RDMA device, as the C tools take it: " + NAME
            + " or any name. jroce runs its own device on the --bind address (a client without --bind: the address routed "
            + "towards HOST) and picks it by that address, not by name; another name gets a note saying so.")
    String name;

    @Option(names = {"-i", "--ib-port"}, paramLabel = "PORT", description = "Port of the device: ours has one, 1 (the default).")
    Integer port;

    /** -i in range, or a one-line usage error. */
    void check(CommandSpec spec) {
        if (port != null && port != 1) {
            throw new ParameterException(spec.commandLine(), "invalid -i/--ib-port " + port + ": our device has one port, 1");
        }
    }

    /** The note for a -d naming another device: which one runs instead. */
    void note(PrintWriter err, String command, InetAddress local) {
        if (name == null || name.equals(NAME)) return;
        err.println("jroce " + command + ": note: -d " + name + " is not opened; jroce runs its own device " + NAME + " on "
                + IpText.of(local) + " (chosen by --bind, not by -d)");
        err.flush();
    }
}
