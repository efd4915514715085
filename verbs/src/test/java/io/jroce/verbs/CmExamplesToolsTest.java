package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Debian's unmodified rdma_server and rdma_client (rdmacm-utils): librdmacm's synchronous interface
 * (rdma_create_ep, rdma_get_request, calls that wait for their own events) and the QP, CQs and completion
 * channels it makes for an id, with the inline helpers of rdma_verbs.h posting and polling on them; one
 * message each way, both sides through this module's libraries, devices on 127.0.63.17 and .18.
 */
class RdmaServerToolsTest {

    @Test
    void bothSidesThroughTheLibrary() throws Exception {
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
}
