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
 * side's device binds its own address of 127.0.63.0/24. The client starts once the server listens: our library
 * says so with {@code JROCE_VERBS_LOG=debug} ({@link CmToolPair}), {@code jroce rping -d} prints rping's
 * "rdma_listen" line.
 */
class RpingToolsTest {
    private static final int COUNT = 10;
    private static final String LIBRARY_LISTENING = CmToolPair.LIBRARY_LISTENING + "7174";
    private static final String JROCE_LISTENING = "rdma_listen";

    @Test
    void bothSidesThroughTheLibrary() throws Exception {
        String server = "127.0.63.1";
        String client = "127.0.63.2";
        CmToolPair.Outputs o = CmToolPair.run(rping(server, "-s", "-a", server, "-v", "-C", "" + COUNT), LIBRARY_LISTENING,
                rping(client, "-c", "-a", server, "-v", "-V", "-C", "" + COUNT));
        check(o);
    }

    @Test
    void toolClientAgainstJroceServer() throws Exception {
        String server = "127.0.63.3";
        String client = "127.0.63.4";
        CmToolPair.Outputs o = CmToolPair.run(new CmToolPair.Side(server, ToolPair.jroce("rping", "-s", "-a", server, "-d", "-v", "-C", "" + COUNT, "--timeout", "60")),
                JROCE_LISTENING, rping(client, "-c", "-a", server, "-v", "-V", "-C", "" + COUNT));
        check(o);
    }

    @Test
    void jroceClientAgainstToolServer() throws Exception {
        String server = "127.0.63.5";
        String client = "127.0.63.6";
        CmToolPair.Outputs o = CmToolPair.run(rping(server, "-s", "-a", server, "-v", "-C", "" + COUNT), LIBRARY_LISTENING,
                new CmToolPair.Side(client, ToolPair.jroce("rping", "-c", "-a", server, "-I", client, "-v", "-V", "-C", "" + COUNT, "--timeout", "60")));
        check(o);
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
