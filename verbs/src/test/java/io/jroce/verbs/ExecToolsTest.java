package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code jroce exec --bind ADDR --lib DIR -- PROGRAM}: the tools run on this module's libraries with only what
 * the command puts in their environment (the test gives them no LD_LIBRARY_PATH and no JROCE_ADDR).
 */
class ExecToolsTest {

    private static List<String> exec(String address, String... program) {
        List<String> cmd = new ArrayList<>(ToolPair.jroce("exec", "--bind", address, "--lib", Tools.nativeDir().toString(), "--"));
        cmd.addAll(List.of(program));
        return cmd;
    }

    @Test
    void devinfoThroughExec() throws Exception {
        // the class path stands in for target/jroce-verbs.jar, which the package phase makes after the tests
        Map<String, String> env = Map.of("JROCE_CLASSPATH", System.getProperty("java.class.path"));
        String[] cmd = exec(Tools.addr(36), Tools.tool("ibv_devinfo", "ibverbs-utils"), "-v").toArray(String[]::new);
        Tools.Result r = Tools.run(env, 60, cmd);
        assertEquals(0, r.exit(), r.output());
        assertTrue(r.output().contains("GID[  1]:\t\t::ffff:" + Tools.addr(36) + ", RoCE v2\n"), r.output());
    }

    @Test
    void rcPingpongBothSidesThroughExec() throws Exception {
        ToolPair pair = new ToolPair("rcPingpongBothSidesThroughExec");
        String tool = Tools.tool("ibv_rc_pingpong", "ibverbs-utils");
        String port = "" + pair.tcpPort;
        ToolPair.Result r = pair.run(exec(pair.serverAddress, tool, "-d", "jroce0", "-g", "1", "-c", "-n", "10", "-p", port),
                exec(pair.clientAddress, tool, "-d", "jroce0", "-g", "1", "-c", "-n", "10", "-p", port, pair.serverAddress), 90);
        assertEquals(0, r.clientExit(), r.both());
        assertEquals(0, r.serverExit(), r.both());
        assertTrue(r.clientOut().contains("10 iters in"), r.both());
        assertTrue(r.serverOut().contains("GID ::ffff:" + pair.clientAddress), r.both());
    }

    @Test
    void rpingBothSidesThroughExec() throws Exception {
        // exec puts librdmacm.so.1 beside libibverbs.so.1 first on the path: rping's connection manager is jroce's
        String server = Tools.addr(23);
        String client = Tools.addr(24);
        String port = "" + Tools.cmPort(7174);
        String rping = Tools.tool("rping", "rdmacm-utils");
        CmToolPair.Outputs o = CmToolPair.run(new CmToolPair.Side(server, exec(server, rping, "-s", "-a", server, "-p", port, "-v")),
                CmToolPair.LIBRARY_LISTENING + port,
                new CmToolPair.Side(client, exec(client, rping, "-c", "-a", server, "-p", port, "-v", "-V", "-C", "3")));
        assertEquals(0, o.clientExit(), o.both());
        assertEquals(0, o.serverExit(), o.both());
        assertTrue(o.client().contains("ping data: rdma-ping-2: "), o.both());
        assertTrue(o.server().contains("server ping data: rdma-ping-2: "), o.both());
    }
}
