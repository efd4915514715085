package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * rdma-core's librdmacm examples, Debian's unmodified binaries (rdmacm-utils), both sides through this module's
 * libraries, devices on 127.0.63.17 ... .22:
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

    @Test
    void rdmaServerAndClient() throws Exception {
        String server = "127.0.63.17";
        CmToolPair.Outputs o = CmToolPair.run(
                new CmToolPair.Side(server, List.of(Tools.tool("rdma_server", "rdmacm-utils"), "-s", server)),
                CmToolPair.LIBRARY_LISTENING + "7471",
                new CmToolPair.Side("127.0.63.18", List.of(Tools.tool("rdma_client", "rdmacm-utils"), "-s", server)));
        assertEquals(0, o.clientExit(), o.both());
        assertEquals(0, o.serverExit(), o.both());
        assertTrue(o.client().contains("rdma_client: end 0\n"), o.both());
        assertTrue(o.server().contains("rdma_server: end 0\n"), o.both());
    }

    @Test
    void ucmatose() throws Exception {
        CmToolPair.Outputs o = serverAndClient("ucmatose", 7471, "127.0.63.19", "127.0.63.20");
        assertTrue(o.server().contains("cmatose: disconnecting\ndisconnected\n"), o.both());
    }

    @Test
    void udaddy() throws Exception {
        CmToolPair.Outputs o = serverAndClient("udaddy", 7174, "127.0.63.21", "127.0.63.22");
        assertTrue(o.server().contains("sending replies\n"), o.both());
    }

    /**
     * The tool's server bound to {@code server} (-b), listening on its default rdma_cm port, and its client (-s); both
     * report their data transfers done.
     */
    private static CmToolPair.Outputs serverAndClient(String tool, int port, String server, String client) throws Exception {
        String path = Tools.tool(tool, "rdmacm-utils");
        CmToolPair.Outputs o = CmToolPair.run(new CmToolPair.Side(server, List.of(path, "-b", server)),
                CmToolPair.LIBRARY_LISTENING + port, new CmToolPair.Side(client, List.of(path, "-s", server)));
        assertEquals(0, o.clientExit(), o.both());
        assertEquals(0, o.serverExit(), o.both());
        for (String out : List.of(o.client(), o.server())) {
            assertTrue(out.contains("data transfers complete\n") && out.contains("test complete\nreturn status 0\n"), o.both());
        }
        return o;
    }
}
