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
 * {@code jroce udaddy [-s SERVER]}: rdma-core's {@code udaddy} (librdmacm/examples/udaddy.c), interoperable with it in
 * both roles: UD queue pairs found through rdma_cm's UDP port space (SIDR), messages both ways. The phases are
 * {@link UdaddyRun}'s.
 */
@Command(name = "udaddy",
        versionProvider = Main.Version.class,
        sortOptions = false,
        description = {
            "UD messages through the RDMA connection manager's UDP port space. With -s SERVER: a client that finds -c of the "
                    + "server's UD queue pairs (a SIDR request each, port --port), sends -C messages of -S bytes to each with "
                    + "its own QP number as immediate data, and receives as many replies. Without -s: a server that answers -c "
                    + "requests, receives the messages and replies to each sender (its address from the message, its QP number "
                    + "from the immediate data).",
            "Interoperates with rdma-core's udaddy (udaddy on the server, udaddy -s SERVER on the client) on rdma_rxe and NICs, "
                    + "and prints its lines. A UD message is one packet: -S is at most the path MTU.",
            "Exit status: 0 when every request was answered and every message went both ways, 1 on a failure at run time (an "
                    + "unanswered or rejected request, a completion with an error, a phase without progress for --timeout), "
                    + "2 on bad usage or an argument that cannot be used."
        })
public final class UdaddyCommand implements Callable<Integer>, OptionHelp {
    /** udaddy's port. */
    static final int DEFAULT_PORT = 7174;

    @Spec
    CommandSpec spec;

    @Mixin
    HelpOptions help = new HelpOptions();

    @Mixin
    ToolOptions tool = new ToolOptions();

    @Option(names = "--port", paramLabel = "PORT", defaultValue = "" + DEFAULT_PORT,
            description = "rdma_cm port in the UDP port space (service ID 0x0000000001110000 + PORT), 1..65535 (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = "-P", paramLabel = "SPACE", description = "Port space: udp (the only one offered, and the default).")
    String portSpace;

    @Option(names = "-p", paramLabel = "SPACE", description = "Port space as a number, as older udaddy command lines give "
            + "it: 0x0111 (UDP) only. The port itself is --port.")
    String portSpaceNumber;

    @Mixin
    DeviceOptions device = new DeviceOptions();

    @Override
    public Map<String, String> optionHelp() {
        return ToolOptions.deviceHelp("the interface's MTU less the RoCE headers (as rdma_rxe's active MTU); "
                + "the largest message -S allows.");
    }

    @Override
    public Integer call() throws Exception {
        tool.check(spec, port, "--port", portSpace, "udp");
        if (portSpaceNumber != null && decode(portSpaceNumber) != 0x0111) {
            ToolOptions.usage(spec, "-p " + portSpaceNumber + ": only the UDP port space (0x0111) is offered; the port is --port");
        }
        ToolOptions.Ends ends = tool.ends(spec, device);
        if (tool.messages() > 0 && tool.size > ends.mtu().bytes()) {
            // udaddy.c verify_test_params
            ToolOptions.usage(spec, "message_size " + tool.size + " is larger than active mtu " + ends.mtu().bytes()
                    + " (a UD message is one packet; see --mtu)");
        }
        long bytes = (long) tool.connections * tool.messages() * (tool.size + UdConnection.GRH_BYTES);
        if (bytes > Limits.BUFFER_BYTES) {
            ToolOptions.usage(spec, "-c " + tool.connections + " x -C " + tool.count + " receive buffers of " + (tool.size + UdConnection.GRH_BYTES)
                    + " bytes take " + bytes + " bytes, more than the " + Limits.BUFFER_BYTES + " allowed");
        }
        return tool.run(spec, device, ends, port, UdaddyRun::new);
    }

    private static long decode(String s) {
        try {
            return Long.decode(s.strip());
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
