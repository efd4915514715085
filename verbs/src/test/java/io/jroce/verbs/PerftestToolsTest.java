package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Debian's unmodified perftest (which also links rdma-core's librdmacm and the mlx5/efa direct-verbs
 * providers), both sides through this module's libibverbs.so.1, RC over the devices' IPv4 GIDs ({@code -x 1}).
 * Each side must end successfully and print its result line for the size and iteration count asked.
 */
class PerftestToolsTest {

    @ParameterizedTest(name = "{0} -s {1}")
    @CsvSource({
        "ib_write_bw, 65536",
        "ib_read_bw, 65536",
        "ib_send_bw, 65536",
        "ib_atomic_bw, 8",
        "ib_write_lat, 64",
        "ib_read_lat, 64",
        "ib_send_lat, 64",
    })
    void bothSidesThroughTheLibrary(String tool, int size) throws Exception {
        ToolPair pair = new ToolPair(tool);
        String iters = "50";
        List<String> args = new ArrayList<>(List.of(Tools.tool(tool, "perftest"), "-d", "jroce0", "-x", "1", "-F",
                "-n", iters, "-p", "" + pair.tcpPort));
        if (!tool.equals("ib_atomic_bw")) args.addAll(List.of("-s", "" + size));
        ToolPair.Result r = pair.run(args, 120);
        assertEquals(0, r.clientExit(), r.both());
        assertEquals(0, r.serverExit(), r.both());
        // the result line: bytes, then iterations, then the figures
        Pattern result = Pattern.compile("(?m)^\\s*" + size + "\\s+" + iters + "\\s+\\d");
        assertTrue(result.matcher(r.clientOut()).find(), r.both());
        assertTrue(r.clientOut().contains("Device         : jroce0"), r.both());
        assertTrue(r.clientOut().contains("Link type       : Ethernet"), r.both());
    }
}
