package io.jroce.cli.node;

import io.jroce.cli.node.SessionSyntax.ScriptException;
import io.jroce.cli.node.SessionSyntax.Statement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The checker that runs before any traffic: every command accepted in its documented forms, and each kind
 * of mistake reported at its line and column.
 */
class SessionCheckerTest {
    /** A connected QP 'q' on CQ 'c', a 4 KiB region 'b' and an 8-byte 'w'. */
    private static final String CONNECTED = "cq c\nqp q\nmr b size=4k\nmr w size=8\nlisten publish=b,w\n";

    private static List<Statement> check(String script) throws ScriptException {
        return SessionChecker.checkScript(SessionSyntax.parseScript(script), false, null);
    }

    static Stream<Arguments> validLines() {
        return Stream.of(
                Arguments.of("mr", "mr x size=64k access=local_write,remote_read"),
                Arguments.of("mr", "mr x size=0x1000 access=all"),
                Arguments.of("dereg", "dereg b"),
                Arguments.of("fill", "fill b text=\"hello world\" offset=16"),
                Arguments.of("fill", "fill b hex=de:ad:be:ef len=4k"),
                Arguments.of("fill", "fill b pattern=random seed=7 offset=1k len=1k"),
                Arguments.of("fill", "fill w u64=-1"),
                Arguments.of("dump", "dump b"),
                Arguments.of("dump", "dump b offset=8 len=32 as=text"),
                Arguments.of("dump", "dump w as=u64"),
                Arguments.of("compare", "compare b sha256=" + "00".repeat(32)),
                Arguments.of("compare", "compare b pattern=seq len=256"),
                Arguments.of("compare", "compare w u64=0xffffffffffffffff"),
                Arguments.of("cq", "cq d depth=16"),
                Arguments.of("qp", "qp r cq=c send_wr=16 recv_wr=32 sge=2 inline=128 sig_all access=remote_read,local_write"),
                Arguments.of("qp", "cq d\nqp r send_cq=c recv_cq=d"),
                Arguments.of("listen", "qp r cq=c\nlisten qp=r port=40000 mtu=4096 psn=0x123456 rd_atomic=16 timeout=5s ack_timeout=12 retry_cnt=3"),
                Arguments.of("connect", "qp r cq=c\nconnect qp=r host=192.0.2.1 port=40001 publish=b timeout=500ms rnr_retry=7 min_rnr_timer=1"),
                Arguments.of("recv", "recv mr=b offset=64 len=64 wr_id=0xffffffffffffffff"),
                Arguments.of("recv", "recv"),
                Arguments.of("send", "send mr=b len=16 imm=0x1234 solicited inline wr_id=9"),
                Arguments.of("send", "send mr=b inv=remote_name fence"),
                Arguments.of("send", "send inv=0xdeadbeef unsignaled=false"),
                Arguments.of("send", "send"),
                Arguments.of("write", "write mr=b remote=dst roffset=4k imm=-1 unsignaled"),
                Arguments.of("write", "write mr=b len=8 remote=dst rkey=0xdeadbeef inline"),
                Arguments.of("read", "read qp=q mr=b offset=2k len=2k remote=src fence"),
                Arguments.of("cas", "cas mr=w remote=word compare=1 swap=2"),
                Arguments.of("fadd", "fadd mr=b offset=8 remote=word roffset=8 add=-3"),
                Arguments.of("disconnect", "disconnect"),
                Arguments.of("disconnect", "disconnect qp=q timeout=2s"),
                Arguments.of("poll", "poll cq=c max=4"),
                Arguments.of("wait", "wait count=2 timeout=1.5s"),
                Arguments.of("expect", "expect wr_id=7 status=SUCCESS opcode=RECV len=4096 imm=0x1234 inv=none qp=q timeout=250ms"),
                Arguments.of("expect", "expect status=IBV_WC_WR_FLUSH_ERR qp=q"),
                Arguments.of("expect", "expect opcode=rdma_read"),
                Arguments.of("counters", "counters"),
                Arguments.of("counters", "counters chaos"),
                Arguments.of("stats", "stats"),
                Arguments.of("modify", "modify state=ERR"),
                Arguments.of("modify", "modify qp=q min_rnr_timer=4 access=remote_write,local_write"),
                Arguments.of("query", "query"),
                Arguments.of("chaos", "chaos drop=0.1,reorder=0.05,seed=3"),
                Arguments.of("chaos", "chaos in.drop=0.1 out.dup=0.2"),
                Arguments.of("chaos", "chaos off"),
                Arguments.of("chaos", "chaos out.rule=drop/nak:seq/always"),
                Arguments.of("chaos", "chaos drop=0.01 out.rule=rewrite:12:61/op:RC_ACKNOWLEDGE/nak:acc/always"),
                Arguments.of("echo", "echo rkey=$b.rkey qpn $q.qpn size=$c.size \"quoted # text\""),
                Arguments.of("sleep", "sleep 0ms"),
                Arguments.of("history", "history"),
                Arguments.of("help", "help"),
                Arguments.of("help", "help expect"),
                Arguments.of("exit", "exit"),
                Arguments.of("exit", "exit 3"));
    }

