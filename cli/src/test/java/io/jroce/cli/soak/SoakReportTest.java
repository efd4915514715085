package io.jroce.cli.soak;

import org.junit.jupiter.api.Test;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The soak's memory verdict and its message patterns. */
class SoakReportTest {
    private static final long MIB = 1 << 20;

    private static SoakSample sample(long rssMib, long heapMib) {
        return new SoakSample(rssMib * MIB, heapMib * MIB, 0, 0, 0, 0, new long[SoakOp.ALL.length], new long[SoakOp.ALL.length]);
    }

    /** A report with a row per minute, client and server alike, and its memory problems. */
    private static List<String> judge(long[] rss, long[] heap, StringBuilder judged) {
        SoakReport r = new SoakReport(new PrintWriter(new StringWriter()), Duration.ofMinutes(1), 10, sample(0, 0), sample(0, 0));
        for (int i = 0; i < rss.length; i++) r.row(i + 1, sample(rss[i], heap[i]), sample(rss[i], heap[i]));
        return r.memoryProblems(judged);
    }

    @Test
    void memoryIsJudgedFromMinuteTwoToTheLastRow() {
        StringBuilder judged = new StringBuilder();
        // minute 1 is warm-up (ignored); 200 MiB at minute 2, 219 at the end: +9.5 %
        assertEquals(List.of(), judge(new long[] {150, 200, 210, 219}, new long[] {20, 20, 20, 20}, judged));
        assertTrue(judged.toString().startsWith("memory from minute 2 to minute 4"), judged.toString());
        // 221 MiB: +10.5 %, for each process
        List<String> problems = judge(new long[] {150, 200, 210, 221}, new long[] {20, 20, 20, 20}, new StringBuilder());
        assertEquals(2, problems.size(), problems.toString());
        assertTrue(problems.get(0).startsWith("client RSS grew 10.5 %"), problems.toString());
    }

    @Test
    void aSmallHeapMayGrowByFourMebibytes() {
        assertEquals(List.of(), judge(new long[] {100, 100, 100}, new long[] {10, 10, 14}, new StringBuilder()));
        List<String> problems = judge(new long[] {100, 100, 100}, new long[] {10, 10, 15}, new StringBuilder());
        assertEquals(2, problems.size(), problems.toString());
        assertTrue(problems.get(0).startsWith("client heap after GC grew 50.0 %"), problems.toString());
    }

    @Test
    void aRunWithoutARowAfterMinuteTwoIsNotJudgedOnMemory() {
        StringBuilder judged = new StringBuilder();
        assertEquals(List.of(), judge(new long[] {100, 500}, new long[] {10, 90}, judged));
        assertEquals("memory not judged: no row after minute 2", judged.toString());
    }

    @Test
    void patternsDifferByQpOperationAndRoundAndEveryChangedByteIsFound() {
        SoakPattern p = new SoakPattern(7, 4096);
        assertNotEquals(p.seed(0, SoakOp.SEND, 0), p.seed(1, SoakOp.SEND, 0));
        assertNotEquals(p.seed(0, SoakOp.SEND, 0), p.seed(0, SoakOp.WRITE, 0));
        assertNotEquals(p.seed(0, SoakOp.SEND, 0), p.seed(0, SoakOp.SEND, 1));
        assertEquals(p.seed(3, SoakOp.READ, 9), new SoakPattern(7, 16).seed(3, SoakOp.READ, 9), "a function of its arguments");
        ByteBuffer region = ByteBuffer.allocate(4096);
        long seed = p.seed(2, SoakOp.WRITE, 5);
        p.fill(region, 0, 4096, seed);
        assertNull(p.check(region, 0, 4096, seed));
        assertNotNull(p.check(region, 0, 4096, p.seed(2, SoakOp.WRITE, 5 + 2)), "the message of another round does not pass");
        for (int at : new int[] {0, 1, 2047, 4095}) {
            region.put(at, (byte) (region.get(at) ^ 1));
            String why = p.check(region, 0, 4096, seed);
            assertNotNull(why);
            assertTrue(why.startsWith("byte " + at + " of 4096 is "), why);
            region.put(at, (byte) (region.get(at) ^ 1));
        }
    }

    @Test
    void lengthsSpanOneByteToTheLargest() {
        SoakPattern p = new SoakPattern(1, 8);
        int max = 65536;
        int small = 0;
        int large = 0;
        for (int r = 0; r < 20_000; r++) {
            int len = SoakPattern.length(p.seed(0, SoakOp.SEND, r), max);
            assertTrue(len >= 1 && len <= max, "length " + len);
            if (len <= 64) small++;
            if (len > max / 2) large++;
        }
        // log-uniform over 17 bands: about 7/17 at most 64 bytes, 1/17 above 32 KiB
        assertTrue(small > 20_000 * 5 / 17 && large > 20_000 / 34, small + " small, " + large + " large");
    }
}
