package io.jroce.cli.inspect;

import io.jroce.cli.Cli;

import io.jroce.testkit.Json;
import io.jroce.testkit.TestData;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code jroce inspect} of pcapng files, as Wireshark's tools write them. */
class InspectPcapngTest {

    @Test
    void pcapngGivesTheSameDecodeAsPcap() {
        for (String[] pair : new String[][] {
                {"rocev2-golden.pcap", "pcapng/rocev2-golden.pcapng"},
                {"rxe/write_bw.pcap", "pcapng/rxe-write_bw.pcapng"},
                {"rxe/rc_pingpong.pcap", "pcapng/rxe-rc_pingpong.pcapng"}}) {
            Cli.Result pcap = Cli.run("inspect", "--json", TestData.file(pair[0]).toString());
            Cli.Result ng = Cli.run("inspect", "--json", TestData.file(pair[1]).toString());
            assertEquals("", ng.err());
            assertEquals(pcap.exit(), ng.exit(), pair[1]);
            assertTrue(pcap.outLines().size() > 1, pair[0]);
            assertEquals(pcap.out(), ng.out(), pair[1]);
        }
    }

    /**
     * pcapng/golden-ethernet-and-rawip.pcapng: mergecap of the golden pcap (Ethernet) and of the same frames
     * without their Ethernet header (editcap -C 14 -T rawip4), so two interfaces with different link types,
     * the frames interleaved by time. Every packet decodes as in the golden pcap, with the same ICRC verdict.
     */
    @Test
    void twoInterfacesWithDifferentLinkTypes() {
        Cli.Result golden = Cli.run("inspect", "--json", TestData.goldenPcap().toString());
        Cli.Result merged = Cli.run("inspect", "--json",
                TestData.file("pcapng/golden-ethernet-and-rawip.pcapng").toString());
        assertEquals("", merged.err());
        assertEquals(1, merged.exit(), "the golden vectors hold four bad ICRCs");
        List<Map<String, Object>> expected = withoutFrameNumbers(golden.outLines());
        List<Map<String, Object>> actual = withoutFrameNumbers(merged.outLines());
        assertEquals(41, expected.size());
        assertEquals(81, actual.size());
        // mergecap ordered each pair of equal timestamps raw IPv4 first, then Ethernet
        for (int i = 0; i < 40; i++) {
            assertEquals(expected.get(i), actual.get(2 * i), "raw IPv4 copy of golden frame " + (i + 1));
            assertEquals(expected.get(i), actual.get(2 * i + 1), "Ethernet copy of golden frame " + (i + 1));
        }
        Map<?, ?> summary = (Map<?, ?>) actual.get(80).get("summary");
        assertEquals("80", summary.get("packets").toString());
        assertEquals("8", summary.get("bad_icrc").toString());
    }

    private static List<Map<String, Object>> withoutFrameNumbers(List<String> lines) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (String l : lines) {
            Map<String, Object> m = Json.object(l);
            m.remove("frame");
            m.remove("time_delta"); // since the previous packet listed: the merged file interleaves two copies
            out.add(m);
        }
        return out;
    }
}
