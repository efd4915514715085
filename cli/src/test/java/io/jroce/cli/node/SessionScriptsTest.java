package io.jroce.cli.node;

import io.jroce.cli.Cli.Result;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static io.jroce.cli.node.SessionHarness.pair;
import static io.jroce.cli.node.SessionHarness.show;
import static io.jroce.cli.node.SessionHarness.single;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Sessions run from files, the way a person runs them: the reference's examples (read from docs/session-language.md, so they
 * cannot rot), the shipped examples in cli/examples, and sessions that fail on purpose. Two nodes run in this
 * JVM on two threads, on 127.0.2.1 and 127.0.2.2.
 */
public class SessionScriptsTest {
    @TempDir
    Path dir;

    /** The checkout: surefire runs in the cli module. */
    public static Path repo() {
        Path here = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        return Files.exists(here.resolve("README.md")) && Files.isDirectory(here.resolve("cli")) ? here : here.getParent();
    }

    /** The reference of the language: its table and its examples. */
    static String reference() throws Exception {
        return Files.readString(repo().resolve("docs/session-language.md"));
    }

    static List<String> exampleSessions() throws Exception {
        String doc = reference();
        List<String> blocks = new ArrayList<>();
        Matcher m = Pattern.compile("```jroce\\R(.*?)```", Pattern.DOTALL).matcher(doc);
        while (m.find()) blocks.add(m.group(1));
        return blocks;
    }

    @Test
    void theReferenceTableIsTheLanguage() throws Exception {
        String doc = reference();
        String rows = String.join("\n", SessionLanguage.referenceRows());
        assertTrue(doc.contains("| command | what it does |\n|---|---|\n" + rows + "\n"),
                "docs/session-language.md's table must be exactly:\n" + rows);
    }

    @Test
    void theReferenceExamplesRun() throws Exception {
        List<String> blocks = exampleSessions();
        assertTrue(blocks.size() >= 3, "docs/session-language.md has jroce examples: " + blocks.size());
        int ran = 0;
        for (int i = 0; i < blocks.size(); i++) {
            String block = blocks.get(i);
            if (block.contains("\nlisten")) {
                String active = blocks.get(++i);
                assertTrue(active.contains("\nconnect"), "a listening example is followed by its connecting peer:\n" + active);
                Result[] r = pair(dir, block, active, List.of(), List.of());
                assertEquals(0, r[0].exit(), "example (passive side):\n" + block + show(r[0]));
                assertEquals(0, r[1].exit(), "example (active side):\n" + active + show(r[1]));
                ran += 2;
            } else {
                Result r = single(dir, block);
                assertEquals(0, r.exit(), "example:\n" + block + show(r));
                ran++;
            }
        }
        assertEquals(blocks.size(), ran);
    }

    @Test
    void theShippedExamplesExchangeEveryOperation() throws Exception {
        Path examples = repo().resolve("cli/src/main/resources/io/jroce/cli/examples");
        Result[] r = pair(examples.resolve("server.jroce"), examples.resolve("client.jroce"), List.of("--mtu", "4096", "--results"),
                List.of("--mtu", "4096", "--results"));
        assertEquals(0, r[0].exit(), show(r[0]));
        assertEquals(0, r[1].exit(), show(r[1]));
        String client = r[1].out();
        for (String op : List.of("op=SEND size=4096", "op=SEND_WITH_IMM flags=solicited size=16", "op=SEND flags=inline size=5",
                "op=RDMA_WRITE_WITH_IMM size=524288", "op=RDMA_READ size=1048576", "op=ATOMIC_FETCH_AND_ADD size=8",
                "op=ATOMIC_CMP_AND_SWP size=8", "op=SEND_WITH_INV size=4")) {
            assertTrue(client.contains("result " + op + " "), op + " in\n" + client);
        }
        assertTrue(client.contains("result summary expects=9 compares=5 failures=0"), client);
        assertTrue(r[0].out().contains("result summary expects=6 compares=6 failures=0"), r[0].out());
        assertTrue(r[0].out().contains("counters device 127.0.2.1: packets_in="), r[0].out());
        assertEquals("", r[0].err() + r[1].err());
    }

