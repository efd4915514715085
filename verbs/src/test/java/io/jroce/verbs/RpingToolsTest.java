package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Debian's unmodified rping (rdmacm-utils, linked against rdma-core's librdmacm.so.1 and libibverbs.so.1) through
 * this module's libraries: both sides through them, and against {@code jroce rping} in both roles. Ten pings of
 * 64 bytes, printed on both sides ({@code -v}) and checked by the client ({@code -V}: a mismatch fails it). Each
 * side's device binds its own address of {@link Tools#net}. The client starts once the server listens: our library
 * says so with {@code JROCE_VERBS_LOG=debug} ({@link CmToolPair}), {@code jroce rping -d} prints rping's
 * "rdma_listen" line.
 *
 * <p>With {@code -q} rping creates its QP itself (ibv_create_qp), names it in rdma_connect's or rdma_accept's
 * conn_param.qp_num and moves it through INIT, RTR and RTS with the attributes rdma_init_qp_attr gives; the client
 * then sends the RTU with rdma_establish after RDMA_CM_EVENT_CONNECT_RESPONSE. The library's trace shows each step.
 */
class RpingToolsTest {
    private static final int COUNT = 10;
    private static final String PORT = "" + Tools.cmPort(7174);
    private static final String LIBRARY_LISTENING = CmToolPair.LIBRARY_LISTENING + PORT;
    private static final String JROCE_LISTENING = "rdma_listen";

    @Test
    void bothSidesThroughTheLibrary() throws Exception {
        String server = Tools.addr(1);
        String client = Tools.addr(2);
        CmToolPair.Outputs o = CmToolPair.run(rping(server, "-s", "-p", PORT, "-a", server, "-v", "-C", "" + COUNT), LIBRARY_LISTENING,
                rping(client, "-c", "-p", PORT, "-a", server, "-v", "-V", "-C", "" + COUNT));
        check(o);
    }

    @Test
    void toolClientAgainstJroceServer() throws Exception {
        String server = Tools.addr(3);
        String client = Tools.addr(4);
        CmToolPair.Outputs o = CmToolPair.run(new CmToolPair.Side(server, ToolPair.jroce("rping", "-s", "-p", PORT, "-a", server, "-d", "-v", "-C", "" + COUNT, "--timeout", "60")),
                JROCE_LISTENING, rping(client, "-c", "-p", PORT, "-a", server, "-v", "-V", "-C", "" + COUNT));
        check(o);
    }

    @Test
    void jroceClientAgainstToolServer() throws Exception {
        String server = Tools.addr(5);
        String client = Tools.addr(6);
        CmToolPair.Outputs o = CmToolPair.run(rping(server, "-s", "-p", PORT, "-a", server, "-v", "-C", "" + COUNT), LIBRARY_LISTENING,
                new CmToolPair.Side(client, ToolPair.jroce("rping", "-c", "-p", PORT, "-a", server, "-I", client, "-v", "-V", "-C", "" + COUNT, "--timeout", "60")));
        check(o);
    }

    @Test
    void selfConnectedQpsBothSidesThroughTheLibrary() throws Exception {
        String server = Tools.addr(25);
        String client = Tools.addr(26);
        CmToolPair.Outputs o = CmToolPair.run(rping(server, "-s", "-p", PORT, "-q", "-a", server, "-v", "-C", "" + COUNT), LIBRARY_LISTENING,
                rping(client, "-c", "-p", PORT, "-q", "-a", server, "-v", "-V", "-C", "" + COUNT));
        check(o);
        checkSelfConnected(o.server(), false);
        checkSelfConnected(o.client(), true);
    }

    @Test
    void selfConnectedQpClientAgainstJroceServer() throws Exception {
        String server = Tools.addr(27);
        String client = Tools.addr(28);
        CmToolPair.Outputs o = CmToolPair.run(new CmToolPair.Side(server, ToolPair.jroce("rping", "-s", "-p", PORT, "-a", server, "-d", "-v", "-C", "" + COUNT, "--timeout", "60")),
                JROCE_LISTENING, rping(client, "-c", "-p", PORT, "-q", "-a", server, "-v", "-V", "-C", "" + COUNT));
        check(o);
        checkSelfConnected(o.client(), true);
    }

    @Test
    void jroceClientAgainstSelfConnectedQpServer() throws Exception {
        String server = Tools.addr(29);
        String client = Tools.addr(30);
        CmToolPair.Outputs o = CmToolPair.run(rping(server, "-s", "-p", PORT, "-q", "-a", server, "-v", "-C", "" + COUNT), LIBRARY_LISTENING,
                new CmToolPair.Side(client, ToolPair.jroce("rping", "-c", "-p", PORT, "-a", server, "-I", client, "-v", "-V", "-C", "" + COUNT, "--timeout", "60")));
        check(o);
        checkSelfConnected(o.server(), false);
    }

    /**
     * The side's QP was taken through INIT, RTR and RTS with rdma_init_qp_attr's attributes (the library's trace); the
     * client also had CONNECT_RESPONSE and sent the RTU with rdma_establish, the server had ESTABLISHED.
     */
    private static void checkSelfConnected(String out, boolean client) {
        for (String state : List.of("INIT", "RTR", "RTS")) {
            assertTrue(out.contains("jroce: rdma_init_qp_attr: " + state + ", mask 0x"), state + " in\n" + out);
        }
        if (client) {
            assertTrue(out.contains("cm event RDMA_CM_EVENT_CONNECT_RESPONSE"), out);
            assertTrue(out.contains("jroce: rdma_establish: RTU sent"), out);
        } else {
            assertTrue(out.contains("cm event RDMA_CM_EVENT_ESTABLISHED"), out);
        }
    }

    /** Both sides printed every ping, in order, and ended well. */
    private static void check(CmToolPair.Outputs o) {
        assertEquals(0, o.clientExit(), o.both());
        assertEquals(0, o.serverExit(), o.both());
        List<String> client = lines(o.client(), "ping data: rdma-ping-");
        List<String> server = lines(o.server(), "server ping data: rdma-ping-");
        assertEquals(COUNT, client.size(), o.both());
        assertEquals(COUNT, server.size(), o.both());
        for (int i = 0; i < COUNT; i++) {
            // rping's pattern: "rdma-ping-N: " then letters from 'A' + N, 64 bytes with the terminating NUL
            String data = "rdma-ping-" + i + ": " + (char) ('A' + i);
            assertTrue(client.get(i).startsWith("ping data: " + data) && client.get(i).length() == "ping data: ".length() + 63, o.both());
            assertTrue(server.get(i).startsWith("server ping data: " + data), o.both());
        }
    }

    private static List<String> lines(String out, String prefix) {
        List<String> l = new ArrayList<>();
        for (String s : out.lines().toList()) if (s.startsWith(prefix)) l.add(s);
        return l;
    }

    /** Debian's rping through the library, its device on {@code address}. */
    private static CmToolPair.Side rping(String address, String... args) {
        List<String> cmd = new ArrayList<>(List.of(Tools.tool("rping", "rdmacm-utils")));
        cmd.addAll(List.of(args));
        return new CmToolPair.Side(address, cmd);
    }

}
