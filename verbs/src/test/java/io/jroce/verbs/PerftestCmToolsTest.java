package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Debian's unmodified ib_write_bw with {@code -R} (its connections, the exchange's and the test QP's, made by the
 * RDMA connection manager) through this module's libraries: both sides through them, and against
 * {@code jroce perf write -R} in both roles. Each side must end successfully and print its result line for the
 * size and iteration count asked. Devices on hosts 9 ... 14 of {@link Tools#net}; {@code -p} is an rdma_cm port (no TCP).
 */
class PerftestCmToolsTest {
    private static final String PORT = "" + Tools.cmPort(46310);
    private static final String SIZE = "65536";
    private static final String ITERS = "500";
    private static final Pattern RESULT = Pattern.compile("(?m)^\\s*" + SIZE + "\\s+" + ITERS + "\\s+\\d");

    @Test
    void bothSidesThroughTheLibrary() throws Exception {
        String server = Tools.addr(9);
        CmToolPair.Outputs o = CmToolPair.run(tool(server, PORT), CmToolPair.LIBRARY_LISTENING + PORT,
                tool(Tools.addr(10), PORT, server));
        check(o);
    }

    @Test
    void toolClientAgainstJroceServer() throws Exception {
        String server = Tools.addr(11);
        CmToolPair.Outputs o = CmToolPair.run(jroce(server, PORT), "* Waiting for client to connect... *",
                tool(Tools.addr(12), PORT, server));
        check(o);
    }

    @Test
    void jroceClientAgainstToolServer() throws Exception {
        String server = Tools.addr(13);
        CmToolPair.Outputs o = CmToolPair.run(tool(server, PORT), CmToolPair.LIBRARY_LISTENING + PORT,
                jroce(Tools.addr(14), PORT, server));
        check(o);
    }

    private static void check(CmToolPair.Outputs o) {
        assertEquals(0, o.clientExit(), o.both());
        assertEquals(0, o.serverExit(), o.both());
        assertTrue(RESULT.matcher(o.client()).find(), o.both());
        assertTrue(RESULT.matcher(o.server()).find(), o.both());
        assertTrue(o.client().contains("rdma_cm QPs\t : ON"), o.both());
        assertTrue(o.server().contains("rdma_cm QPs\t : ON"), o.both());
    }

    /** ib_write_bw -R through the library; with a host: the client. */
    private static CmToolPair.Side tool(String address, String port, String... host) {
        List<String> cmd = new ArrayList<>(List.of(Tools.tool("ib_write_bw", "perftest"), "-d", "jroce0", "-x", "1", "-F", "-R",
                "-s", SIZE, "-n", ITERS, "-p", port));
        cmd.addAll(List.of(host));
        return new CmToolPair.Side(address, cmd);
    }

    /** jroce perf write -R; with a host: the client. */
    private static CmToolPair.Side jroce(String address, String port, String... host) {
        List<String> args = new ArrayList<>(List.of("perf", "write", "-R", "--bind", address, "-s", SIZE, "-n", ITERS, "-p", port,
                "--timeout", "60"));
        args.addAll(List.of(host));
        return new CmToolPair.Side(address, ToolPair.jroce(args.toArray(String[]::new)));
    }
}