    @Test
    void aFailedExpectationStopsTheSessionNamingItsLine() throws Exception {
        String passive = """
                cq c
                qp q
                mr b size=4k
                recv mr=b wr_id=1
                listen
                expect wr_id=1 opcode=RECV len=4096
                echo not reached
                """;
        String active = """
                cq c
                qp q
                mr b size=4k
                connect
                fill b text=hello
                send mr=b len=5
                expect opcode=SEND
                """;
        Result[] r = pair(dir, passive, active, List.of(), List.of());
        assertEquals(1, r[0].exit(), show(r[0]));
        String q = qpn(r[0].out(), "q");
        assertEquals(dir.resolve("a.jroce") + ":6: expect failed: len is 5, expected 4096 (completion: wr_id=1 SUCCESS RECV len=5 qp=" + q + ")",
                r[0].err().strip());
        assertFalse(r[0].out().contains("not reached"), r[0].out());
        assertTrue(r[0].out().contains("stats q: qp " + q + " RTS"), r[0].out());
        assertTrue(r[0].out().contains("counters device 127.0.2.1"), r[0].out());
        assertEquals(0, r[1].exit(), show(r[1]));
    }

    @Test
    void theConnectionManagerConnectsTheSessionsQp() throws Exception {
        String passive = """
                cq c
                qp q
                mr box size=4k
                recv mr=box offset=2k len=64 wr_id=1
                listen cm publish=box
                expect wr_id=1 opcode=RECV len=5
                compare box len=11 text="hello, RDMA"
                disconnect
                """;
        String active = """
                cq c
                qp q
                mr b size=4k
                connect cm
                fill b text="hello, RDMA"
                write mr=b len=11 remote=box
                expect opcode=RDMA_WRITE
                send mr=b len=5
                expect opcode=SEND
                disconnect
                """;
        Result[] r = pair(dir, passive, active, List.of(), List.of());
        assertEquals(0, r[0].exit(), show(r[0]));
        assertEquals(0, r[1].exit(), show(r[1]));
        assertTrue(r[0].out().contains("listen q: connected by the CM"), r[0].out());
        assertTrue(r[0].out().contains("disconnect q: DISCONNECTED, QP ERR"), r[0].out());
        assertTrue(r[1].out().contains("disconnect q: DISCONNECTED, QP ERR"), r[1].out());
        assertTrue(r[1].out().contains("connect q: connected by the CM, QPN " + qpn(r[1].out(), "q") + " to 127.0.2.1 QPN "
                + qpn(r[0].out(), "q") + ", MTU 1024"), r[1].out());
        assertTrue(r[1].out().contains("peer regions: box (4096 bytes); extensions: selective-repeat,congestion-control"), r[1].out());
        // agreed in the REQ's and REP's private data, and in force on both QPs
        assertTrue(r[0].out().contains("peer regions: none; extensions: selective-repeat,congestion-control"), r[0].out());
    }

