package io.jroce.cli.perf;

import io.jroce.cli.conn.PeerTimeout;
import io.jroce.cli.Converters;
import io.jroce.cli.conn.ExchangeChannel;
import io.jroce.cli.conn.PerftestHandshake;
import io.jroce.cli.conn.PerftestHandshake.BwReport;
import io.jroce.cli.conn.PerftestHandshake.Keys;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.SendFlags;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.WorkCompletion;

import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A perftest bandwidth test ({@code ib_*_bw}): the loops of perftest src/perftest_resources.c
 * {@code run_iter_bw} (the active side) and {@code run_iter_bw_server} (a SEND test's receiver); the passive
 * server of READ, WRITE and atomics only waits for the end of the test.
 */
final class BandwidthRun extends PerfRun {
    private static final int PEAK_LIMIT = 20000;

    BandwidthRun(Settings s, Device dev, PrintWriter out, PrintWriter err) {
        super(s, dev, out, err);
    }

    @Override
    int traffic(PerftestHandshake hs) throws IOException, InterruptedException {
        Keys k0 = mine.get(0);
        if (!client && test.serverIsPassive()) {
            printBwHeader();
            // the server takes no part: wait (watching the traffic) for the client's end-of-test sync
            awaitPeer(hs.socket(), "the client's end of test");
            BwReport theirs = hs.finish(test, k0, new BwReport(0, 0, 0, 0, 0));
            print(PerfReport.bwLine(gbits ? PerfReport.inGbits(theirs) : theirs));
            print(PerfReport.RESULT_LINE);
            putBw(theirs, "peer");
            return done();
        }
        if (test.isSend() && !client) {
            for (int i = 0; i < qps.size(); i++) {
                for (int r = 0; r < rxDepth; r++) postRecv(i, r);
            }
        }
        hs.beforeTraffic(test, k0);
        printBwHeader();
        BwReport mineReport;
        if (client && allSizes) {
            // perftest's -a: sizes 2, 4, ... 2^23 one after the other on the same QPs, a row each; the (passive)
            // server hears of the last only, in the report exchange
            mineReport = null;
            for (long size = 2; size <= ALL_SIZES_MAX; size <<= 1) {
                msgSize = size;
                mineReport = runBwClient();
                print(PerfReport.bwLine(gbits ? PerfReport.inGbits(mineReport) : mineReport));
                flush();
            }
        } else {
            mineReport = client ? runBwClient() : runBwServer(hs.socket());
            print(PerfReport.bwLine(gbits ? PerfReport.inGbits(mineReport) : mineReport));
        }
        print(PerfReport.RESULT_LINE);
        flush();
        putBw(mineReport, "local");
        hs.socket().timeout(s.timeout());
        hs.finish(test, k0, mineReport);
        return done();
    }

    private void printBwHeader() {
        print(PerfReport.RESULT_LINE);
        print(gbits ? PerfReport.RESULT_FMT_G : PerfReport.RESULT_FMT);
        flush();
    }

    private void putBw(BwReport r, String source) {
        json.put("mode", "bw");
        json.put("results_from", source);
        json.put("iterations", r.iters());
        json.put("bw_peak_mb_s", dec(r.bwPeak(), 2));
        json.put("bw_avg_mb_s", dec(r.bwAvg(), 2));
        json.put("bw_avg_gbit_s", dec(r.bwAvg() * PerfReport.MB * 8 / 1e9, 3));
        json.put("msg_rate_mpps", dec(r.msgRate(), 6));
        if (qpIterations != null && qpIterations.length > 1) {
            json.put("qp_iterations", java.util.Arrays.stream(qpIterations).boxed().toList());
        }
    }

    /** A client's completed messages on each QP, once its run is over (null on a server). */
    private long[] qpIterations;

    /** {@code run_iter_bw}: up to tx_depth messages in flight per QP, one completion per cq_mod messages. */
    private BwReport runBwClient() throws IOException, InterruptedException {
        int q = qps.size();
        boolean dur = s.timed();
        long iters = dur ? Long.MAX_VALUE : s.iters();
        long total = dur ? 0 : iters * q;
        boolean peak = !dur && total <= PEAK_LIMIT;
        long[] tposted = new long[peak ? (int) total : 1];
        long[] tcompleted = new long[peak ? (int) total : 1];
        long[] scnt = new long[q];
        long[] ccnt = new long[q];
        long totS = 0;
        long totC = 0;
        WorkCompletion[] wcs = newWcs(64);
        SendWorkRequest[] wrs = new SendWorkRequest[q];
        for (int i = 0; i < q; i++) wrs[i] = activeWr(i);
        long start = System.nanoTime();
        long deadline = dur ? start + s.duration().toNanos() : Long.MAX_VALUE;
        SampleWindow window = dur ? sampleWindow(start) : null;
        long[] lastSignaled = new long[q];
        Progress progress = new Progress(start);
        long lastCompletionAt = start;
        boolean posting = true;
        tposted[0] = start;
        while (true) {
            long now = System.nanoTime();
            if (dur && now >= deadline) posting = false;
            if (posting) {
                for (int i = 0; i < q; i++) {
                    while (scnt[i] < iters && scnt[i] - ccnt[i] < txDepth && (!dur || System.nanoTime() < deadline)) {
                        long seq = scnt[i];
                        boolean signaled = seq % cqMod == cqMod - 1 || (!dur && seq == iters - 1);
                        SendWorkRequest wr = wrs[i].wrId(((long) i << QP_SHIFT) | seq).flags(signaled ? SendFlags.SIGNALED : 0);
                        if (peak) tposted[(int) totS] = System.nanoTime();
                        qps.get(i).postSend(wr);
                        if (signaled) lastSignaled[i] = seq + 1;
                        scnt[i]++;
                        totS++;
                    }
                }
            }
            if (!dur && totC >= total) break;
            if (dur && !posting) {
                long expect = 0; // completions still to come: up to the last signaled WR of each QP
                for (int i = 0; i < q; i++) expect += lastSignaled[i];
                if (totC >= expect) break;
                // -D ends the run on time: what is still outstanding after a short grace (a lossy or congested path
                // can hold a window of messages for many retry timeouts) is left uncounted, as perftest's -D leaves
                // it, and flushed when the QPs are destroyed
                if (now >= deadline + drainGraceNanos(s.duration())) {
                    err.printf("jroce perf: -D %s over: %d messages still outstanding are not counted%n",
                            Converters.seconds(s.duration()), expect - totC);
                    err.flush();
                    break;
                }
            }
            int n = sendCq.poll(wcs, wcs.length, 10, TimeUnit.MILLISECONDS);
            now = System.nanoTime();
            if (n == 0) {
                if (now - lastCompletionAt > s.timeout().toNanos()) {
                    throw new PeerTimeout("no completion for " + Converters.seconds(s.timeout()) + " after " + totC + " of " + (dur ? "the" : String.valueOf(total))
                            + " messages: the peer stopped or its packets do not reach us; " + qps.get(0).describe());
                }
            } else {
                lastCompletionAt = now;
            }
            for (int k = 0; k < n; k++) {
                WorkCompletion wc = wcs[k];
                checkOk(wc);
                int i = (int) (wc.wrId() >>> QP_SHIFT);
                long upTo = (wc.wrId() & SEQ_MASK) + 1;
                long fresh = upTo - ccnt[i];
                if (fresh <= 0) continue;
                ccnt[i] = upTo;
                for (long f = 0; f < fresh; f++) {
                    if (peak) tcompleted[(int) totC] = now;
                    totC++;
                }
                if (window != null) window.count(now, fresh);
            }
            progress.tick(now, totC, dur ? -1 : total, msgSize, start, lastCompletionAt, ccnt);
        }
        long end = System.nanoTime();
        qpIterations = ccnt;
        if (dur) {
            // as perftest's -D: what completed inside the sample window, over the window's length
            tposted[0] = window.from();
            tcompleted[0] = window.to();
            return PerfReport.bw(msgSize, window.count(), tposted, tcompleted, false, cqMod);
        }
        if (!peak) tcompleted[0] = end;
        return PerfReport.bw(msgSize, totC, tposted, tcompleted, peak, cqMod);
    }

    /** How long a timed client waits past its duration for the messages still in flight: a tenth of the duration, 0.2 to 2 s. */
    static long drainGraceNanos(Duration d) {
        return Math.max(200_000_000L, Math.min(2_000_000_000L, d.toNanos() / 10));
    }

    /** {@code run_iter_bw_server}: count receives (re-posting them) until every message arrived, or (-D) the client's end-of-test sync. */
    private BwReport runBwServer(ExchangeChannel sock) throws IOException, InterruptedException {
        int q = qps.size();
        boolean dur = s.timed();
        long total = dur ? Long.MAX_VALUE : s.iters() * q;
        long[] posted = new long[q];
        for (int i = 0; i < q; i++) posted[i] = rxDepth;
        WorkCompletion[] wcs = newWcs(64);
        long rcnt = 0;
        long first = 0;
        long last = 0;
        long start = System.nanoTime();
        SampleWindow window = dur ? sampleWindow(start) : null;
        long lastActivity = start;
        long lastSockCheck = start;
        Progress progress = new Progress(start);
        while (rcnt < total) {
            int n = recvCq.poll(wcs, wcs.length, 10, TimeUnit.MILLISECONDS);
            long now = System.nanoTime();
            for (int k = 0; k < n; k++) {
                WorkCompletion wc = wcs[k];
                checkOk(wc);
                if (rcnt == 0) first = now;
                rcnt++;
                int i = (int) (wc.wrId() >>> QP_SHIFT);
                if (dur || posted[i] + 1 <= s.iters()) {
                    postRecv(i, posted[i]);
                    posted[i]++;
                }
            }
            if (n > 0) {
                last = now;
                lastActivity = now;
                if (window != null) window.count(now, n);
            }
            if (dur && now - lastSockCheck > 20_000_000L) {
                lastSockCheck = now;
                if (sock.poll(Duration.ofMillis(1))) break; // the client finished and is syncing
            }
            if (n == 0 && now - lastActivity > s.timeout().toNanos()) {
                throw new PeerTimeout("no message for " + Converters.seconds(s.timeout()) + " after " + rcnt + (dur ? "" : " of " + total)
                        + ": the client stopped or its packets do not reach us; " + qps.get(0).describe());
            }
            progress.tick(now, rcnt, dur ? -1 : total, s.size(), rcnt == 0 ? start : first, last);
        }
        if (dur) return PerfReport.bw(s.size(), window.count(), new long[] {window.from()}, new long[] {window.to()}, false, cqMod);
        long end = System.nanoTime();
        long[] tp = {rcnt == 0 ? start : first};
        long[] tc = {Math.max(end, tp[0] + 1)};
        return PerfReport.bw(s.size(), rcnt, tp, tc, false, cqMod);
    }

}
