package io.jroce.cli.cmtools;

import io.jroce.cli.DeviceOptions;
import io.jroce.cli.HelpOptions;
import io.jroce.cli.Main;
import io.jroce.cli.OptionHelp;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code jroce ucmatose [-s SERVER]}: rdma-core's {@code ucmatose} (librdmacm/examples/cmatose.c), interoperable
 * with it in both roles: several RC connections through the connection manager at once, messages both ways on each.
 * The phases are {@link UcmatoseRun}'s.
 */
@Command(name = "ucmatose",
        versionProvider = Main.Version.class,
        sortOptions = false,
        description = {
            "RC connections through the RDMA connection manager, several at once, with messages both ways on each. Without -s: "
                    + "a server that waits for -c connections on port -p, sends -C messages of -S bytes on every one, receives as "
                    + "many and disconnects. With -s SERVER: a client that opens -c connections, receives the server's messages, "
                    + "sends as many back and answers the disconnect.",
            "Interoperates with rdma-core's ucmatose (ucmatose on the server, ucmatose -s SERVER on the client) on rdma_rxe "
                    + "and NICs, and prints its lines. Its -m (moving the ids to a new event channel) is not offered: here -m is --mtu.",
            "Exit status: 0 when every connection came up and passed its messages, 1 on a failure at run time (a rejected or "
                    + "unanswered connect, a completion with an error, a phase without progress for --timeout), 2 on bad usage or an "
                    + "argument that cannot be used."
        })
public final class UcmatoseCommand implements Callable<Integer>, OptionHelp {
    /** ucmatose's default port. */
    static final int DEFAULT_PORT = 7471;

    @Spec
    CommandSpec spec;

    @Mixin
    HelpOptions help = new HelpOptions();

    @Mixin
    ToolOptions tool = new ToolOptions();

    @Option(names = {"-p", "--port"}, paramLabel = "PORT", defaultValue = "" + DEFAULT_PORT,
            description = "rdma_cm port (TCP port space), 1..65535 (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = "-P", paramLabel = "SPACE", description = "Port space: tcp (the only one offered, and the default).")
    String portSpace;

    @Mixin
    DeviceOptions device = new DeviceOptions();

    @Override
    public Map<String, String> optionHelp() {
        return ToolOptions.deviceHelp("the interface's MTU less the RoCE headers (as rdma_rxe takes it); "
                + "the connection manager agrees on the smaller of both sides'.");
    }

    @Override
    public Integer call() throws Exception {
        tool.check(spec, port, "-p", portSpace, "tcp");
        long bytes = 2L * tool.connections * (tool.messages() > 0 ? tool.size : 0);
        if (bytes > Limits.BUFFER_BYTES) {
            ToolOptions.usage(spec, "-c " + tool.connections + " connections of two " + tool.size + "-byte buffers take " + bytes
                    + " bytes, more than the " + Limits.BUFFER_BYTES + " allowed");
        }
        ToolOptions.Ends ends = tool.ends(spec, device);
        return tool.run(spec, device, ends, port, UcmatoseRun::new);
    }
}