    /**
     * A {@code connect cm} that the peer refuses because it does not listen yet (REJ 8) is made again until it does.
     * The REJ moves the QP to ERR, as rdma_cm does, which flushes the receive posted before connect; the retry must
     * post it again and drop its WR_FLUSH_ERR, or the receive that the connection was made for fails later. The
     * passive side listens for the second QP a little after the first connection's message, so the active side's
     * REQ for it comes first (the test is about the retry, so it is skipped in the rare run where it does not).
     */
    @Test
    void aRefusedConnectionManagerConnectKeepsItsPostedReceives() throws Exception {
        int first = SessionHarness.port();
        int second = SessionHarness.port();
        String passive = """
                cq c
                qp a
                qp b
                mr m size=64
                recv qp=a mr=m wr_id=1
                listen qp=a cm port=%d
                expect wr_id=1 opcode=RECV len=4
                sleep 300ms
                listen qp=b cm port=%d
                fill m text=bye
                send qp=b mr=m len=3 wr_id=2
                expect wr_id=2 opcode=SEND
                """.formatted(first, second);
        String active = """
                cq c
                qp a
                qp b
                mr m size=64
                mr r size=64
                recv qp=b mr=r wr_id=9
                connect qp=a cm port=%d
                send qp=a mr=m len=4 wr_id=1
                expect wr_id=1 opcode=SEND
                connect qp=b cm port=%d
                expect wr_id=9 opcode=RECV len=3
                compare r len=3 text=bye
                """.formatted(first, second);
        Result[] r = pair(dir, passive, active, List.of(), List.of());
        org.junit.jupiter.api.Assumptions.assumeTrue(r[1].out().contains("connect b: 127.0.2.1 port " + second + " refused (REJ 8"),
                "the REQ for b came after the peer listened: nothing refused, nothing to retry\n" + show(r[1]));
        assertEquals(0, r[1].exit(), show(r[1]));
        assertEquals(0, r[0].exit(), show(r[0]));
        assertTrue(r[1].out().contains("expect ok: wr_id=9 SUCCESS RECV len=3"), r[1].out());
    }

    @Test
    void aConnectionManagerConnectRefusesWhatTheCmDecides() throws Exception {
        Result r = SessionHarness.single(dir, "cq c\nqp q\nconnect cm host=127.0.2.9 psn=5\n");
        assertEquals(2, r.exit(), show(r));
        assertTrue(r.err().contains("psn= is not for cm"), show(r));
    }

    @Test
    void aRemoteAccessErrorCompletesWithItsStatusOnBothSides() throws Exception {
        String passive = """
                cq c
                qp q
                mr box size=64
                recv mr=box wr_id=1
                listen publish=box
                # the bad WRITE puts our QP in ERR too, which flushes the receive
                expect wr_id=1 status=WR_FLUSH_ERR
                """;
        String active = """
                cq c
                qp q
                mr b size=64
                connect
                write mr=b len=8 remote=box rkey=0xdeadbeef
                expect status=REM_ACCESS_ERR
                query
                """;
        Result[] r = pair(dir, passive, active, List.of(), List.of());
        assertEquals(0, r[0].exit(), show(r[0]));
        assertEquals(0, r[1].exit(), show(r[1]));
        assertTrue(r[1].out().contains("expect ok: wr_id=5 REM_ACCESS_ERR"), r[1].out());
        assertTrue(r[1].out().contains("state ERR"), r[1].out());
    }

    @Test
    void trafficSurvivesInjectedFaults() throws Exception {
        StringBuilder passive = new StringBuilder("cq c\nqp q\nmr box size=64k\nrecv mr=box len=8 wr_id=1\nlisten publish=box ack_timeout=14\n"
                + "expect wr_id=1 opcode=RECV len=4 timeout=30s\ncompare box len=64k pattern=seq\n");
        StringBuilder active = new StringBuilder("cq c\nqp q\nmr b size=64k\nconnect ack_timeout=14\nfill b pattern=seq\n");
        for (int i = 0; i < 4; i++) {
            active.append("write mr=b remote=box\nexpect opcode=RDMA_WRITE timeout=30s\nread mr=b remote=box\nexpect opcode=RDMA_READ len=65536 timeout=30s\n");
        }
        active.append("compare b pattern=seq\nsend mr=b len=4\nexpect opcode=SEND timeout=30s\ncounters chaos\n");
        Result[] r = pair(dir, passive.toString(), active.toString(), List.of("--chaos", "drop=0.05,reorder=0.05,dup=0.02,seed=11"),
                List.of("--chaos", "drop=0.05,reorder=0.05,dup=0.02,seed=12"));
        assertEquals(0, r[0].exit(), show(r[0]) + "\n=== active side\n" + show(r[1]));
        assertEquals(0, r[1].exit(), show(r[1]) + "\n=== passive side\n" + show(r[0]));
        assertTrue(r[1].out().contains("chaos: in.drop=0.05"), r[1].out());
        Matcher dropped = Pattern.compile("(in|out)\\.dropped=(\\d+)").matcher(r[0].out() + r[1].out());
        long drops = 0;
        while (dropped.find()) drops += Long.parseLong(dropped.group(2));
        assertTrue(drops > 0, "the injector dropped something:\n" + r[0].out() + r[1].out());
    }

