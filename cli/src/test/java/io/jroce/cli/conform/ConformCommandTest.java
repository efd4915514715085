package io.jroce.cli.conform;

import io.jroce.cli.Cli;
import io.jroce.endpoint.Mtu;
import io.jroce.testkit.Json;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code jroce conform} against a jroce endpoint in this JVM: jroce must conform on every case. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ConformCommandTest {
    static final String TESTER = "127.0.26.1";
    static final String PEER = "127.0.26.2";

    /**
     * Cases where jroce departs today, with the answer it gives: asserted exactly, so that this test fails (and the
     * entry must go) once the endpoint is fixed.
     */
    static final Map<String, String> KNOWN_DEPARTURES = Map.of();

    @Test
    void jroceConformsOnEveryCase() throws Exception {
        try (JrocePeer peer = new JrocePeer(InetAddress.getByName(PEER), Mtu.MTU_1024)) {
            Cli.Result r = Cli.run("conform", "--via", "jroce", "--bind", TESTER, "--port", "" + peer.tcpPort, "--ro-region", "ro",
                    "--reconnect", "--case-timeout", "200ms", "--json", PEER);
            System.out.println(r.out());
            System.err.println(r.err());
            Map<String, Object> top = Json.object(r.out());
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> cases = (List<Map<String, Object>>) top.get("cases");
            assertTrue(cases.size() >= 40, "only " + cases.size() + " cases");
            Map<String, String> departures = new LinkedHashMap<>();
            for (Map<String, Object> c : cases) {
                String id = (String) c.get("id");
                String verdict = (String) c.get("verdict");
                if (verdict.equals("departs")) departures.put(id, (String) c.get("observed"));
                else if (!verdict.equals("conforms")) {
                    throw new AssertionError("case " + id + ": " + verdict + " (" + c.get("note") + ")");
                }
            }
            assertEquals(KNOWN_DEPARTURES, departures);
            assertEquals(KNOWN_DEPARTURES.isEmpty() ? 0 : 1, r.exit(), r.err());
        }
    }

    @Test
    void listsTheCatalogue() {
        Cli.Result r = Cli.run("conform", "--list");
        assertEquals(0, r.exit(), r.err());
        assertEquals(Catalogue.all().size(), r.outLines().size());
        assertTrue(r.outLines().size() >= 40);
        assertTrue(r.out().contains("err.rkey.write"), r.out());
    }

    @Test
    void badUsageIsOneLineAndExitTwo() {
        Cli.Result r = Cli.run("conform", "--via", "carrier-pigeon", PEER);
        assertEquals(2, r.exit());
        assertEquals(1, r.errLines().size(), r.err());
        assertTrue(r.err().contains("not one of jroce, perftest-write"), r.err());
        Cli.Result none = Cli.run("conform", "--only", "nothing.", PEER);
        assertEquals(2, none.exit());
        assertTrue(none.err().contains("selects no case"), none.err());
    }
}
