package io.jroce.cli.perf;

import io.jroce.cli.conn.PeerTimeout;
import io.jroce.wire.IpText;
import io.jroce.cli.Converters;
import io.jroce.cli.Json;
import io.jroce.cli.conn.GidFamily;
import io.jroce.cli.conn.ExchangeChannel;
import io.jroce.cli.conn.PeerInfo;
import io.jroce.cli.conn.PerftestHandshake;
import io.jroce.cli.conn.QpChannel;
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
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.net.InetAddress;
import java.time.Duration;
import java.util.Locale;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * One perftest-compatible run, server or client (see {@link PerfCommand}): the TCP exchange of
 * {@link PerftestHandshake} and the resources perftest would create (one buffer per QP of twice
 * {@code BUFF_SIZE(size, cycle_buffer)}, the peer working on the second half); the traffic is a
 * {@link BandwidthRun} or a {@link LatencyRun}.
 */
abstract sealed class PerfRun permits BandwidthRun, LatencyRun {
    /** What the command decided. */
    /** {@code clientWait}: how long a server waits for its client, null until interrupted. */
    /** {@code oob}: the local address of the TCP exchange (--oob), or null: a server listens on {@code local}, a client connects from any. */
    record Settings(Test test, InetAddress host, InetAddress local, InetAddress oob, int port, long size, long iters, Duration duration,
                    Mtu mtu, int qps, Duration timeout, boolean json, int qpTimeout, AtomicType atomicType, int extensions,
                    PerfCm cm, Duration clientWait) {
        Settings(Test test, InetAddress host, InetAddress local, int port, long size, long iters, Duration duration,
                 Mtu mtu, int qps, Duration timeout, boolean json, int qpTimeout, AtomicType atomicType, PerfCm cm) {
            this(test, host, local, null, port, size, iters, duration, mtu, qps, timeout, json, qpTimeout, atomicType, 0, cm, timeout);
        }

        /** -R: the exchange and the test QPs' connections go through the connection manager. */
        boolean rdmaCm() {
            return cm != null;
        }

        /** -D: run for {@code duration} instead of {@code iters}. */
        boolean timed() {
            return duration != null;
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
    private static final long ATOMIC_ADD_VALUE = 1;
    /** perftest posts CMP_AND_SWAP with compare 0 (the zeroed WR) and swap {@code ATOMIC_SWAP_VALUE}, 0. */
    private static final long ATOMIC_SWAP_VALUE = 0;
    static final long QP_SHIFT = 48;
    static final long SEQ_MASK = (1L << QP_SHIFT) - 1;

    final Settings s;
    final Device dev;
    final PrintWriter out;
    final PrintWriter err;
    final boolean client;
    final Test test;
    final Map<String, Object> json = new LinkedHashMap<>();

    private int cycleBuffer;
    private int cacheLine;
    private Mtu mtu;
    long buffSize;
    int txDepth;
    int rxDepth;
    int cqMod;
    CompletionQueue sendCq;
    CompletionQueue recvCq;
    final List<QueuePair> qps = new ArrayList<>();
    final List<MemoryRegion> mrs = new ArrayList<>();
    final List<Keys> mine = new ArrayList<>();
    List<Keys> theirs;

    /** --report_gbits: bandwidth in Gb/sec rather than MB/sec. */
    boolean gbits;
    /** -a: every size from 2 to 2^23 bytes, one row each, as perftest's -a. */
    boolean allSizes;
    /** The message size of the run going on: -s, or with -a each size in turn. */
    long msgSize;

    /** The largest size of -a (perftest's MAX_SIZE, 2^23). */
    static final long ALL_SIZES_MAX = 1L << 23;

    /** -a: the client runs every size from 2 to 2^23 over the same connection (the buffers are sized for the largest). */
    PerfRun allSizes(boolean on) {
        allSizes = on;
        return this;
    }

    /** Progress lines every {@code every} from the start (null: every second from the third second). */
    PerfRun progressEvery(java.time.Duration every) {
        if (every != null) {
            progressNanos = every.toNanos();
            progressFirstNanos = progressNanos;
        }
        return this;
    }

    private long progressNanos = 1_000_000_000L;
    private long progressFirstNanos = 2_000_000_000L;

    /** Bandwidth in Gb/sec (perftest's --report_gbits) instead of MB/sec. */
    PerfRun reportGbits(boolean on) {
        gbits = on;
        return this;
    }

    /** -t: messages each QP of a bandwidth test keeps posted (null: perftest's default, 128). */
    PerfRun txDepth(Integer n) {
        txDepthOption = n;
        return this;
    }

    private Integer txDepthOption;

    /** -f: what a timed run leaves out at its start and end (null: perftest's default, a quarter of -D in whole seconds). */
    PerfRun margin(Duration m) {
        marginOption = m;
        return this;
    }

    private Duration marginOption;

    /** The window a timed run (-D) counts completions in, opening {@code start}'s margin later. */
    SampleWindow sampleWindow(long start) {
        return new SampleWindow(start, s.duration(), SampleWindow.margin(s.duration(), marginOption));
    }

    /** The run of {@code s.test()}: a bandwidth or a latency test. */
    static PerfRun of(Settings s, Device dev, PrintWriter out, PrintWriter err) {
        return s.test().isLatency() ? new LatencyRun(s, dev, out, err) : new BandwidthRun(s, dev, out, err);
    }

    PerfRun(Settings s, Device dev, PrintWriter out, PrintWriter err) {
        this.s = s;
        this.msgSize = s.size();
        this.dev = dev;
        this.out = out;
        this.err = err;
        this.client = s.client();
        this.test = s.test();
    }

    /** Runs the test; returns the exit code. */
    int run() throws IOException, InterruptedException {
        PerftestHandshake hs;
        if (!client) {
            print("");
            print("************************************");
            print("* Waiting for client to connect... *");
            print("************************************");
            flush();
        }
        if (s.rdmaCm()) {
            hs = PerftestHandshake.overQp(exchangeQp(), client);
        } else if (client) {
            hs = PerftestHandshake.connect(s.host(), s.port(), s.oob(), s.timeout());
        } else {
            hs = PerftestHandshake.accept(s.oob() != null ? s.oob() : s.local(), s.port(), s.clientWait(), s.timeout());
        }
        try (hs) {
            PerftestHandshake.Preamble pre = hs.preamble(PerftestHandshake.DEFAULT_CYCLE_BUFFER, PerftestHandshake.DEFAULT_CACHE_LINE, s.mtu());
            cycleBuffer = pre.cycleBuffer();
            cacheLine = pre.cacheLineSize();
            mtu = pre.mtu();
            createResources();
            printTestInfo();
            theirs = s.rdmaCm() ? hs.setUp(test, mine, () -> s.cm().connectTests(qps, outReads()), remote -> { })
                    : hs.setUp(test, mine, remote -> {
                        connectAll(remote);
                        // the test's QPs are connected, and a sync follows: the peer waits there until this is done
                        warmUpJit();
                    });
            printAddresses();
            if (s.extensions() != 0) {
                // with -R what the CM agreed (perhaps less than asked), else what was set on both sides
                String ext = io.jroce.endpoint.JroceExtensions.toString(qps.get(0).extensions());
                print(" jroce extensions: " + ext);
                json.put("extensions", ext);
            }
            json.put("test", test.tool());
            json.put("role", client ? "client" : "server");
            json.put("peer_version", hs.peerVersion());
            json.put("qps", s.qps());
            json.put("mtu", mtu.bytes());
            json.put("size", s.size());
            if (test == Test.ATOMIC_BW || test == Test.ATOMIC_LAT) json.put("atomic_type", s.atomicType().name());
            json.put("local", addresses(mine));
            json.put("remote", addresses(theirs));
            int rc = traffic(hs);
            if (s.rdmaCm()) s.cm().finish();
            return rc;
        } finally {
            flush();
        }
    }

    /**
     * -R: the exchange QP ({@code create_comm_struct}: RC, depth 1), in INIT with its one receive posted, connected
     * through the connection manager.
     */
    private QpChannel exchangeQp() throws IOException {
        QpChannel ch = new QpChannel(dev, client ? IpText.of(s.host()) + " port " + s.port() : "the client", s.timeout());
        try {
            RcConnect.toInit(ch.qp(), RcConnect.Params.defaults());
            ch.postFirstRecv();
            // rdma_client_connect / rdma_server_connect: out_reads only for READ and atomic tests
            s.cm().connectExchange(ch.qp(), outReads());
            return ch;
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
    }

    /** perftest's {@code conn_param} responder resources and initiator depth: out_reads for READ and atomics, else 0. */
    private int outReads() {
        return test.isReadOrAtomic() ? QueuePair.MAX_RD_ATOMIC : 0;
    }

    /** The test itself, once every QP is connected; returns the exit code. */
    abstract int traffic(PerftestHandshake hs) throws IOException, InterruptedException;

    /** At most how long the JIT warm-up before the exchange runs (zero: none); see {@link JitWarmUp}. */
    PerfRun warmup(Duration max) {
        warmupMax = max == null ? Duration.ZERO : max;
        return this;
    }

    private Duration warmupMax = Duration.ZERO;

    private void warmUpJit() {
        if (warmupMax.isZero()) return; // with -R it is never called: the CM listener must answer at once
        long start = System.nanoTime();
        try {
            long ops = new JitWarmUp(this).run(warmupMax.toNanos());
            long ms = (System.nanoTime() - start) / 1_000_000;
            json.put("warmup_ops", ops);
            json.put("warmup_ms", ms);
            if (!s.json()) {
                err.println("jroce perf: JIT warm-up: " + ops + " " + test.verbName() + " operations in " + ms
                        + " ms between two private QPs of this device (not counted)");
                err.flush();
            }
        } catch (IOException | RuntimeException e) {
            // the warm-up only prepares the JVM: a failure of its private pair leaves the test itself to run
            err.println("jroce perf: note: the warm-up stopped early: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---------------------------------------------------------------------------------------------
    // setup

    private void createResources() {
        boolean bw = !test.isLatency();
        long itersCap = s.timed() ? Long.MAX_VALUE : s.iters();
        txDepth = (int) Math.min(bw ? (txDepthOption != null ? txDepthOption : DEF_TX_BW) : 1, itersCap);
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
            MemoryRegion mr = pd.allocateAndRegister((int) (2 * buffSize), mrAccess(test));
            QueuePair qp = pd.createQp(new QpInitAttr(sendCq, recvCq).maxSendWr(txDepth + 1).maxRecvWr(Math.max(rxDepth, 1)));
            RcConnect.toInit(qp, RcConnect.Params.defaults().accessFlags(qpAccess(test)));
            mrs.add(mr);
            qps.add(qp);
            int psn = ThreadLocalRandom.current().nextInt(1 << 24);
            mine.add(new Keys(0, outReads, qp.qpNum(), psn, mr.rkey(), mr.address() + buffSize, dev.gid(0), 0));
        }
    }

    /**
     * The memory region's access flags, as perftest's {@code setup_mr_flags} (perftest_resources.c) without
     * data validation: local write, plus the one remote access the test's verb needs (none for SEND).
     */
    static int mrAccess(PerftestHandshake.Test test) {
        return Access.LOCAL_WRITE | switch (test) {
            case WRITE_BW, WRITE_LAT -> Access.REMOTE_WRITE;
            case READ_BW, READ_LAT -> Access.REMOTE_READ;
            case ATOMIC_BW, ATOMIC_LAT -> Access.REMOTE_ATOMIC;
            case SEND_BW, SEND_LAT -> 0;
        };
    }

    /**
     * The QP's access flags, as perftest's {@code ctx_modify_qp_to_init} (perftest_resources.c) without data
     * validation, so a peer gets the NAK ib_*_bw would send for any other remote operation.
     */
    static int qpAccess(PerftestHandshake.Test test) {
        return switch (test) {
            case WRITE_BW, WRITE_LAT -> Access.REMOTE_WRITE;
            case READ_BW, READ_LAT -> Access.REMOTE_READ;
            case ATOMIC_BW, ATOMIC_LAT -> Access.REMOTE_ATOMIC;
            case SEND_BW, SEND_LAT -> Access.REMOTE_WRITE | Access.LOCAL_WRITE;
        };
    }

    /** {@code ctx_connect}: every QP to RTR and RTS (perftest leaves a passive BW server in RTR; RTS is harmless). */
    private void connectAll(List<Keys> remote) throws IOException {
        for (int i = 0; i < qps.size(); i++) {
            Keys r = remote.get(i);
            GidFamily.requireSame(mine.get(i).gid(), r.gid(), "-x");
            RcConnect.Params p = RcConnect.Params.defaults().mtu(mtu).timeout(s.qpTimeout()).retryCnt(7).rnrRetry(7).minRnrTimer(12)
                    .extensions(s.extensions())
                    .maxDestRdAtomic(mine.get(i).outReads())
                    .maxRdAtomic(Math.max(0, Math.min(r.outReads(), QueuePair.MAX_RD_ATOMIC)));
            PeerInfo peer = r.toPeerInfo(mtu.bytes());
            RcConnect.connect(qps.get(i), peer.rcPeer(), mine.get(i).psn(), p);
        }
    }

    private void printTestInfo() {
        print(PerfReport.RESULT_LINE);
        print("                    " + test.verbName() + " " + (test.isLatency() ? "Latency" : "BW") + " Test");
        print(" Dual-port       : OFF\t\tDevice         : jroce (" + IpText.of(dev.address()) + ")");
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
        print(" rdma_cm QPs\t : " + (s.rdmaCm() ? "ON" : "OFF"));
        print(" Data ex. method : " + (s.rdmaCm() ? "rdma_cm" : "Ethernet"));
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
    // shared by both kinds of test

    /** The end of a run: the JSON object with --json; exit code 0. */
    int done() {
        if (s.json()) {
            out.println(Json.toJson(json));
        }
        flush();
        return 0;
    }

    /** The work request an active side posts on QP {@code i}. */
    SendWorkRequest activeWr(int i) {
        MemoryRegion mr = mrs.get(i);
        Keys r = theirs.get(i);
        return testWr(mr.address(), mr.lkey(), r.va(), r.rkey());
    }

    /** The test's work request: {@link #msgSize} bytes from {@code addr} (to or from {@code va} for the one-sided verbs). */
    SendWorkRequest testWr(long addr, int lkey, long va, int rkey) {
        return switch (test) {
            case SEND_BW, SEND_LAT -> new SendWorkRequest(0, WrOpcode.SEND, new Sge(addr, (int) msgSize, lkey));
            case WRITE_BW, WRITE_LAT -> new SendWorkRequest(0, WrOpcode.RDMA_WRITE, new Sge(addr, (int) msgSize, lkey)).remote(va, rkey);
            case READ_BW, READ_LAT -> new SendWorkRequest(0, WrOpcode.RDMA_READ, new Sge(addr, (int) msgSize, lkey)).remote(va, rkey);
            case ATOMIC_BW, ATOMIC_LAT -> s.atomicType() == AtomicType.CMP_AND_SWAP
                    ? new SendWorkRequest(0, WrOpcode.ATOMIC_CMP_AND_SWP, new Sge(addr, 8, lkey))
                            .remote(va, rkey).compareAdd(0).swap(ATOMIC_SWAP_VALUE)
                    : new SendWorkRequest(0, WrOpcode.ATOMIC_FETCH_AND_ADD, new Sge(addr, 8, lkey))
                            .remote(va, rkey).compareAdd(ATOMIC_ADD_VALUE);
        };
    }

    void postRecv(int qp, long seq) {
        // one request per QP, reused: the QP copies what it posts (as ibv_post_recv does), so a latency test makes no
        // garbage per message and its JVM no collections that stop both spinning threads
        if (recvWrs == null || recvWrs.length != qps.size()) recvWrs = new ReceiveWorkRequest[qps.size()];
        ReceiveWorkRequest wr = recvWrs[qp];
        if (wr == null || wr.sgl()[0].length() != (int) s.size()) {
            MemoryRegion mr = mrs.get(qp);
            wr = recvWrs[qp] = new ReceiveWorkRequest(0, new Sge(mr.address() + buffSize, (int) s.size(), mr.lkey()));
        }
        qps.get(qp).postRecv(wr.wrId(((long) qp << QP_SHIFT) | (seq & SEQ_MASK)));
    }

    private ReceiveWorkRequest[] recvWrs;

    /**
     * A passive server waits for the client's end-of-test sync. It never gives up while RoCE packets keep
     * arriving; it fails after --timeout without traffic and without the sync.
     */
    void awaitPeer(ExchangeChannel sock, String what) throws IOException {
        long idleSince = System.nanoTime();
        long packets = dev.counters().packetsIn;
        while (!sock.poll(Duration.ofMillis(200))) {
            long p = dev.counters().packetsIn;
            long now = System.nanoTime();
            if (p != packets) {
                packets = p;
                idleSince = now;
            } else if (now - idleSince > s.timeout().toNanos()) {
                throw new PeerTimeout("neither traffic nor " + what + " for " + Converters.seconds(s.timeout())
                        + ": the client stopped; check its output");
            }
        }
    }

    void checkOk(WorkCompletion wc) throws IOException {
        if (!wc.ok()) {
            QueuePair qp = null;
            for (QueuePair x : qps) if (x.qpNum() == wc.qpNum()) qp = x;
            String why = qp == null || qp.errorReason() == null ? "" : " (" + qp.errorReason() + ")";
            throw new IOException("completion with error " + wc.status() + " (" + wc.status().ibvValue() + ") for wr_id " + (wc.wrId() & SEQ_MASK) + why);
        }
    }

    /**
     * Waits for one completion of {@code cq} (success required); false if {@code deadline} passed first, a
     * {@link PeerTimeout} after --timeout without one.
     */
    boolean awaitOne(CompletionQueue cq, WorkCompletion[] wc, long count, long deadline, boolean receive)
            throws IOException, InterruptedException {
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
                throw new PeerTimeout("no " + (receive ? "receive" : "send") + " completion for " + Converters.seconds(s.timeout()) + " after " + count
                        + " messages: the peer stopped or its packets do not reach us; "
                        + (qps.isEmpty() ? "the warm-up's private pair" : qps.get(0).describe()));
            }
        }
    }

    static WorkCompletion[] newWcs(int n) {
        WorkCompletion[] w = new WorkCompletion[n];
        for (int i = 0; i < n; i++) w[i] = new WorkCompletion();
        return w;
    }

    // ---------------------------------------------------------------------------------------------
    // output

    void print(String line) {
        if (!s.json()) out.println(line);
    }

    void flush() {
        out.flush();
        err.flush();
    }

    static BigDecimal dec(double v, int scale) {
        if (Double.isNaN(v) || Double.isInfinite(v)) return BigDecimal.ZERO;
        return BigDecimal.valueOf(v).setScale(scale, RoundingMode.HALF_EVEN);
    }

    /** The progress line on stderr (runs longer than 2 s, once a second). */
    final class Progress {
        private final long start;
        private long last;

        Progress(long start) {
            this.start = start;
            this.last = start;
        }

        /**
         * The line, if a second has passed since the last one and the run is 2 s old; {@code total} -1: a -D run.
         * {@code from} and {@code to} are the stamps the final table will divide by ({@link PerfReport#bw} without
         * peak: the first post or receive and the last completion), so the line and the table are one measure of
         * one counter, the table's only later.
         */
        void tick(long now, long done, long total, long size, long from, long to) {
            tick(now, done, total, size, from, to, null);
        }

        /**
         * As above; with more than one QP, {@code perQp} (a client's completed messages on each QP) ends the line as
         * "; per QP: N1 N2 ...", so a run shows how its QPs share the path, second by second.
         */
        void tick(long now, long done, long total, long size, long from, long to, long[] perQp) {
            if (now - last < progressNanos || now - start < progressFirstNanos) return;
            last = now;
            String of = total < 0 ? "" : " of " + total;
            PerftestHandshake.BwReport r = PerfReport.bw(size, done, new long[] {from}, new long[] {Math.max(to, from + 1)}, false, 1);
            if (gbits) r = PerfReport.inGbits(r);
            StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "jroce perf: %s s: %d%s iterations, BW average %.2f %s, MsgRate %.6f Mpps",
                    elapsed(now), done, of, r.bwAvg(), gbits ? "Gb/sec" : "MB/sec", r.msgRate()));
            if (perQp != null && perQp.length > 1) {
                line.append("; per QP:");
                for (long n : perQp) line.append(' ').append(n);
            }
            err.println(line);
            err.flush();
        }

        /** Seconds since the start: whole seconds at the default interval, milliseconds with a shorter one. */
        private String elapsed(long now) {
            return String.format(Locale.ROOT, progressNanos >= 1_000_000_000L ? "%.0f" : "%.3f", (now - start) / 1e9);
        }

        /** As {@link #tick}, for a latency test: the average latency and rate of the -D latency table. */
        void tickLat(long now, long done, long total, long size, boolean roundTrip) {
            if (now - last < progressNanos || now - start < progressFirstNanos) return;
            last = now;
            String of = total < 0 ? "" : " of " + total;
            PerfReport.LatDur d = PerfReport.latDuration(size, done, now - start, roundTrip);
            err.printf(Locale.ROOT, "jroce perf: %s s: %d%s iterations, t_avg %.2f usec, %.2f tps%n", elapsed(now), done, of,
                    d.tAvg(), d.tps());
            err.flush();
        }
    }
}