    @Test
    void modifyingToErrorFlushesEveryReceive() throws Exception {
        Result r = single(dir, """
                cq c
                qp q
                mr b size=4k
                recv mr=b len=1k wr_id=1
                recv mr=b offset=1k len=1k wr_id=2
                recv mr=b offset=2k len=1k wr_id=3
                modify state=ERR
                expect wr_id=2 status=WR_FLUSH_ERR qp=q
                wait
                poll
                poll
                query
                stats
                """);
        assertEquals(0, r.exit(), show(r));
        String out = r.out();
        assertTrue(out.contains("modify q: INIT -> ERR"), out);
        assertTrue(out.contains("expect ok: wr_id=2 WR_FLUSH_ERR"), out);
        assertTrue(out.contains("wc wr_id=1 WR_FLUSH_ERR"), out);
        assertTrue(out.contains("wc wr_id=3 WR_FLUSH_ERR"), out);
        assertTrue(out.contains("poll c: empty"), out);
        assertTrue(out.contains("query q: QPN " + qpn(out, "q") + " state ERR"), out);
        assertTrue(out.contains("stats q: qp " + qpn(out, "q") + " ERR"), out);
    }

    @Test
    void localCommandsShowWhatTheyDid() throws Exception {
        Files.writeString(dir.resolve("payload.txt"), "abc");
        Result r = single(dir, """
                mr buf size=64 access=local_write
                fill buf text="hi\\tthere"
                dump buf len=8 as=text
                fill buf offset=16 len=16 pattern=seq
                dump buf offset=16 len=16
                fill buf offset=32 u64=0x0102030405060708
                dump buf offset=32 len=8 as=u64
                fill buf offset=40 len=6 file=payload.txt
                compare buf offset=40 len=6 text=abcabc
                compare buf offset=16 len=16 sha256=be45cb2605bf36bebde684841a28f0fd43c69850a3dce5fedba69928ee3a8991
                echo buf at $buf.addr, $buf.len bytes, lkey $buf.lkey
                help fadd
                history
                counters all
                """);
        assertEquals(0, r.exit(), show(r));
        String out = r.out();
        assertTrue(out.contains("mr buf: 64 bytes at 0x"), out);
        assertTrue(out.contains("dump buf: \"hi\\tthere\""), out);
        // pattern=seq counts from the start of the range: byte i of the range is i mod 256
        assertTrue(out.contains("  00000010  00 01 02 03 04 05 06 07  08 09 0a 0b 0c 0d 0e 0f  |................|"), out);
        assertTrue(out.contains("72623859790382856 (0x0102030405060708)"), out);
        assertTrue(out.contains("compare buf: ok, 6 bytes at offset 40"), out);
        assertTrue(out.contains("compare buf: ok, sha256 of 16 bytes at offset 16"), out);
        assertTrue(out.matches("(?s).*buf at 0x[0-9a-f]+, 64 bytes, lkey 0x[0-9a-f]+\n.*"), out);
        assertTrue(out.contains("fadd [qp=QP] mr=MR"), out);
        assertTrue(out.contains("   12  help fadd"), out);
        assertTrue(out.contains("counters device 127.0.2.1: packets_in=0 bytes_in=0"), out);
    }