    @ParameterizedTest(name = "{1}")
    @MethodSource("validLines")
    void everyCommandIsAcceptedInItsDocumentedForms(String verb, String line) throws ScriptException {
        List<Statement> out = check(CONNECTED + line);
        assertEquals(verb, out.get(out.size() - 1).verb());
    }

    @Test
    void eachCommandIsListedOnceAndItsUsageStartsWithItsVerb() {
        List<String> verbs = SessionLanguage.COMMANDS.stream().map(c -> c.syntax().verb()).toList();
        assertEquals(verbs, SessionLanguage.verbs());
        assertEquals(Set.copyOf(verbs).size(), verbs.size(), verbs.toString());
        for (SessionCommand c : SessionLanguage.COMMANDS) {
            assertTrue(c.syntax().usage().startsWith(c.syntax().verb() + (c.syntax().usage().equals(c.syntax().verb()) ? "" : " ")),
                    c.syntax().usage());
        }
    }

    @Test
    void theValidLinesCoverEveryCommand() {
        Set<String> covered = new HashSet<>();
        validLines().forEach(a -> covered.add((String) a.get()[0]));
        assertEquals(Set.copyOf(SessionLanguage.verbs()), covered);
    }

    @Test
    void bareFlagsAndLeftOutQueuesAreFilledIn() throws ScriptException {
        List<Statement> out = check(CONNECTED + "send mr=b solicited\nexpect\n");
        Statement send = out.get(5);
        assertEquals("true", send.arg("solicited").literal());
        assertEquals("q", send.arg("qp").literal());
        assertTrue(send.positional().isEmpty());
        assertEquals("c", out.get(6).arg("cq").literal());
    }

