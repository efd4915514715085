package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Debian's unmodified ib_write_bw with {@code -R} (its connections, the exchange's and the test QP's, made by the
 * RDMA connection manager) through this module's libraries: both sides through them, and against
 * {@code jroce perf write -R} in both roles. Each side must end successfully and print its result line for the
 * size and iteration count asked; and a client whose second connection is rejected fails as perftest fails, without
 * a crash. Devices on hosts 9 ... 14, 37, 38 and 41 ... 54 of {@link Tools#net}; {@code -p} is an rdma_cm port (no TCP).
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

    /**
     * Every other perftest program with {@code -R}, both sides through the libraries (hosts 41 ... 54): each client
     * prints its result row for the size and iterations asked, and both sides exit 0. {@code ib_atomic_lat}'s server
     * returns from main with its connections up; its client waits for their DISCONNECTED, which it gets because the
     * library ends a program's open ids at its exit as the kernel does.
     */
    @ParameterizedTest
    @CsvSource({
        "ib_send_bw, 65536, 41",
        "ib_read_bw, 65536, 43",
        "ib_atomic_bw, 8, 45",
        "ib_send_lat, 2, 47",
        "ib_write_lat, 2, 49",
        "ib_read_lat, 2, 51",
        "ib_atomic_lat, 8, 53",
    })
    void everyProgramBothSidesThroughTheLibrary(String program, int size, int host) throws Exception {
        String server = Tools.addr(host);
        String iters = "200";
        List<String> common = new ArrayList<>(List.of(Tools.tool(program, "perftest"), "-d", "jroce0", "-x", "1", "-F", "-R",
                "-n", iters, "-p", PORT));
        if (!program.startsWith("ib_atomic")) common.addAll(List.of("-s", "" + size));
        List<String> client = new ArrayList<>(common);
        client.add(server);
        CmToolPair.Outputs o = CmToolPair.runPerftestCm(new CmToolPair.Side(server, common), CmToolPair.LIBRARY_LISTENING + PORT,
                new CmToolPair.Side(Tools.addr(host + 1), client));
        assertEquals(0, o.clientExit(), o.both());
        assertEquals(0, o.serverExit(), o.both());
        assertTrue(Pattern.compile("(?m)^\\s*" + size + "\\s+" + iters + "\\s+\\d").matcher(o.client()).find(), o.both());
        assertTrue(o.client().contains("rdma_cm QPs\t : ON"), o.both());
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

    /**
     * A REJ on the test connection: the client asks for two QPs, the server takes one and rejects the second request
     * (perftest's rdma_cm_connection_request_handler). perftest's client then destroys its ids and its event channel
     * (rdma_cm_destroy_cma), retries with rdma_resolve_addr on the ids it destroyed, read from memory it freed, and
     * destroys the channel again: each of those calls must fail (ENOENT for the ids, as the kernel's ucma answers for
     * an id it no longer has) and the client end with perftest's own failure, exit 1, not a crash. The server, left
     * waiting for its exchange with the client, is ended by the test. Devices on hosts 37 and 38.
     */
    @Test
    void readClientFailsCleanlyWhenTheServerRejectsItsSecondQp() throws Exception {
        String server = Tools.addr(37);
        List<String> s = new ArrayList<>(List.of(Tools.tool("ib_read_bw", "perftest"), "-d", "jroce0", "-x", "1", "-F", "-R",
                "-n", "100", "-q", "1", "-p", PORT));
        List<String> c = new ArrayList<>(List.of(Tools.tool("ib_read_bw", "perftest"), "-d", "jroce0", "-x", "1", "-F", "-R",
                "-n", "100", "-q", "2", "-p", PORT, server));
        CmToolPair.Outputs o = CmToolPair.run(new CmToolPair.Side(server, s), CmToolPair.LIBRARY_LISTENING + PORT,
                new CmToolPair.Side(Tools.addr(38), c), true);
        assertTrue(o.client().contains("RDMA_CM_EVENT_REJECTED"), o.both());
        assertTrue(o.client().contains("Failed to resolve RDMA CM address.\nERRNO: No such file or directory."), o.both());
        assertEquals(1, o.clientExit(), o.both());
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
