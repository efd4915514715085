package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Debian's unmodified ibv_rc_pingpong through the library against {@code jroce pingpong} (a jroce endpoint in
 * its own JVM, no library), both roles; both sides check the data they receive ({@code -c}).
 */
class JavaPeerTest {
    private static final String ITERS = "20";

    @Test
    void toolClientAgainstJroceServer() throws Exception {
        ToolPair pair = new ToolPair("toolClientAgainstJroceServer");
        List<String> server = ToolPair.jroce("pingpong", "--bind", pair.serverAddress, "-p", "" + pair.tcpPort, "-n", ITERS, "-c");
        List<String> client = List.of(Tools.tool("ibv_rc_pingpong", "ibverbs-utils"), "-d", "jroce0", "-g", "1", "-c",
                "-n", ITERS, "-p", "" + pair.tcpPort, pair.serverAddress);
        check(pair, pair.run(server, client, 60));
    }

    @Test
    void jroceClientAgainstToolServer() throws Exception {
        ToolPair pair = new ToolPair("jroceClientAgainstToolServer");
        List<String> server = List.of(Tools.tool("ibv_rc_pingpong", "ibverbs-utils"), "-d", "jroce0", "-g", "1", "-c",
                "-n", ITERS, "-p", "" + pair.tcpPort);
        List<String> client = ToolPair.jroce("pingpong", "--bind", pair.clientAddress, "-p", "" + pair.tcpPort, "-n", ITERS, "-c",
                pair.serverAddress);
        check(pair, pair.run(server, client, 60));
    }

    private static void check(ToolPair pair, ToolPair.Result r) {
        assertEquals(0, r.clientExit(), r.both());
        assertEquals(0, r.serverExit(), r.both());
        assertTrue(r.clientOut().contains(ITERS + " iters in"), r.both());
        assertTrue(r.serverOut().contains(ITERS + " iters in"), r.both());
        assertTrue(r.clientOut().contains("GID ::ffff:" + pair.serverAddress), r.both());
        assertTrue(r.serverOut().contains("GID ::ffff:" + pair.clientAddress), r.both());
    }
}
