package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Debian's unmodified ibv_rc_pingpong and ibv_ud_pingpong (ibverbs-utils), both sides through this module's
 * libibverbs.so.1: each process embeds a jroce device and runs the verbs there. {@code -c} makes each side
 * check the bytes it received; {@code -g 1} picks the device's address (GID 1, as with rdma_rxe).
 */
class PingpongToolsTest {
    private static final String ITERS = "20";

    @Test
    void rcPingpong() throws Exception {
        pingpong("ibv_rc_pingpong", false);
    }

    @Test
    void rcPingpongWithCompletionEvents() throws Exception {
        pingpong("ibv_rc_pingpong", true);
    }

    @Test
    void udPingpong() throws Exception {
        pingpong("ibv_ud_pingpong", false);
    }

    private void pingpong(String name, boolean events) throws Exception {
        ToolPair pair = new ToolPair(name);
        List<String> args = new ArrayList<>(List.of(Tools.tool(name, "ibverbs-utils"), "-d", "jroce0", "-g", "1", "-c",
                "-n", ITERS, "-p", "" + pair.tcpPort));
        if (events) args.add("-e");
        ToolPair.Result r = pair.run(args, 60);
        assertEquals(0, r.clientExit(), r.both());
        assertEquals(0, r.serverExit(), r.both());
        assertTrue(r.clientOut().contains(ITERS + " iters in"), r.both());
        assertTrue(r.serverOut().contains(ITERS + " iters in"), r.both());
        // each side saw the other's GID: the address its device binds
        assertTrue(r.clientOut().contains("GID ::ffff:" + pair.serverAddress), r.both());
        assertTrue(r.serverOut().contains("GID ::ffff:" + pair.clientAddress), r.both());
    }
}