    @Test
    void aCompareFailureNamesTheFirstDifference() throws Exception {
        Result r = single(dir, "mr b size=16\nfill b text=abc\ncompare b text=abd\necho not reached\n");
        assertEquals(1, r.exit(), show(r));
        assertEquals(dir.resolve("single.jroce") + ":3: compare b failed: byte at offset 2 is 0x63, expected 0x64; 1 of 3 bytes differ",
                r.err().strip());
        assertFalse(r.out().contains("not reached"));

        Result sha = single(dir, "mr b size=16\ncompare b sha256=" + "ab".repeat(32) + "\n");
        assertEquals(1, sha.exit(), show(sha));
        assertTrue(sha.err().contains("/single.jroce:2: compare b failed: the SHA-256 of 16 bytes at offset 0 is "
                + "374708fff7719dd5979ec875d56cd2286f6d3cf7ec317a3b25632aab28ec37bb, expected abab"), sha.err());
    }

    @Test
    void aCompletionThatNeverComesTimesOut() throws Exception {
        Result r = single(dir, "cq c\nqp q\nexpect timeout=50ms\n");
        assertEquals(1, r.exit(), show(r));
        assertTrue(r.err().startsWith(dir.resolve("single.jroce") + ":3: expect: no completion on cq c within 50 ms; qp q INIT"), r.err());
    }

    @Test
    void exitEndsTheSessionWithItsStatus() throws Exception {
        Result r = single(dir, "echo one\nexit 3\necho two\n");
        assertEquals(3, r.exit(), show(r));
        assertTrue(r.out().startsWith("one\n"), r.out());
        assertFalse(r.out().contains("two"), r.out());
    }

    @Test
    void chaosChangesWhileTheSessionRuns() throws Exception {
        Result r = single(dir, "chaos drop=0.25 dup=0.1\ncounters chaos\nchaos off\n", "--chaos", "seed=9");
        assertEquals(0, r.exit(), show(r));
        assertTrue(r.out().contains("chaos: in.drop=0.25,in.dup=0.1,"), r.out());
        assertTrue(r.out().contains(",seed=9\n"), r.out());
        assertTrue(r.out().contains("counters chaos: in.passed=0 in.dropped=0"), r.out());
        assertTrue(r.out().contains("chaos: off"), r.out());
    }

    @Test
    void aVerbTheEndpointRefusesStopsTheSession() throws Exception {
        Result r = single(dir, "cq c\nqp q recv_wr=1\nmr b size=64\nrecv mr=b\nrecv mr=b\n");
        assertEquals(1, r.exit(), show(r));
        assertTrue(r.err().startsWith(dir.resolve("single.jroce") + ":5: recv: receive queue of QP 0x"), r.err());
        assertTrue(r.err().matches("(?s).*:5: recv: receive queue of QP 0x[0-9a-f]+ is full \\(1 entries\\).*"), r.err());
        assertFalse(r.err().contains("\tat "), r.err());
    }

