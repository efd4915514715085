package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * What Debian's perftest puts on the wire through this module's libraries, both sides through them: the client's
 * device records its datagrams ({@code -Djroce.pcap} in JROCE_JAVA_OPTS), {@code jroce inspect} must find every
 * packet's ICRC exact and nothing it cannot decode, and Wireshark's own dissector ({@code tshark}, needed in CI)
 * must decode every frame as InfiniBand with nothing malformed.
 */
class CaptureToolsTest {
    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "ib_write_bw, 65536, RC_RDMA_WRITE",
        "ib_read_bw, 65536, RC_RDMA_READ_REQUEST",
        "ib_send_bw, 65536, RC_SEND",
        "ib_atomic_bw, 8, RC_FETCH_ADD",
    })
    void theCaptureIsExactAndDecodesInWireshark(String tool, int size, String opcode) throws Exception {
        ToolPair pair = new ToolPair("CaptureToolsTest " + tool);
        Path pcap = dir.resolve(tool + ".pcap");
        pair.clientEnv = Map.of("JROCE_JAVA_OPTS", "-Djroce.pcap=" + pcap);
        List<String> args = new ArrayList<>(List.of(Tools.tool(tool, "perftest"), "-d", "jroce0", "-x", "1", "-F",
                "-n", "20", "-p", "" + pair.tcpPort));
        if (!tool.equals("ib_atomic_bw")) args.addAll(List.of("-s", "" + size));
        ToolPair.Result r = pair.run(args, 120);
        assertEquals(0, r.clientExit(), r.both());
        assertEquals(0, r.serverExit(), r.both());
        assertTrue(Files.size(pcap) > 24, "no packets in " + pcap);

        Tools.Result in = Tools.run(Map.of(), 60, ToolPair.jroce("inspect", pcap.toString()).toArray(String[]::new));
        assertEquals(0, in.exit(), in.output());
        List<String> packets = in.output().lines().filter(l -> l.contains("icrc=")).toList();
        assertTrue(packets.size() >= 20, in.output());
        assertEquals(List.of(), packets.stream().filter(l -> !l.contains("icrc=ok")).toList(), "packets without an exact ICRC");
        assertTrue(packets.stream().anyMatch(l -> l.contains(opcode)), opcode + " in\n" + in.output());

        boolean haveTshark = Files.isExecutable(Path.of("/usr/bin/tshark"));
        if (System.getenv("CI") != null) assertTrue(haveTshark, "CI installs tshark");
        assumeTrue(haveTshark, "tshark is not installed: the Wireshark half is skipped");
        // rpcordma and identify_payload guess at the payload's own protocol (any SEND may be RPC-over-RDMA; a
        // payload whose 3rd and 4th bytes are zero is taken for an Ethernet frame): both off, as in the rxe lab
        Tools.Result all = Tools.run(Map.of(), 60, "/usr/bin/tshark", "-r", pcap.toString(), "--disable-protocol", "rpcordma",
                "-o", "infiniband.identify_payload:FALSE", "-Y", "infiniband", "-T", "fields", "-e", "frame.number");
        Tools.Result bad = Tools.run(Map.of(), 60, "/usr/bin/tshark", "-r", pcap.toString(), "--disable-protocol", "rpcordma",
                "-o", "infiniband.identify_payload:FALSE", "-Y", "_ws.malformed || !infiniband");
        assertEquals(0, all.exit(), all.output());
        assertEquals(packets.size(), all.output().lines().filter(l -> l.matches("\\d+")).count(), "frames decoded as InfiniBand\n"
                + all.output());
        assertEquals(List.of(), bad.output().lines().filter(l -> l.matches("\\s*\\d+ .*")).toList(),
                "frames tshark finds malformed or not InfiniBand");
    }
}
