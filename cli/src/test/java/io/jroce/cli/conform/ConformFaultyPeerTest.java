package io.jroce.cli.conform;

import io.jroce.cli.Cli;
import io.jroce.endpoint.DeviceConfig;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.fault.FaultInjector;
import io.jroce.endpoint.fault.FaultRule;
import io.jroce.testkit.Json;
import io.jroce.wire.Aeth;
import io.jroce.wire.Opcode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code jroce conform} against a jroce peer whose fault injector breaks some of its answers on their way out: the
 * tester must catch exactly those. A clean run records each case's verdict (all conform); then, per fault, the
 * cases whose answer goes through the broken packets must change verdict, as reasoned case by case below, and
 * every other case must keep its clean verdict. The faults act on the peer's outbound datagrams only, so the peer's
 * QP behaves as in the clean run: only what the tester sees differs. Some rules are written in the {@code --chaos}
 * syntax, and the last test starts a {@code jroce node --chaos} the way a person would.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ConformFaultyPeerTest {
    static final String TESTER = "127.0.62.1";
    static final String PEER = "127.0.62.2";
    static final int TCP_PORT = 46201;

    /**
     * The cases every run selects (--only takes id prefixes): those the faults below break, and controls that use
     * the same packets in other ways. Silent cases (header checks, unsolicited responses) cost a whole timeout each
     * and no fault here touches them, so they are left out.
     */
    static final List<String> SELECTION = List.of("write.only", "write.coalesced", "msn.count", "send.only", "read.only", "atomic.",
            "dup.write", "dup.atomic", "psn.", "rnr.no-receive", "err.rkey.", "err.length.mismatch", "err.access.not-granted",
            "err.length.dma-huge");
    /** What --only SELECTION selects, in catalogue order: checked, so that a renamed case cannot drop out silently. */
    static final List<String> CASES = List.of("write.only", "write.coalesced", "msn.count", "send.only", "read.only",
            "atomic.fetch-add", "atomic.cmp-swap.equal", "atomic.cmp-swap.differs", "dup.write", "dup.write.older", "dup.atomic",
            "psn.ahead", "psn.ahead.far", "psn.ahead.read", "psn.ahead.once", "psn.resume", "rnr.no-receive",
            "err.rkey.write", "err.rkey.read", "err.rkey.atomic", "err.length.mismatch", "err.access.not-granted", "err.length.dma-huge");

    static final String CONFORMS = "conforms";
    static final String DEPARTS = "departs";
    static final String CANNOT_TELL = "cannot tell";

    private static FaultInjector chaos;
    private static JrocePeer peer;
    /** Case id to verdict, against the peer with no fault. */
    private static Map<String, String> clean;

    @BeforeAll
    static void startThePeerAndRecordTheCleanVerdicts() throws Exception {
        long seed = Long.getLong("jroce.seed", System.nanoTime());
        System.out.println("ConformFaultyPeerTest fault injector seed " + seed + " (-Djroce.seed=" + seed
                + "; only the bit a corrupt rule flips depends on it)");
        chaos = FaultInjector.builder().seed(seed).build(); // no random faults: only the rules each test adds
        InetAddress address = InetAddress.getByName(PEER);
        peer = new JrocePeer(new DeviceConfig(address).filter(chaos), address, TCP_PORT, Mtu.MTU_1024);
        Map<String, Run> runs = conform(SELECTION);
        assertEquals(CASES, List.copyOf(runs.keySet()), "the cases --only " + String.join(",", SELECTION) + " selects");
        clean = new LinkedHashMap<>();
        runs.forEach((id, r) -> clean.put(id, r.verdict));
        for (String id : CASES) assertEquals(CONFORMS, clean.get(id), id + " against the clean peer: " + runs.get(id));
    }

    @AfterAll
    static void stopThePeer() {
        if (peer != null) peer.close();
    }

    @AfterEach
    void noFaultsForTheNextTest() {
        chaos.clearRules();
    }

    /** One case of a run: verdict and what was observed. */
    record Run(String verdict, String observed, String note) {
        @Override
        public String toString() {
            return verdict + " (" + observed + (note == null ? "" : "; " + note) + ")";
        }
    }

    private static Map<String, Run> conform(List<String> only) {
        Cli.Result r = Cli.run("conform", "--via", "jroce", "--bind", TESTER, "--port", "" + TCP_PORT, "--ro-region", "ro", "--reconnect",
                "--case-timeout", "500ms", "--json", "--only", String.join(",", only), PEER);
        if (r.out().isBlank()) throw new AssertionError("conform printed nothing, exit " + r.exit() + ": " + r.err());
        Map<String, Object> top = Json.object(r.out());
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> cases = (List<Map<String, Object>>) top.get("cases");
        Map<String, Run> out = new LinkedHashMap<>();
        for (Map<String, Object> c : cases) {
            out.put((String) c.get("id"), new Run((String) c.get("verdict"), (String) c.get("observed"), (String) c.get("note")));
        }
        boolean departs = out.values().stream().anyMatch(x -> x.verdict.equals(DEPARTS));
        assertEquals(departs ? 1 : 0, r.exit(), "exit status follows the departures: " + r.err());
        return out;
    }

    /**
     * Runs the selection with {@code rules} in the peer's injector and checks every case: those in {@code broken} must
     * get one of the verdicts given there, every other case its clean verdict. Returns the run for further checks.
     */
    private static Map<String, Run> expect(List<String> only, Map<String, Set<String>> broken, FaultRule... rules) {
        for (FaultRule rule : rules) chaos.addRule(rule);
        Map<String, Run> got = conform(only);
        Map<String, String> wrong = new TreeMap<>();
        for (Map.Entry<String, Run> e : got.entrySet()) {
            Set<String> want = broken.getOrDefault(e.getKey(), Set.of(clean.get(e.getKey())));
            if (!want.contains(e.getValue().verdict)) wrong.put(e.getKey(), "want " + want + ", got " + e.getValue());
        }
        assertTrue(got.keySet().containsAll(broken.keySet()), "the cases meant to break ran: " + got.keySet());
        assertEquals(Map.of(), wrong, "cases whose verdict is not the one the fault implies; the whole run: " + got);
        for (FaultRule rule : rules) assertTrue(rule.fired() > 0, "the fault never happened: " + rule);
        return got;
    }

    /** The one rule of a --chaos spec, as {@code jroce node --chaos SPEC} installs it. */
    private static FaultRule fromChaos(String spec) {
        FaultInjector parsed = FaultInjector.parse(spec);
        assertEquals(1, parsed.rules().size(), spec);
        FaultRule r = parsed.rules().get(0);
        parsed.removeRule(r);
        return r;
    }

    private static Map<String, Set<String>> departs(String... ids) {
        Map<String, Set<String>> m = new LinkedHashMap<>();
        for (String id : ids) m.put(id, Set.of(DEPARTS));
        return m;
    }

    /**
     * Every PSN sequence error NAK dropped. Broken: the cases whose expected answer is that NAK (psn.ahead, .far,
     * .read: silence instead; psn.ahead.once: silence twice; psn.resume: its first half is silent, then the WRITE at
     * the expected PSN is acknowledged as before). Kept: everything answered by an ACK, a READ response, an ATOMIC
     * ACKNOWLEDGE, an RNR NAK or another NAK code; the tester's own resynchronisation does not need the NAK, since the
     * peer still expects the PSN the tester holds.
     */
    @Test
    void droppedSequenceErrorNaksAreCaught() {
        FaultRule rule = fromChaos("out.rule=drop/nak:seq/always");
        Map<String, Run> got = expect(SELECTION, departs("psn.ahead", "psn.ahead.far", "psn.ahead.read", "psn.ahead.once", "psn.resume"), rule);
        assertEquals("none", got.get("psn.ahead").observed());
        assertEquals("none ; none", got.get("psn.ahead.once").observed());
        assertTrue(got.get("psn.resume").observed().startsWith("none ; ACK+0"), got.get("psn.resume").toString());
    }

    /**
     * Every ATOMIC ACKNOWLEDGE with one bit flipped (the receiver's ICRC check must reject it). Broken: the four atomic
     * cases. Each first learns the value with FETCH_ADD 0, whose answer is damaged too: where the random bit lands
     * decides whether the tester still recognises it (an ATOMIC ACKNOWLEDGE at its PSN with a bad ICRC: the case goes
     * on and its answer, marked !icrc, departs) or not (a flipped opcode, PSN or QPN: the case cannot tell, having no
     * value to start from). Either is a catch; conforming is not. Kept: err.rkey.atomic, whose NAK is an
     * ACKNOWLEDGE, not an ATOMIC ACKNOWLEDGE, and everything else.
     */
    @Test
    void corruptAtomicAcknowledgesAreCaught() {
        Set<String> caught = Set.of(DEPARTS, CANNOT_TELL);
        Map<String, Set<String>> broken = new LinkedHashMap<>();
        for (String id : List.of("atomic.fetch-add", "atomic.cmp-swap.equal", "atomic.cmp-swap.differs", "dup.atomic")) broken.put(id, caught);
        expect(SELECTION, broken, FaultRule.corrupt().outbound().opcode(Opcode.RC_ATOMIC_ACKNOWLEDGE).always());
    }

    /**
     * Every ATOMIC ACKNOWLEDGE claims the original value was C, with a valid ICRC. The cases read the value through
     * FETCH_ADD 0, so they always see C. fetch-add: C before, orig C, C after: "now=before" where the sum was due.
     * cmp-swap.equal: compares with C, the memory holds something else, no swap: "now=before" where the swap was due.
     * dup.atomic: the value did not grow by 3 ("added=0x0"). cmp-swap.differs keeps its verdict: no swap was due, and
     * the lie says exactly that (orig and value unchanged), so no tester looking only at the wire could see it.
     */
    @Test
    void aLyingAtomicAcknowledgeIsCaughtWhereItContradictsTheOperation() {
        long c = 0x0BADC0DE0BADC0DEL;
        byte[] value = java.nio.ByteBuffer.allocate(8).putLong(c).array();
        Map<String, Run> got = expect(SELECTION, departs("atomic.fetch-add", "atomic.cmp-swap.equal", "dup.atomic"),
                FaultRule.rewrite(Opcode.RC_ATOMIC_ACKNOWLEDGE.atomicAckEthOffset(), value).outbound().opcode(Opcode.RC_ATOMIC_ACKNOWLEDGE).always());
        assertEquals("ATOMIC-ACK+0; orig=before; now=before", got.get("atomic.fetch-add").observed());
        assertEquals("ATOMIC-ACK+0; orig=same; added=0x0", got.get("dup.atomic").observed());
        assertEquals("ATOMIC-ACK+0; orig=before; now=before", got.get("atomic.cmp-swap.differs").observed());
    }

    /**
     * Every RNR NAK dropped. Broken: rnr.no-receive (silence where the RNR NAK was due, once the peer has no receive
     * left). Kept: every other case, SENDs included (the peer has receives posted for them).
     */
    @Test
    void droppedRnrNaksAreCaught() {
        Map<String, Run> got = expect(SELECTION, departs("rnr.no-receive"), fromChaos("out.rule=drop/rnr/always"));
        assertTrue(got.get("rnr.no-receive").observed().startsWith("none; after="), got.get("rnr.no-receive").toString());
    }

    /**
     * Every ACK's MSN rewritten to one constant. Broken: msn.count, the one case that reads the MSN (two messages,
     * the MSN must grow by one). Kept: every other case, since an ACK is judged by its syndrome and PSN.
     */
    @Test
    void aFrozenMsnIsCaught() {
        Map<String, Run> got = expect(SELECTION, departs("msn.count"), FaultRule.rewrite(Opcode.RC_ACKNOWLEDGE.aethOffset() + 1,
                (byte) 0x00, (byte) 0x12, (byte) 0x34).outbound().opcode(Opcode.RC_ACKNOWLEDGE).aeth(Aeth.Kind.ACK).always());
        assertEquals("ACK+0 ; ACK+1; msn+0", got.get("msn.count").observed());
    }

    /**
     * Every remote access error NAK rewritten into an invalid request NAK. Broken: the R_Key cases, for which only a
     * remote access error is right. Kept: err.access.not-granted and err.length.dma-huge, for which the spec allows
     * either NAK, and err.length.mismatch, whose invalid request NAK the rule does not touch.
     */
    @Test
    void aWrongNakCodeIsCaughtWhereTheSpecAllowsOnlyOne() {
        FaultRule rule = fromChaos("out.rule=rewrite:12:61/nak:acc/always");
        assertEquals(Opcode.RC_ACKNOWLEDGE.aethOffset(), rule.rewriteOffset());
        Map<String, Run> got = expect(SELECTION, departs("err.rkey.write", "err.rkey.read", "err.rkey.atomic"), rule);
        assertEquals("NAK-INV+0", got.get("err.rkey.write").observed());
        assertTrue(rule.fired() >= 3, rule.toString());
    }

    /**
     * The answer to a duplicate WRITE dropped: with --only dup.write the peer's ACKs are, in order, the answer to the
     * tester's readiness probe, to dup.write's original WRITE, and to its duplicate; the third is dropped. Broken:
     * dup.write (silence where C9-105 wants the ACK again). Kept: dup.write.older, which runs after it. If the count
     * were off, dup.write would lose its original's ACK instead and could not tell, which this test would show.
     */
    @Test
    void aDuplicateAnsweredWithNothingIsCaught() {
        FaultRule rule = FaultRule.drop().outbound().opcode(Opcode.RC_ACKNOWLEDGE).aeth(Aeth.Kind.ACK).nth(3).once();
        Map<String, Run> got = expect(List.of("dup.write"), departs("dup.write"), rule);
        assertEquals(List.of("dup.write", "dup.write.older"), List.copyOf(got.keySet()));
        assertEquals("none", got.get("dup.write").observed());
        assertEquals(1, rule.fired());
    }

    /**
     * {@code jroce node --chaos out.rule=drop/nak:seq/always} with one listening QP, as a person would break a peer
     * from the command line. Broken: the four cases that expect a PSN sequence error NAK (silence instead). Kept:
     * write.only (an ACK). The spec the node prints, to replay its run, carries the rule.
     */
    @Test
    void aNodeStartedWithAChaosRuleIsCaught(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        String node = "127.0.62.3";
        int port = 46202;
        java.nio.file.Path script = dir.resolve("peer.jroce");
        java.nio.file.Files.writeString(script, """
                mr buf size=16384
                mr ro size=4096 access=local_write,remote_read
                cq cq depth=64
                qp q1 cq=cq
                listen qp=q1 publish=buf,ro mtu=1024 rd_atomic=16 timeout=60s
                """);
        java.util.concurrent.CompletableFuture<Cli.Result> peerRun = java.util.concurrent.CompletableFuture.supplyAsync(() -> Cli.run("node",
                "--bind", node, "--port", "" + port, "--linger", "2s", "--chaos", "out.rule=drop/nak:seq/always", "--script", script.toString()));
        Cli.Result r = Cli.run("conform", "--bind", TESTER, "--port", "" + port, "--case-timeout", "500ms", "--json",
                "--only", "write.only,psn.ahead", node);
        Cli.Result n = peerRun.get(60, TimeUnit.SECONDS);
        assertEquals(1, r.exit(), r.err());
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> cases = (List<Map<String, Object>>) Json.object(r.out()).get("cases");
        Map<String, String> got = new LinkedHashMap<>();
        for (Map<String, Object> c : cases) got.put((String) c.get("id"), c.get("verdict") + " " + c.get("observed"));
        Map<String, String> want = new LinkedHashMap<>();
        want.put("write.only", "conforms ACK+0; mem=written");
        want.put("psn.ahead", "departs none");
        want.put("psn.ahead.far", "departs none");
        want.put("psn.ahead.read", "departs none");
        want.put("psn.ahead.once", "departs none ; none");
        assertEquals(want, got);
        assertEquals(0, n.exit(), n.out() + n.err());
        assertTrue(n.out().contains("chaos: in.drop=0.0,") && n.out().contains(",out.rule=drop/nak:seq/always\n"), n.out());
    }
}