    /**
     * UD in a session: two UD QPs of one node, in RTS from creation; a SEND with immediate to an address and QPN
     * arrives behind the 40-byte GRH area with the sender's QPN; a wrong Q_Key is dropped and counted; the checker
     * refuses a UD send without a destination, RDMA on a UD QP, connect on it, and UD arguments on an RC QP.
     */
    @Test
    void udQueuePairsSendToAnAddressAndQpn() throws Exception {
        Result r = single(dir, """
                cq c
                qp u1 ud
                qp u2 ud qkey=0x11111111
                mr buf size=4k
                recv qp=u2 mr=buf len=1064 wr_id=1
                fill buf offset=2k text=hello
                send qp=u1 mr=buf offset=2k len=5 imm=9 to=%s qpn=$u2.qpn wr_id=7
                expect cq=c wr_id=7 opcode=SEND len=5
                expect cq=c wr_id=1 opcode=RECV len=45 imm=9 qp=u2
                compare buf offset=40 len=5 text=hello
                compare buf offset=33 len=3 hex=000201
                send qp=u1 mr=buf len=5 to=%s qpn=$u2.qpn qkey=5 unsignaled
                sleep 200ms
                query qp=u1
                """.formatted(SessionHarness.A, SessionHarness.A));
        assertEquals(0, r.exit(), show(r));
        assertTrue(r.out().matches("(?s).*qp u1: QPN 0x[0-9a-f]{6}, RTS, UD qkey 0x11111111.*"), r.out());
        assertTrue(r.out().contains("query u1: UD qkey 0x11111111"), r.out());
        assertTrue(r.err().contains("drop_qkey=1") || r.out().contains("drop_qkey=1"), show(r));
        String[][] refused = {
            {"cq c\nqp u ud\nmr b size=64\nsend mr=b\n", "is a UD QP: name the destination with to=ADDR qpn=N"},
            {"cq c\nqp u ud\nmr b size=64\nread mr=b remote=x\n", "it posts send only"},
            {"cq c\nqp u ud\nconnect host=127.0.2.2\n", "it needs no connection"},
            {"cq c\nqp u qkey=5\n", "qkey= is for a UD QP: add ud"},
            {"cq c\nqp u\nmr b size=64\nconnect host=127.0.2.2\nsend mr=b to=127.0.2.2 qpn=5\n", "to= is for a UD QP"},
        };
        for (String[] x : refused) {
            Result e = single(dir, x[0]);
            assertEquals(2, e.exit(), x[0] + show(e));
            assertTrue(e.err().contains(x[1]), x[1] + " in " + e.err());
        }
    }

    /** rdma_cm's UDP port space, as udaddy: listen cm answers a SIDR_REQ, connect cm resolves the peer's UD QP. */
    @Test
    void udQueuePairsResolveTheirPeerWithTheConnectionManager() throws Exception {
        String passive = """
                cq c
                qp u ud
                mr buf size=4k
                recv qp=u mr=buf len=1064 wr_id=1
                recv qp=u mr=buf offset=2k len=1064 wr_id=2
                listen cm qp=u
                expect wr_id=1 opcode=RECV len=45
                compare buf offset=40 len=5 text=hello
                expect wr_id=2 opcode=RECV len=45
                compare buf offset=2088 len=5 text=again
                """;
        String active = """
                cq c
                qp u ud
                mr b size=4k
                connect cm qp=u
                fill b text=hello
                send qp=u mr=b len=5 wr_id=7
                expect wr_id=7 opcode=SEND
                fill b text=again
                send qp=u mr=b len=5 wr_id=8
                expect wr_id=8 opcode=SEND
                """;
        Result[] r = pair(dir, passive, active, List.of(), List.of());
        assertEquals(0, r[0].exit(), show(r[0]));
        assertEquals(0, r[1].exit(), show(r[1]));
        assertTrue(r[0].out().contains("listen u: answered 127.0.2.2 with QPN " + qpn(r[0].out(), "u") + ", Q_Key 0x11111111"), r[0].out());
        assertTrue(r[1].out().contains("connect u: resolved by SIDR, 127.0.2.1 QPN " + qpn(r[0].out(), "u") + ", Q_Key 0x11111111"), r[1].out());
        Result e = single(dir, "cq c\nqp u ud\nmr b size=64\nlisten cm publish=b\n");
        assertEquals(2, e.exit(), show(e));
        assertTrue(e.err().contains("publish= is not for a UD QP"), show(e));
    }

    /** The number the session's QP {@code name} got ("qp NAME: QPN 0x..."): a device numbers its QPs from a random start. */
    private static String qpn(String out, String name) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("qp " + name + ": QPN (0x[0-9a-f]{6})").matcher(out);
        assertTrue(m.find(), "no 'qp " + name + ": QPN' in\n" + out);
        return m.group(1);
    }
}
