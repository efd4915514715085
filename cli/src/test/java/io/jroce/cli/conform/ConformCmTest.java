package io.jroce.cli.conform;

import io.jroce.cli.Cli;
import io.jroce.testkit.Json;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code jroce conform} through the connection manager: the connection made with CM MADs of its own, and the cm group. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ConformCmTest {
    static final String TESTER = "127.0.61.1";

    private static Map<String, Map<String, Object>> cases(Cli.Result r) {
        Map<String, Object> top = Json.object(r.out());
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> cs = (List<Map<String, Object>>) top.get("cases");
        Map<String, Map<String, Object>> out = new LinkedHashMap<>();
        for (Map<String, Object> c : cs) out.put((String) c.get("id"), c);
        return out;
    }

    /**
     * A jroce rping server: conform connects through its CM (REQ, REP, RTU held back, RTU), runs what an rping server
     * allows (no memory is advertised, SENDs would end it), every cm case conforms, and the DREQ at the end lets the
     * server end normally.
     */
    @Test
    void aJroceRpingServerConformsThroughTheConnectionManager() throws Exception {
        String server = "127.0.61.2";
        int port = 46101;
        CompletableFuture<Cli.Result> srv = CompletableFuture.supplyAsync(() ->
                Cli.run("rping", "-s", "-a", server, "-p", "" + port, "--timeout", "60"));
        Cli.Result r = Cli.run("conform", "--via", "rping", "--bind", TESTER, "--port", "" + port, "--case-timeout", "500ms", "--json", server);
        System.out.println(r.out());
        System.err.println(r.err());
        Cli.Result s = srv.get(60, TimeUnit.SECONDS);
        assertEquals(0, r.exit(), r.err());
        assertEquals(0, s.exit(), "rping server: " + s.out() + s.err());
        Map<String, Map<String, Object>> cs = cases(r);
        assertTrue(((String) Json.object(r.out()).get("peer")).startsWith("rping server at 127.0.61.2 rdma_cm port 46101"), r.out());
        int cm = 0;
        for (Map.Entry<String, Map<String, Object>> e : cs.entrySet()) {
            String verdict = (String) e.getValue().get("verdict");
            assertFalse(verdict.equals("departs"), e.getKey() + ": " + e.getValue());
            if (e.getValue().get("group").equals("cm") && !e.getKey().equals("cm.rep.resources-zero")) {
                cm++;
                assertEquals("conforms", verdict, e.getKey() + ": " + e.getValue());
            }
        }
        assertTrue(cm >= 10, "only " + cm + " cm cases");
        // the REQ asking 0/0 needs a second connection, which an rping server would take as its client's
        assertEquals("cannot tell", cs.get("cm.rep.resources-zero").get("verdict"));
        // jroce's CM answers as rdma_rxe's does, where the spec allows more than one answer
        assertEquals("REP", cs.get("cm.rtu.lost").get("observed"));
        assertEquals("none", cs.get("cm.req.duplicate").get("observed"));
        assertEquals("GETRESP-0x000c; echo=ok", cs.get("cm.mad.classportinfo").get("observed"));
        // the QP of the connection answered: the zero-length RDMA WRITE probe and the cases that need no region
        assertEquals("conforms", cs.get("hdr.uc-opcode").get("verdict"));
        assertEquals("conforms", cs.get("resp.unsolicited-ack").get("verdict"));
        // an rping server advertises no memory and takes no SEND but its own
        assertEquals("cannot tell", cs.get("write.only").get("verdict"));
        assertEquals("the peer published no memory region", cs.get("write.only").get("note"));
        assertEquals("cannot tell", cs.get("send.only").get("verdict"));
        assertTrue(((String) cs.get("send.only").get("note")).startsWith("rping's server reads every SEND"), cs.get("send.only").toString());
    }

    /**
     * A jroce perf write -R server: conform makes the exchange connection (REQ asking 0/0), speaks perftest's exchange
     * over SEND/RECV on it, connects the test QP through the CM (REQ asking 255/255), learns the server's buffer from
     * the keys, and runs what perftest write allows; none departs, the cm cases conform, and the server ends its test
     * normally after the closing syncs and the DREQs.
     */
    @Test
    void aJrocePerfWriteRdmaCmServerConformsThroughTheConnectionManager() throws Exception {
        String server = "127.0.61.4";
        int port = 46102;
        CompletableFuture<Cli.Result> srv = CompletableFuture.supplyAsync(() ->
                Cli.run("perf", "write", "-R", "--bind", server, "-p", "" + port, "--timeout", "60"));
        Cli.Result r = Cli.run("conform", "--via", "perftest-write-cm", "--bind", TESTER, "--port", "" + port, "--case-timeout", "500ms",
                "--json", server);
        System.out.println(r.out());
        System.err.println(r.err());
        Cli.Result s = srv.get(60, TimeUnit.SECONDS);
        assertEquals(0, r.exit(), r.err());
        assertEquals(0, s.exit(), "perf server: " + s.out() + s.err());
        Map<String, Map<String, Object>> cs = cases(r);
        assertTrue(((String) Json.object(r.out()).get("peer")).startsWith("perftest ib_write_bw -R server at 127.0.61.4 rdma_cm port 46102"),
                r.out());
        int cm = 0;
        for (Map.Entry<String, Map<String, Object>> e : cs.entrySet()) {
            String verdict = (String) e.getValue().get("verdict");
            assertFalse(verdict.equals("departs"), e.getKey() + ": " + e.getValue());
            if (e.getValue().get("group").equals("cm")) {
                cm++;
                assertEquals("conforms", verdict, e.getKey() + ": " + e.getValue());
            }
        }
        assertTrue(cm >= 10, "only " + cm + " cm cases");
        assertEquals("REP; resources=0/0", cs.get("cm.rep.resources-zero").get("observed"));
        // the server's buffer, learnt from the keys perftest sends over the exchange QP, takes RDMA WRITEs
        for (String id : List.of("write.only", "write.multi", "dup.write", "psn.ahead", "psn.resume", "hdr.bad-icrc", "err.rkey.write")) {
            assertEquals("conforms", cs.get(id).get("verdict"), id + " in " + cs.get(id));
        }
        assertEquals("cannot tell", cs.get("read.only").get("verdict"));
    }

    /** Without --port, --via rping asks rping's port 7174; a peer whose CM never answers ends the run with a message. */
    @Test
    void rpingDefaultsToItsPortAndSilenceIsAClearError() {
        Cli.Result r = Cli.run("conform", "--via", "rping", "--bind", TESTER, "--connect-timeout", "1s", "127.0.61.9");
        assertEquals(1, r.exit(), r.out() + r.err());
        assertEquals(List.of("jroce conform: no answer from the connection manager at 127.0.61.9 (UDP port 4791, QP 1) to a REQ for port "
                + "7174: is the server listening there?"), r.errLines());
    }

    /** The cm cases are left out where the QP came another way, unless asked for by name; --list shows them. */
    @Test
    void theCmGroupIsListed() {
        Cli.Result r = Cli.run("conform", "--list", "--only", "cm.");
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.outLines().size() >= 10, r.out());
        for (String l : r.outLines()) {
            assertTrue(l.startsWith("cm."), l);
            assertTrue(l.contains("drivers/infiniband/core/"), l);
            assertTrue(l.contains("IBTA"), l);
        }
    }
}
