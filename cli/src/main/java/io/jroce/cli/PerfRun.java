package io.jroce.cli;

import io.jroce.cli.conn.OobSocket;
import io.jroce.cli.conn.PeerInfo;
import io.jroce.cli.conn.PerftestHandshake;
import io.jroce.cli.conn.PerftestHandshake.BwReport;
import io.jroce.cli.conn.PerftestHandshake.Keys;
import io.jroce.cli.conn.PerftestHandshake.Test;
import io.jroce.endpoint.Access;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.RcConnect;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;

import java.io.IOException;
import java.io.PrintWriter;
import java.lang.invoke.VarHandle;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * One perftest-compatible run, server or client (see {@link PerfCommand}): the TCP exchange of
 * {@link PerftestHandshake}, the resources perftest would create (one buffer per QP of twice
 * {@code BUFF_SIZE(size, cycle_buffer)}, the peer working on the second half), and the traffic loops of
 * perftest src/perftest_resources.c ({@code run_iter_bw}, {@code run_iter_bw_server}, {@code run_iter_lat},
 * {@code run_iter_lat_send}, {@code run_iter_lat_write}).
 */
final class PerfRun {
    /** What the command decided. */
    record Settings(Test test, InetAddress host, InetAddress local, int port, long size, long iters, double durationSeconds,
                    Mtu mtu, int qps, Duration timeout, boolean json, int qpTimeout, AtomicType atomicType) {
        boolean duration() {
            return durationSeconds > 0;
        }

        boolean client() {
            return host != null;
        }
    }

    /** perftest's {@code -A}: the atomic operation the client posts (the server's side is passive). */
    enum AtomicType { FETCH_AND_ADD, CMP_AND_SWAP }

    private static final int DEF_TX_BW = 128;
    private static final int DEF_RX_SEND = 512;
    private static final int DEF_CQ_MOD = 100;
    private static final int MSG_SIZE_CQ_MOD_LIMIT = 8192;
    private static final int PEAK_LIMIT = 20000;
    private static final long ATOMIC_ADD_VALUE = 1;
    /** perftest posts CMP_AND_SWAP with compare 0 (the zeroed WR) and swap {@code ATOMIC_SWAP_VALUE}, 0. */
    private static final long ATOMIC_SWAP_VALUE = 0;
    private static final long QP_SHIFT = 48;
    private static final long SEQ_MASK = (1L << QP_SHIFT) - 1;

    private final Settings s;
    private final Device dev;
    private final PrintWriter out;
    private final PrintWriter err;
    private final boolean client;
    private final Test test;
    private final Map<String, Object> json = new LinkedHashMap<>();

    private int cycleBuffer;
    private int cacheLine;
    private Mtu mtu;
    private long buffSize;
    private int txDepth;
    private int rxDepth;
    private int cqMod;
    private CompletionQueue sendCq;
    private CompletionQueue recvCq;
    private final List<QueuePair> qps = new ArrayList<>();
    private final List<MemoryRegion> mrs = new ArrayList<>();
    private final List<Keys> mine = new ArrayList<>();
    private List<Keys> theirs;

    PerfRun(Settings s, Device dev, PrintWriter out, PrintWriter err) {
        this.s = s;
        this.dev = dev;
        this.out = out;
        this.err = err;
        this.client = s.client();
        this.test = s.test();
    }

    /** Runs the test; returns the exit code. */
    int run() throws IOException, InterruptedException {
        PerftestHandshake hs;
        if (client) {
            hs = PerftestHandshake.connect(s.host(), s.port(), null, s.timeout());
        } else {
            print("");
            print("************************************");
            print("* Waiting for client to connect... *");
            print("************************************");
            flush();
            hs = PerftestHandshake.accept(s.local(), s.port(), s.timeout());
        }
        try (hs) {
            PerftestHandshake.Preamble pre = hs.preamble(PerftestHandshake.DEFAULT_CYCLE_BUFFER, PerftestHandshake.DEFAULT_CACHE_LINE, s.mtu());
            cycleBuffer = pre.cycleBuffer();
            cacheLine = pre.cacheLineSize();
            mtu = pre.mtu();
            createResources();
            printTestInfo();
            theirs = hs.setUp(test, mine, this::connectAll);
            printAddresses();
            json.put("test", test.tool());
            json.put("role", client ? "client" : "server");
            json.put("peer_version", hs.peerVersion());
            json.put("qps", s.qps());
            json.put("mtu", mtu.bytes());
            json.put("size", s.size());
            if (test == Test.ATOMIC_BW || test == Test.ATOMIC_LAT) json.put("atomic_type", s.atomicType().name());
            json.put("local", addresses(mine));
            json.put("remote", addresses(theirs));
            return test.isLatency() ? latency(hs) : bandwidth(hs);
        } finally {
            flush();
        }
    }

