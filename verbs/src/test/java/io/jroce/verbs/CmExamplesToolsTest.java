package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * rdma-core's librdmacm examples, Debian's unmodified binaries (rdmacm-utils), both sides through this module's
 * libraries, devices on hosts 17 ... 22 of {@link Tools#net}:
 * <ul>
 * <li>rdma_server / rdma_client: the synchronous interface (rdma_create_ep, rdma_get_request, calls that wait for
 * their own events) and the QP, CQs and completion channels librdmacm makes for an id, posted and polled by the
 * inline helpers of rdma_verbs.h; one message each way;</li>
 * <li>ucmatose: RC connections whose events the program takes in a loop, ten messages each way, then disconnect;</li>
 * <li>udaddy: the UDP port space (SIDR): the peer's address handle, QPN and Q_Key from the ESTABLISHED event, ten
 * UD messages to the server and its replies to an address handle made from the received GRH and the QP's Q_Key.</li>
 * </ul>
 */
class CmExamplesToolsTest {
    /** udaddy's rdma_cm port, which it has no option for. */
    private static final int UDADDY_PORT = 7174;

    @Test
    void rdmaServerAndClient() throws Exception {
        String server = Tools.addr(17);
        String port = "" + Tools.cmPort(7471);
        CmToolPair.Outputs o = CmToolPair.run(
                new CmToolPair.Side(server, List.of(Tools.tool("rdma_server", "rdmacm-utils"), "-s", server, "-p", port)),
                CmToolPair.LIBRARY_LISTENING + port,
                new CmToolPair.Side(Tools.addr(18), List.of(Tools.tool("rdma_client", "rdmacm-utils"), "-s", server, "-p", port)));
        assertEquals(0, o.clientExit(), o.both());
        assertEquals(0, o.serverExit(), o.both());
        assertTrue(o.client().contains("rdma_client: end 0\n"), o.both());
        assertTrue(o.server().contains("rdma_server: end 0\n"), o.both());
    }

    @Test
    void ucmatose() throws Exception {
        CmToolPair.Outputs o = serverAndClient("ucmatose", Tools.cmPort(7471), Tools.addr(19), Tools.addr(20));
        assertTrue(o.server().contains("cmatose: disconnecting\ndisconnected\n"), o.both());
    }

    @Test
    void udaddy() throws Exception {
        CmToolPair.Outputs o = serverAndClient("udaddy", 0, Tools.addr(21), Tools.addr(22));
        assertTrue(o.server().contains("sending replies\n"), o.both());
    }

    /**
     * The tool's server bound to {@code server} (-b), listening on rdma_cm port {@code port} (-p; 0: the tool's own,
     * for udaddy, whose -p is the port space), and its client (-s); both
     * report their data transfers done.
     */
    private static CmToolPair.Outputs serverAndClient(String tool, int port, String server, String client) throws Exception {
        String path = Tools.tool(tool, "rdmacm-utils");
        List<String> serverCmd = new ArrayList<>(List.of(path, "-b", server));
        List<String> clientCmd = new ArrayList<>(List.of(path, "-s", server));
        if (port != 0) {
            serverCmd.addAll(List.of("-p", "" + port));
            clientCmd.addAll(List.of("-p", "" + port));
        }
        CmToolPair.Outputs o = CmToolPair.run(new CmToolPair.Side(server, serverCmd),
                CmToolPair.LIBRARY_LISTENING + (port != 0 ? port : UDADDY_PORT), new CmToolPair.Side(client, clientCmd));
        assertEquals(0, o.clientExit(), o.both());
        assertEquals(0, o.serverExit(), o.both());
        for (String out : List.of(o.client(), o.server())) {
            assertTrue(out.contains("data transfers complete\n") && out.contains("test complete\nreturn status 0\n"), o.both());
        }
        return o;
    }
}
