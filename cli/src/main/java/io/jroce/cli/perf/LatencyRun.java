package io.jroce.cli.perf;

import io.jroce.cli.conn.PeerTimeout;
import io.jroce.cli.Converters;
import io.jroce.cli.conn.PerftestHandshake;
import io.jroce.cli.conn.PerftestHandshake.Keys;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.WorkCompletion;

import java.io.IOException;
import java.io.PrintWriter;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.concurrent.locks.LockSupport;

/**
 * A perftest latency test ({@code ib_*_lat}), one message in flight: the loops of perftest
 * src/perftest_resources.c {@code run_iter_lat} (READ and atomics), {@code run_iter_lat_send} and
 * {@code run_iter_lat_write}; the passive server of READ and atomics only waits for the end of the test.
 */
final class LatencyRun extends PerfRun {
    LatencyRun(Settings s, Device dev, PrintWriter out, PrintWriter err) {
        super(s, dev, out, err);
    }

    @Override
    int traffic(PerftestHandshake hs) throws IOException, InterruptedException {
        Keys k0 = mine.get(0);
        if (!client && test.serverIsPassive()) {
            // read/atomic _lat: only the client posts; the server waits in its closing sync
            awaitPeer(hs.socket(), "the client's end of test");
            hs.finish(test, k0, null);
            print(PerfReport.RESULT_LINE);
            json.put("mode", "lat");
            json.put("results_from", "none");
            return done();
        }
        if (test.isSend()) {
            for (int r = 0; r < rxDepth; r++) postRecv(0, r);
        }
        hs.beforeTraffic(test, k0);
        print(PerfReport.RESULT_LINE);
        print(s.timed() ? PerfReport.RESULT_FMT_LAT_DUR : PerfReport.RESULT_FMT_LAT);
        flush();
        long[] tposted = s.timed() ? new long[1] : new long[(int) s.iters()];
        long[] result = switch (test) {
            case SEND_LAT -> latSend(tposted);
            case WRITE_LAT -> latWrite(tposted);
            default -> latRead(tposted);
        };
        long iters = result[0];
        boolean roundTrip = !test.isReadOrAtomic();
        json.put("mode", "lat");
        json.put("results_from", "local");
        if (s.timed()) {
            PerfReport.LatDur d = PerfReport.latDuration(s.size(), iters, result[1], roundTrip);
            print(PerfReport.latDurLine(d));
            json.put("iterations", d.iters());
            json.put("t_avg_us", dec(d.tAvg(), 2));
            json.put("tps", dec(d.tps(), 2));
        } else {
            PerfReport.Lat l = PerfReport.lat(s.size(), tposted, (int) s.iters(), roundTrip);
            print(PerfReport.latLine(l));
            json.put("iterations", l.iters());
            json.put("t_min_us", dec(l.tMin(), 2));
            json.put("t_max_us", dec(l.tMax(), 2));
            json.put("t_typical_us", dec(l.tTypical(), 2));
            json.put("t_avg_us", dec(l.tAvg(), 2));
            json.put("t_stdev_us", dec(l.tStdev(), 2));
            json.put("t_99_us", dec(l.p99(), 2));
            json.put("t_99_9_us", dec(l.p999(), 2));
        }
        print(PerfReport.RESULT_LINE);
        flush();
        hs.socket().timeout(s.timeout());
        hs.finish(test, k0, null);
        return done();
    }

    /** {@code run_iter_lat} (READ and atomics): one request at a time; returns {iterations, elapsed ns}. */
    private long[] latRead(long[] tposted) throws IOException, InterruptedException {
        SendWorkRequest wr = activeWr(0).signaled();
        QueuePair qp = qps.get(0);
        WorkCompletion[] wc = newWcs(1);
        boolean dur = s.timed();
        long start = System.nanoTime();
        long deadline = dur ? start + s.duration().toNanos() : Long.MAX_VALUE;
        SampleWindow window = dur ? sampleWindow(start) : null;
        long scnt = 0;
        Progress progress = new Progress(start);
        while (dur ? System.nanoTime() < deadline : scnt < s.iters()) {
            long t = System.nanoTime();
            if (!dur) tposted[(int) scnt] = t;
            qp.postSend(wr.wrId(scnt));
            scnt++;
            awaitOne(sendCq, wc, scnt);
            if (window != null) window.count(System.nanoTime(), 1);
            progress.tickLat(t, scnt, dur ? -1 : s.iters(), s.size(), !test.isReadOrAtomic());
        }
        return dur ? new long[] {window.count(), window.length()} : new long[] {scnt, System.nanoTime() - start};
    }