    // ---------------------------------------------------------------------------------------------
    // setup

    private void createResources() {
        boolean bw = !test.isLatency();
        long itersCap = s.duration() ? Long.MAX_VALUE : s.iters();
        txDepth = (int) Math.min(bw ? DEF_TX_BW : 1, itersCap);
        rxDepth = test.isSend() ? (int) Math.min(DEF_RX_SEND, itersCap) : 1;
        cqMod = bw ? DEF_CQ_MOD : 1;
        if (s.size() > MSG_SIZE_CQ_MOD_LIMIT) cqMod = 1;
        cqMod = Math.max(1, Math.min(cqMod, txDepth));
        buffSize = Math.max(s.size(), cycleBuffer);
        sendCq = dev.createCq(txDepth * s.qps() + 16);
        recvCq = dev.createCq(rxDepth * s.qps() + 16);
        ProtectionDomain pd = dev.allocPd();
        int outReads = test.isReadOrAtomic() ? QueuePair.MAX_RD_ATOMIC : 1;
        for (int i = 0; i < s.qps(); i++) {
            // one spare send slot, defensively: an endpoint build that published a send completion before
            // freeing its slot (Completer.retire) let a WR posted right after polling find the queue "full"
            MemoryRegion mr = pd.allocateAndRegister((int) (2 * buffSize), Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
            QueuePair qp = pd.createQp(new QpInitAttr(sendCq, recvCq).maxSendWr(txDepth + 1).maxRecvWr(Math.max(rxDepth, 1)));
            RcConnect.toInit(qp, RcConnect.Params.defaults());
            mrs.add(mr);
            qps.add(qp);
            int psn = ThreadLocalRandom.current().nextInt(1 << 24);
            mine.add(new Keys(0, outReads, qp.qpNum(), psn, mr.rkey(), mr.address() + buffSize, dev.gid(0), 0));
        }
    }

    /** {@code ctx_connect}: every QP to RTR and RTS (perftest leaves a passive BW server in RTR; RTS is harmless). */
    private void connectAll(List<Keys> remote) throws IOException {
        for (int i = 0; i < qps.size(); i++) {
            Keys r = remote.get(i);
            if (!r.gid().isIpv4Mapped()) {
                throw new IOException("the peer's GID " + r.gid() + " is not an IPv4-mapped RoCEv2 GID: run perftest with -x <index of its ::ffff:a.b.c.d GID>");
            }
            RcConnect.Params p = RcConnect.Params.defaults().mtu(mtu).timeout(s.qpTimeout()).retryCnt(7).rnrRetry(7).minRnrTimer(12)
                    .maxDestRdAtomic(mine.get(i).outReads())
                    .maxRdAtomic(Math.max(0, Math.min(r.outReads(), QueuePair.MAX_RD_ATOMIC)));
            PeerInfo peer = r.toPeerInfo(mtu.bytes());
            RcConnect.connect(qps.get(i), peer.rcPeer(), mine.get(i).psn(), p);
        }
    }

    private void printTestInfo() {
        print(PerfReport.RESULT_LINE);
        print("                    " + test.verbName() + " " + (test.isLatency() ? "Latency" : "BW") + " Test");
        print(" Dual-port       : OFF\t\tDevice         : jroce (" + dev.address().getHostAddress() + ")");
        print(" Number of qps   : " + s.qps() + "\t\tTransport type : IB");
        print(" Connection type : RC\t\tUsing SRQ      : OFF");
        if (client) print(" TX depth        : " + txDepth);
        if (test.isSend() && !client) print(" RX depth        : " + rxDepth);
        if (!test.isLatency()) print(" CQ Moderation   : " + cqMod);
        print(" Mtu             : " + mtu.bytes() + "[B]");
        print(" Link type       : Ethernet");
        print(" GID index       : 0");
        if (test.isReadOrAtomic()) print(" Outstand reads  : " + mine.get(0).outReads());
        else print(" Max inline data : 0[B]");
        print(" rdma_cm QPs\t : OFF");
        print(" Data ex. method : Ethernet");
        print(PerfReport.RESULT_LINE);
    }

    private void printAddresses() {
        for (Keys k : mine) printAddress("local", k);
        for (Keys k : theirs) printAddress("remote", k);
        flush();
    }

    /** {@code ctx_print_pingpong_data}: BASIC_ADDR_FMT [+ READ_FMT] [+ RDMA_FMT] and PERF_GID_FMT. */
    private void printAddress(String side, Keys k) {
        StringBuilder sb = new StringBuilder();
        sb.append(' ').append(side).append(" address: LID ").append(PerfReport.altHex(k.lid(), 4))
                .append(" QPN ").append(PerfReport.altHex(k.qpn(), 6)).append(" PSN ").append(PerfReport.altHex(k.psn(), 6));
        if (test == Test.READ_BW || test == Test.READ_LAT) sb.append(" OUT ").append(PerfReport.altHex(k.outReads(), 4));
        if (test == Test.READ_BW || test == Test.READ_LAT || test == Test.WRITE_BW || test == Test.WRITE_LAT) {
            sb.append(" RKey ").append(PerfReport.altHex(k.rkey() & 0xFFFFFFFFL, 8)).append(" VAddr ").append(PerfReport.altHex(k.va(), 16));
        }
        print(sb.toString());
        StringBuilder g = new StringBuilder(" GID: ");
        byte[] raw = k.gid().raw();
        for (int i = 0; i < raw.length; i++) {
            if (i > 0) g.append(':');
            g.append(String.format("%02d", raw[i] & 0xFF));
        }
        print(g.toString());
    }

    private static List<Object> addresses(List<Keys> keys) {
        List<Object> l = new ArrayList<>();
        for (Keys k : keys) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("qpn", k.qpn());
            m.put("psn", k.psn());
            m.put("rkey", Json.Unsigned.u32(k.rkey()));
            m.put("va", Json.Unsigned.u64(k.va()));
            m.put("out_reads", k.outReads());
            m.put("gid", k.gid().toString());
            l.add(m);
        }
        return l;
    }