    static Stream<Arguments> mistakes() {
        return Stream.of(
                Arguments.of("sned qp=q", 1, 1, "unknown command 'sned' (did you mean 'send'?)"),
                Arguments.of("mr b size=8\nfill b txt=hi", 2, 8, "unknown argument 'txt' for fill (did you mean 'text'?)"),
                Arguments.of("mr b size=4q", 1, 11, "size: '4q' is not a size"),
                Arguments.of("mr b", 1, 0, "mr needs size=..."),
                Arguments.of("mr", 1, 0, "mr needs a name"),
                Arguments.of("mr b size=8 extra", 1, 13, "unexpected word 'extra'"),
                Arguments.of("mr b size=0", 1, 11, "size must be 1 byte"),
                Arguments.of("mr b size=8 access=remote_write", 1, 20, "need local_write"),
                Arguments.of("mr b size=8 access=execute", 1, 20, "unknown access flag 'execute'"),
                Arguments.of("mr b size=4k\n# comment\n\nmr b size=1k", 4, 4, "'b' is already the mr of line 1"),
                Arguments.of("mr 9lives size=8", 1, 4, "is not a name"),
                Arguments.of("fill nothere text=x", 1, 6, "no memory region 'nothere' here"),
                Arguments.of("mr b size=8\nfill b text=abc hex=00", 2, 17, "fill takes exactly one of"),
                Arguments.of("mr b size=8\nfill b", 2, 0, "fill takes exactly one of"),
                Arguments.of("mr b size=8\nfill b offset=4 text=abcdefgh", 2, 15, "offset 4 + length 8 exceeds the region (8 bytes, line 1)"),
                Arguments.of("mr b size=8\nfill b offset=9 pattern=seq", 2, 15, "beyond the end of the region"),
                Arguments.of("mr b size=8\nfill b text=x seed=3", 2, 15, "seed= goes with pattern=random"),
                Arguments.of("mr b size=8\nfill b pattern=stripes", 2, 16, "unknown pattern 'stripes'"),
                Arguments.of("mr b size=8\nfill b file=no/such/file", 2, 13, "does not exist or cannot be read"),
                Arguments.of("mr b size=8\ncompare b sha256=abcd", 2, 18, "is not a SHA-256"),
                Arguments.of("mr b size=8\ndump b as=pdf", 2, 11, "unknown format 'pdf'"),
                Arguments.of("cq c depth=0", 1, 12, "depth must be 1..4194304"),
                Arguments.of("qp q", 1, 0, "create one first ('cq NAME')"),
                Arguments.of("cq c\ncq d\nqp q", 3, 0, "there are 2 completion queues (c, d); name one with cq=NAME"),
                Arguments.of("cq c\nmr b size=8\nqp q cq=b", 3, 9, "'b' is a mr (line 2), not a completion queue"),
                Arguments.of("cq c\nqp q send_cq=c", 2, 0, "send_cq= and recv_cq= go together"),
                Arguments.of("cq c\nqp q sge=33", 2, 10, "sge must be 1..32"),
                Arguments.of("cq c\nqp q\nsend", 3, 1, "qp q is not connected yet"),
                Arguments.of("cq c\nqp q\nqp r\nrecv", 4, 0, "recv: there are 2 queue pairs (q, r); name one with qp=NAME"),
                Arguments.of("cq c\nqp q\nconnect", 3, 0, "connect needs host=ADDR (or run the node with --peer ADDR)"),
                Arguments.of("cq c\nqp q\nconnect host=example.org", 3, 14, "is not an IPv4 address"),
                Arguments.of("cq c\nqp q\nlisten\nlisten", 4, 0, "qp q is already connected (line 3)"),
                Arguments.of("cq c\nqp q\nlisten publish=nope", 3, 16, "publish: 'nope' is not a memory region"),
                Arguments.of("cq c\nqp q\nlisten mtu=1500", 3, 12, "is not a path MTU"),
                Arguments.of("cq c\nqp q\nlisten rd_atomic=129", 3, 18, "rd_atomic must be 0..128"),
                Arguments.of("cq c\nqp q\nlisten retry_cnt=9", 3, 18, "retry_cnt is 3 bits"),
                Arguments.of("cq c\nqp q\nlisten port=70000", 3, 13, "is not a port"),
                Arguments.of("cq c\nqp q\nlisten timeout=soon", 3, 16, "is not a duration"),
                Arguments.of(CONNECTED + "send imm=1 inv=2", 6, 12, "imm= and inv= exclude each other"),
                Arguments.of(CONNECTED + "send len=4", 6, 6, "len= needs mr="),
                Arguments.of(CONNECTED + "write mr=b", 6, 0, "write needs remote=..."),
                Arguments.of(CONNECTED + "write mr=b remote=x imm=0x100000000", 6, 25, "is not a 32-bit number"),
                Arguments.of(CONNECTED + "cas mr=b offset=4 remote=w compare=1 swap=2", 6, 17, "must be 8-byte aligned"),
                Arguments.of(CONNECTED + "cas mr=w remote=w compare=1", 6, 0, "cas needs swap=..."),
                Arguments.of(CONNECTED + "read mr=w len=16 remote=w", 6, 15, "exceeds the region"),
                Arguments.of(CONNECTED + "expect status=WR_FLUSH_ERR len=3", 6, 28, "a failed completion carries only wr_id, status and qp"),
                Arguments.of(CONNECTED + "expect status=GOOD", 6, 15, "unknown status 'GOOD'"),
                Arguments.of(CONNECTED + "expect opcode=WRITE", 6, 15, "unknown opcode 'WRITE'"),
                Arguments.of(CONNECTED + "expect qp=c", 6, 11, "'c' is a cq (line 1), not a queue pair"),
                Arguments.of(CONNECTED + "wait count=0", 6, 12, "count must be at least 1"),
                Arguments.of("expect", 1, 0, "expect needs a completion queue"),
                Arguments.of(CONNECTED + "modify", 6, 0, "modify needs at least one attribute"),
                Arguments.of(CONNECTED + "modify state=BROKEN", 6, 14, "unknown QP state 'BROKEN'"),
                Arguments.of("counters nodes", 1, 10, "unknown counter set 'nodes'"),
                Arguments.of("chaos drop=2", 1, 7, "not a probability"),
                Arguments.of("chaos jitter=0.1", 1, 7, "unknown key 'jitter'"),
                Arguments.of("chaos", 1, 0, "usage: chaos SPEC"),
                Arguments.of("chaos out.rule=drop/nak:late", 1, 7, "nak code 'late' is not a whole number"),
                Arguments.of("echo $nope.rkey", 1, 6, "$nope is not defined here"),
                Arguments.of("mr b size=8\necho $b.qpn", 2, 6, "a mr has no field 'qpn'"),
                Arguments.of("mr b size=8\ndump $b.len", 2, 6, "a name cannot be a $reference"),
                Arguments.of("sleep", 1, 0, "usage: sleep DUR"),
                Arguments.of("sleep forever", 1, 7, "is not a duration"),
                Arguments.of("help me", 1, 6, "no command 'me'"),
                Arguments.of("exit 300", 1, 6, "is not an exit status"),
                Arguments.of("stats now", 1, 7, "unexpected word 'now' for stats"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("mistakes")
    void mistakesAreReportedAtTheirLineAndColumn(String script, int line, int column, String message) {
        ScriptException e = assertThrows(ScriptException.class, () -> check(script));
        assertTrue(e.getMessage().contains(message), "message: " + e.getMessage());
        assertEquals(line, e.line, e.getMessage());
        assertEquals(column, e.column, e.getMessage());
    }

    @Test
    void theFirstErrorStopsTheCheck() {
        ScriptException e = assertThrows(ScriptException.class, () -> check("mr b size=8\nbogus\nalso bogus"));
        assertEquals(2, e.line);
    }

    @Test
    void aNameIsFreeAgainAfterDeregistration() throws ScriptException {
        check("mr b size=8\ndereg b\nmr b size=16\nfill b len=16 pattern=seq");
        ScriptException e = assertThrows(ScriptException.class, () -> check("mr b size=8\ndereg b\ndump b"));
        assertEquals(3, e.line);
    }

    @Test
    void filesAreLookedUpBesideTheScript(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("payload.bin"), "abc");
        SessionChecker.checkScript(SessionSyntax.parseScript("mr b size=8\nfill b file=payload.bin"), false, dir);
    }

    @Test
    void connectMayLeaveOutTheHostWhenTheNodeHasAPeer() throws ScriptException {
        SessionChecker.checkScript(SessionSyntax.parseScript("cq c\nqp q\nconnect"), true, null);
    }

    @Test
    void interactiveLinesAreCheckedAgainstWhatExistsSoFar() throws ScriptException {
        SessionChecker.Symbols symbols = new SessionChecker.Symbols();
        new SessionChecker(symbols, false, null).check(SessionSyntax.parseLine("mr b size=8", 1));
        SessionChecker.Symbols attempt = symbols.copy();
        new SessionChecker(attempt, false, null).check(SessionSyntax.parseLine("mr c size=8", 2));
        // the attempt was not committed: 'c' does not exist in the session's table
        assertThrows(ScriptException.class, () -> new SessionChecker(symbols, false, null).check(SessionSyntax.parseLine("dump c", 3)));
        new SessionChecker(symbols, false, null).check(SessionSyntax.parseLine("dump b", 3));
    }

    @Test
    void valuesParseAsDocumented() {
        assertEquals(4096L, SessionLanguage.size("4k"));
        assertEquals(1L << 20, SessionLanguage.size("1M"));
        assertEquals(0x1000L, SessionLanguage.size("0x1000"));
        assertEquals(1_000_000L, SessionLanguage.size("1_000_000"));
        assertEquals(-1L, SessionLanguage.u64("0xffffffffffffffff"));
        assertEquals(-1L, SessionLanguage.u64("18446744073709551615"));
        assertEquals(-3L, SessionLanguage.u64("-3"));
        assertEquals(0xFFFFFFFFL, SessionLanguage.unsigned("-1", 32, "x"));
        assertEquals(java.time.Duration.ofMillis(1500), SessionLanguage.duration("1.5s"));
        assertEquals(java.time.Duration.ofNanos(250_000), SessionLanguage.duration("250us"));
        assertEquals(java.time.Duration.ofMinutes(2), SessionLanguage.duration("2m"));
        assertEquals(java.time.Duration.ofSeconds(3), SessionLanguage.duration("3"));
        assertEquals(io.jroce.endpoint.Access.ALL, SessionLanguage.access("local_write,write,remote_read,ATOMIC"));
        assertEquals("seq", SessionLanguage.suggest("sq", List.of("seq", "zero", "random")));
    }
}