    /** {@code run_iter_lat_send}: the client sends first; each side answers every receive with a send. */
    private long[] latSend(long[] tposted) throws IOException, InterruptedException {
        SendWorkRequest wr = activeWr(0).signaled();
        QueuePair qp = qps.get(0);
        WorkCompletion[] wc = newWcs(1);
        boolean dur = s.timed();
        long iters = dur ? Long.MAX_VALUE : s.iters();
        long start = System.nanoTime();
        long deadline = dur ? start + s.duration().toNanos() : Long.MAX_VALUE;
        SampleWindow window = dur ? sampleWindow(start) : null;
        long scnt = 0;
        long rcnt = 0;
        long posted = rxDepth;
        Progress progress = new Progress(start);
        while (scnt < iters || rcnt < iters) {
            if (dur && System.nanoTime() >= deadline) break;
            if (rcnt < iters && !(scnt < 1 && client)) {
                if (!awaitOne(recvCq, wc, rcnt, deadline)) break;
                rcnt++;
                if (window != null) window.count(System.nanoTime(), 1);
                if (dur || rcnt + rxDepth <= iters) {
                    postRecv(0, posted++);
                }
            }
            if (scnt < iters) {
                long t = System.nanoTime();
                if (!dur) tposted[(int) scnt] = t;
                qp.postSend(wr.wrId(scnt));
                scnt++;
                if (!awaitOne(sendCq, wc, scnt, dur ? deadline + s.timeout().toNanos() : Long.MAX_VALUE)) break;
                progress.tickLat(t, scnt, dur ? -1 : iters, s.size(), !test.isReadOrAtomic());
            }
        }
        return dur ? new long[] {window.count(), window.length()} : new long[] {scnt, System.nanoTime() - start};
    }

    /**
     * {@code run_iter_lat_write}: the SERVER writes first. Each side writes its buffer (last byte = its send
     * count) to the peer's buffer and watches the last byte of its own published buffer for the peer's count.
     */
    private long[] latWrite(long[] tposted) throws IOException, InterruptedException {
        SendWorkRequest wr = activeWr(0).signaled();
        QueuePair qp = qps.get(0);
        MemoryRegion mr = mrs.get(0);
        ByteBuffer buf = mr.buffer();
        int postIdx = (int) s.size() - 1;
        int pollIdx = (int) (buffSize + s.size() - 1);
        WorkCompletion[] wc = newWcs(1);
        boolean dur = s.timed();
        long iters = dur ? Long.MAX_VALUE : s.iters();
        long start = System.nanoTime();
        long deadline = dur ? start + s.duration().toNanos() : Long.MAX_VALUE;
        SampleWindow window = dur ? sampleWindow(start) : null;
        long scnt = 0;
        long rcnt = 0;
        long ccnt = 0;
        Progress progress = new Progress(start);
        while (scnt < iters || ccnt < iters || rcnt < iters) {
            if (dur && System.nanoTime() >= deadline) break;
            if (rcnt < iters && !(scnt < 1 && !client)) {
                rcnt++;
                if (!spinFor(buf, pollIdx, (byte) rcnt, deadline)) {
                    rcnt--;
                    break;
                }
                if (window != null) window.count(System.nanoTime(), 1);
            }
            if (scnt < iters) {
                long t = System.nanoTime();
                if (!dur) tposted[(int) scnt] = t;
                buf.put(postIdx, (byte) ++scnt);
                qp.postSend(wr.wrId(scnt));
                progress.tickLat(t, scnt, dur ? -1 : iters, s.size(), !test.isReadOrAtomic());
            }
            if (ccnt < iters) {
                if (!awaitOne(sendCq, wc, ccnt, dur ? deadline + s.timeout().toNanos() : Long.MAX_VALUE)) break;
                ccnt++;
            }
        }
        return dur ? new long[] {window.count(), window.length()} : new long[] {scnt, System.nanoTime() - start};
    }

    /** Spins until {@code buf[idx] == value}; false if {@code deadline} passed; throws after --timeout. */
    private boolean spinFor(ByteBuffer buf, int idx, byte value, long deadline) throws IOException {
        long start = System.nanoTime();
        long limit = s.timeout().toNanos();
        int spins = 0;
        while (true) {
            VarHandle.acquireFence(); // re-read the byte the event loop writes
            if (buf.get(idx) == value) return true;
            // an invoked device: this thread receives the peer's WRITE itself (nothing else polls while it spins)
            if (dev.progress()) {
                VarHandle.acquireFence();
                if (buf.get(idx) == value) return true;
                Thread.yield();
                continue;
            }
            if (++spins < 512) {
                Thread.onSpinWait();
                continue;
            }
            long now = System.nanoTime();
            if (now >= deadline) return false;
            if (now - start > limit) {
                throw new PeerTimeout("the peer's RDMA WRITE #" + (value & 0xFF) + " (mod 256) did not arrive within " + Converters.seconds(s.timeout())
                        + ": it stopped or its packets do not reach us; " + qps.get(0).describe());
            }
            // the event loop needs a CPU to deliver the write: after a short spin, give ours away
            if (now - start > 1_000_000L) LockSupport.parkNanos(20_000L);
            else Thread.yield();
        }
    }

    private boolean awaitOne(CompletionQueue cq, WorkCompletion[] wc, long count) throws IOException, InterruptedException {
        return awaitOne(cq, wc, count, Long.MAX_VALUE);
    }

    /** Waits for one completion (success required); false if {@code deadline} passed first. */
    private boolean awaitOne(CompletionQueue cq, WorkCompletion[] wc, long count, long deadline) throws IOException, InterruptedException {
        return awaitOne(cq, wc, count, deadline, cq == recvCq);
    }
}