    // ---------------------------------------------------------------------------------------------
    // bandwidth

    private int bandwidth(PerftestHandshake hs) throws IOException, InterruptedException {
        Keys k0 = mine.get(0);
        if (!client && test.serverIsPassive()) {
            printBwHeader();
            // the server takes no part: wait (watching the traffic) for the client's end-of-test sync
            awaitPeer(hs.socket(), "the client's end of test");
            BwReport theirs = hs.finish(test, k0, new BwReport(0, 0, 0, 0, 0));
            print(PerfReport.bwLine(theirs));
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
        BwReport mineReport = client ? runBwClient() : runBwServer(hs.socket());
        print(PerfReport.bwLine(mineReport));
        print(PerfReport.RESULT_LINE);
        flush();
        putBw(mineReport, "local");
        hs.socket().timeout(s.timeout());
        hs.finish(test, k0, mineReport);
        return done();
    }

    private void printBwHeader() {
        print(PerfReport.RESULT_LINE);
        print(PerfReport.RESULT_FMT);
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
    }

    private int done() {
        if (s.json()) {
            out.println(Json.toJson(json));
        }
        flush();
        return 0;
    }

    /** {@code run_iter_bw}: up to tx_depth messages in flight per QP, one completion per cq_mod messages. */
    private BwReport runBwClient() throws IOException, InterruptedException {
        int q = qps.size();
        boolean dur = s.duration();
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
        long deadline = dur ? start + (long) (s.durationSeconds() * 1e9) : Long.MAX_VALUE;
        long[] lastSignaled = new long[q];
        Progress progress = new Progress(start);
        long lastProgress = start;
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
                        SendWorkRequest wr = wrs[i].wrId(((long) i << QP_SHIFT) | seq).flags(signaled ? io.jroce.endpoint.SendFlags.SIGNALED : 0);
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
            }
            int n = sendCq.poll(wcs, wcs.length, 10, TimeUnit.MILLISECONDS);
            now = System.nanoTime();
            if (n == 0) {
                if (now - lastCompletionAt > s.timeout().toNanos()) {
                    throw new IOException("no completion for " + secs(s.timeout()) + " after " + totC + " of " + (dur ? "the" : String.valueOf(total))
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
            }
            if (now - lastProgress >= 1_000_000_000L && now - start >= 2_000_000_000L) {
                lastProgress = now;
                progress.line(now, totC, dur ? -1 : total, s.size());
            }
        }
        long end = System.nanoTime();
        if (!peak) tcompleted[0] = dur ? lastCompletionAt : end;
        return PerfReport.bw(s.size(), totC, tposted, tcompleted, peak, cqMod);
    }

    /** The work request an active side posts on QP {@code i}. */
    private SendWorkRequest activeWr(int i) {
        MemoryRegion mr = mrs.get(i);
        Keys r = theirs.get(i);
        return switch (test) {
            case SEND_BW, SEND_LAT -> new SendWorkRequest(0, WrOpcode.SEND, new Sge(mr.address(), (int) s.size(), mr.lkey()));
            case WRITE_BW, WRITE_LAT -> new SendWorkRequest(0, WrOpcode.RDMA_WRITE, new Sge(mr.address(), (int) s.size(), mr.lkey())).remote(r.va(), r.rkey());
            case READ_BW, READ_LAT -> new SendWorkRequest(0, WrOpcode.RDMA_READ, new Sge(mr.address(), (int) s.size(), mr.lkey())).remote(r.va(), r.rkey());
            case ATOMIC_BW, ATOMIC_LAT -> s.atomicType() == AtomicType.CMP_AND_SWAP
                    ? new SendWorkRequest(0, WrOpcode.ATOMIC_CMP_AND_SWP, new Sge(mr.address(), 8, mr.lkey()))
                            .remote(r.va(), r.rkey()).compareAdd(0).swap(ATOMIC_SWAP_VALUE)
                    : new SendWorkRequest(0, WrOpcode.ATOMIC_FETCH_AND_ADD, new Sge(mr.address(), 8, mr.lkey()))
                            .remote(r.va(), r.rkey()).compareAdd(ATOMIC_ADD_VALUE);
        };
    }

    /** {@code run_iter_bw_server}: count receives (re-posting them) until every message arrived, or (-D) the client's end-of-test sync. */
    private BwReport runBwServer(OobSocket sock) throws IOException, InterruptedException {
        int q = qps.size();
        boolean dur = s.duration();
        long total = dur ? Long.MAX_VALUE : s.iters() * q;
        long[] posted = new long[q];
        for (int i = 0; i < q; i++) posted[i] = rxDepth;
        WorkCompletion[] wcs = newWcs(64);
        long rcnt = 0;
        long first = 0;
        long last = 0;
        long start = System.nanoTime();
        long lastActivity = start;
        long lastSockCheck = start;
        long lastProgress = start;
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
            }
            if (dur && now - lastSockCheck > 20_000_000L) {
                lastSockCheck = now;
                if (sock.poll(Duration.ofMillis(1))) break; // the client finished and is syncing
            }
            if (n == 0 && now - lastActivity > s.timeout().toNanos()) {
                throw new IOException("no message for " + secs(s.timeout()) + " after " + rcnt + (dur ? "" : " of " + total)
                        + ": the client stopped or its packets do not reach us; " + qps.get(0).describe());
            }
            if (now - lastProgress >= 1_000_000_000L && now - start >= 2_000_000_000L) {
                lastProgress = now;
                progress.line(now, rcnt, dur ? -1 : total, s.size());
            }
        }
        long end = dur ? last : System.nanoTime();
        long[] tp = {rcnt == 0 ? start : first};
        long[] tc = {Math.max(end, tp[0] + 1)};
        return PerfReport.bw(s.size(), rcnt, tp, tc, false, cqMod);
    }

    private void postRecv(int qp, long seq) {
        MemoryRegion mr = mrs.get(qp);
        qps.get(qp).postRecv(new ReceiveWorkRequest(((long) qp << QP_SHIFT) | (seq & SEQ_MASK),
                new Sge(mr.address() + buffSize, (int) s.size(), mr.lkey())));
    }

    /**
     * A passive server waits for the client's end-of-test sync. It never gives up while RoCE packets keep
     * arriving; it fails after --timeout without traffic and without the sync.
     */
    private void awaitPeer(OobSocket sock, String what) throws IOException {
        long idleSince = System.nanoTime();
        long packets = dev.counters().packetsIn;
        while (!sock.poll(Duration.ofMillis(200))) {
            long p = dev.counters().packetsIn;
            long now = System.nanoTime();
            if (p != packets) {
                packets = p;
                idleSince = now;
            } else if (now - idleSince > s.timeout().toNanos()) {
                throw new IOException("neither traffic nor " + what + " for " + secs(s.timeout())
                        + ": the client stopped; check its output");
            }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // latency

    private int latency(PerftestHandshake hs) throws IOException, InterruptedException {
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
        print(s.duration() ? PerfReport.RESULT_FMT_LAT_DUR : PerfReport.RESULT_FMT_LAT);
        flush();
        long[] tposted = s.duration() ? new long[1] : new long[(int) s.iters()];
        long[] result = switch (test) {
            case SEND_LAT -> latSend(tposted);
            case WRITE_LAT -> latWrite(tposted);
            default -> latRead(tposted);
        };
        long iters = result[0];
        boolean roundTrip = !test.isReadOrAtomic();
        json.put("mode", "lat");
        json.put("results_from", "local");
        if (s.duration()) {
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
        boolean dur = s.duration();
        long start = System.nanoTime();
        long deadline = dur ? start + (long) (s.durationSeconds() * 1e9) : Long.MAX_VALUE;
        long scnt = 0;
        Progress progress = new Progress(start);
        long lastProgress = start;
        while (dur ? System.nanoTime() < deadline : scnt < s.iters()) {
            long t = System.nanoTime();
            if (!dur) tposted[(int) scnt] = t;
            qp.postSend(wr.wrId(scnt));
            scnt++;
            awaitOne(sendCq, wc, scnt);
            if (t - lastProgress >= 1_000_000_000L && t - start >= 2_000_000_000L) {
                lastProgress = t;
                progress.line(t, scnt, dur ? -1 : s.iters(), s.size());
            }
        }
        return new long[] {scnt, System.nanoTime() - start};
    }

    /** {@code run_iter_lat_send}: the client sends first; each side answers every receive with a send. */
    private long[] latSend(long[] tposted) throws IOException, InterruptedException {
        SendWorkRequest wr = activeWr(0).signaled();
        QueuePair qp = qps.get(0);
        WorkCompletion[] wc = newWcs(1);
        boolean dur = s.duration();
        long iters = dur ? Long.MAX_VALUE : s.iters();
        long start = System.nanoTime();
        long deadline = dur ? start + (long) (s.durationSeconds() * 1e9) : Long.MAX_VALUE;
        long scnt = 0;
        long rcnt = 0;
        long posted = rxDepth;
        Progress progress = new Progress(start);
        long lastProgress = start;
        while (scnt < iters || rcnt < iters) {
            if (dur && System.nanoTime() >= deadline) break;
            if (rcnt < iters && !(scnt < 1 && client)) {
                if (!awaitOne(recvCq, wc, rcnt, deadline)) break;
                rcnt++;
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
                if (t - lastProgress >= 1_000_000_000L && t - start >= 2_000_000_000L) {
                    lastProgress = t;
                    progress.line(t, scnt, dur ? -1 : iters, s.size());
                }
            }
        }
        return new long[] {dur ? rcnt : scnt, System.nanoTime() - start};
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
        boolean dur = s.duration();
        long iters = dur ? Long.MAX_VALUE : s.iters();
        long start = System.nanoTime();
        long deadline = dur ? start + (long) (s.durationSeconds() * 1e9) : Long.MAX_VALUE;
        long scnt = 0;
        long rcnt = 0;
        long ccnt = 0;
        Progress progress = new Progress(start);
        long lastProgress = start;
        while (scnt < iters || ccnt < iters || rcnt < iters) {
            if (dur && System.nanoTime() >= deadline) break;
            if (rcnt < iters && !(scnt < 1 && !client)) {
                rcnt++;
                if (!spinFor(buf, pollIdx, (byte) rcnt, deadline)) {
                    rcnt--;
                    break;
                }
            }
            if (scnt < iters) {
                long t = System.nanoTime();
                if (!dur) tposted[(int) scnt] = t;
                buf.put(postIdx, (byte) ++scnt);
                qp.postSend(wr.wrId(scnt));
                if (t - lastProgress >= 1_000_000_000L && t - start >= 2_000_000_000L) {
                    lastProgress = t;
                    progress.line(t, scnt, dur ? -1 : iters, s.size());
                }
            }
            if (ccnt < iters) {
                if (!awaitOne(sendCq, wc, ccnt, dur ? deadline + s.timeout().toNanos() : Long.MAX_VALUE)) break;
                ccnt++;
            }
        }
        return new long[] {dur ? rcnt : scnt, System.nanoTime() - start};
    }

    /** Spins until {@code buf[idx] == value}; false if {@code deadline} passed; throws after --timeout. */
    private boolean spinFor(ByteBuffer buf, int idx, byte value, long deadline) throws IOException {
        long start = System.nanoTime();
        long limit = s.timeout().toNanos();
        int spins = 0;
        while (true) {
            VarHandle.acquireFence(); // re-read the byte the event loop writes
            if (buf.get(idx) == value) return true;
            if (++spins < 512) {
                Thread.onSpinWait();
                continue;
            }
            long now = System.nanoTime();
            if (now >= deadline) return false;
            if (now - start > limit) {
                throw new IOException("the peer's RDMA WRITE #" + (value & 0xFF) + " (mod 256) did not arrive within " + secs(s.timeout())
                        + ": it stopped or its packets do not reach us; " + qps.get(0).describe());
            }
            // the event loop needs a CPU to deliver the write: after a short spin, give ours away
            if (now - start > 1_000_000L) java.util.concurrent.locks.LockSupport.parkNanos(20_000L);
            else Thread.yield();
        }
    }

    private boolean awaitOne(CompletionQueue cq, WorkCompletion[] wc, long count) throws IOException, InterruptedException {
        return awaitOne(cq, wc, count, Long.MAX_VALUE);
    }

    /** Waits for one completion (success required); false if {@code deadline} passed first. */
    private boolean awaitOne(CompletionQueue cq, WorkCompletion[] wc, long count, long deadline) throws IOException, InterruptedException {
        long start = System.nanoTime();
        while (true) {
            int n = cq.poll(wc, 1, 10, TimeUnit.MILLISECONDS);
            if (n == 1) {
                checkOk(wc[0]);
                return true;
            }
            long now = System.nanoTime();
            if (now >= deadline) return false;
            if (now - start > s.timeout().toNanos()) {
                throw new IOException("no " + (cq == recvCq ? "receive" : "send") + " completion for " + secs(s.timeout()) + " after " + count
                        + " messages: the peer stopped or its packets do not reach us; " + qps.get(0).describe());
            }
        }
    }

    private void checkOk(WorkCompletion wc) throws IOException {
        if (!wc.ok()) {
            QueuePair qp = null;
            for (QueuePair x : qps) if (x.qpNum() == wc.qpNum()) qp = x;
            String why = qp == null || qp.errorReason() == null ? "" : " (" + qp.errorReason() + ")";
            throw new IOException("completion with error " + wc.status() + " (" + wc.status().ibvValue() + ") for wr_id " + (wc.wrId() & SEQ_MASK) + why);
        }
    }

    private static WorkCompletion[] newWcs(int n) {
        WorkCompletion[] w = new WorkCompletion[n];
        for (int i = 0; i < n; i++) w[i] = new WorkCompletion();
        return w;
    }

    // ---------------------------------------------------------------------------------------------
    // output

    private void print(String line) {
        if (!s.json()) out.println(line);
    }

    private void flush() {
        out.flush();
        err.flush();
    }

    private static BigDecimal dec(double v, int scale) {
        if (Double.isNaN(v) || Double.isInfinite(v)) return BigDecimal.ZERO;
        return BigDecimal.valueOf(v).setScale(scale, RoundingMode.HALF_EVEN);
    }

    private static String secs(Duration d) {
        long ms = d.toMillis();
        return ms % 1000 == 0 ? ms / 1000 + " s" : String.format("%.1f s", ms / 1000.0);
    }

    /** The progress line on stderr (runs longer than 2 s, once a second). */
    private final class Progress {
        private final long start;

        Progress(long start) {
            this.start = start;
        }

        void line(long now, long done, long total, long size) {
            double secs = (now - start) / 1e9;
            String of = total < 0 ? "" : " of " + total;
            err.printf("jroce perf: %.0f s, %d%s messages, %.0f msg/sec, %.2f MB/sec%n", secs, done, of, done / secs,
                    done * (double) size / secs / PerfReport.MB);
            err.flush();
        }
    }
}
