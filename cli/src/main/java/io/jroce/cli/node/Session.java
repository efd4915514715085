package io.jroce.cli.node;

import io.jroce.cli.node.SessionLanguage.Type;
import io.jroce.cli.node.SessionSyntax.Literal;
import io.jroce.cli.node.SessionSyntax.Part;
import io.jroce.cli.node.SessionSyntax.Ref;
import io.jroce.cli.node.SessionSyntax.Statement;
import io.jroce.cli.node.SessionSyntax.Token;
import io.jroce.cli.conn.JroceHandshake;
import io.jroce.cli.conn.PeerInfo;
import io.jroce.cli.conn.RemoteRegion;
import io.jroce.endpoint.Access;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpAttr;
import io.jroce.endpoint.QpCounters;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.RcConnect;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendFlags;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.VerbsException;
import io.jroce.endpoint.WcOpcode;
import io.jroce.endpoint.WcStatus;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;
import io.jroce.endpoint.fault.FaultInjector;
import io.jroce.endpoint.fault.Direction;
import io.jroce.endpoint.fault.FaultPlan;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Runs checked session statements against one device: the objects they create by name, the completions
 * taken off each CQ but not yet matched by an {@code expect}, and the bookkeeping for counters and
 * machine-readable result lines. A failed expectation or a refused verb throws {@link Failure}; {@code exit}
 * throws {@link Exit}.
 */
final class Session {
    static final Duration DEFAULT_WAIT = Duration.ofSeconds(10);
    static final Duration DEFAULT_CONNECT = Duration.ofSeconds(60);
    static final int DEFAULT_RD_ATOMIC = 4;
    /**
     * Local ACK timeout exponent: 4.096 us * 2^17 = 0.54 s, so 7 retries ride out about 4 s without an answer.
     * ibv_rc_pingpong's 14 (67 ms, 0.5 s in all) is too short for two JVMs sharing a busy machine, where a
     * peer's event loop can be descheduled for hundreds of milliseconds; chaos experiments can lower it.
     */
    static final int DEFAULT_ACK_TIMEOUT = 17;

    /** A failed expectation, comparison or verb: the session ends with status 1. */
    static final class Failure extends Exception {
        private static final long serialVersionUID = 1L;

        Failure(String message) {
            super(message);
        }

        Failure(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** {@code exit [CODE]}. */
    static final class Exit extends Exception {
        private static final long serialVersionUID = 1L;
        final int code;

        Exit(int code) {
            super("exit " + code, null, false, false);
            this.code = code;
        }
    }

    /** What the node tells the session about itself. */
    record Settings(InetAddress bind, int tcpPort, InetAddress peer, Mtu mtu, boolean results, Path baseDir) {
    }

    private static final class Qp {
        final QueuePair qp;
        final int access;
        PeerInfo peer;
        Mtu mtu;

        Qp(QueuePair qp, int access) {
            this.qp = qp;
            this.access = access;
        }
    }

    private record Pending(String op, String flags, long size, long t0, long packets0, int line, String qpName) {
    }

    private final Device device;
    private final FaultInjector chaos;
    private final Settings settings;
    private final PrintWriter out;
    private final ProtectionDomain pd;
    private final Map<String, MemoryRegion> mrs = new LinkedHashMap<>();
    private final Map<String, CompletionQueue> cqs = new LinkedHashMap<>();
    private final Map<String, Qp> qps = new LinkedHashMap<>();
    private final Map<CompletionQueue, ArrayDeque<WorkCompletion>> backlog = new HashMap<>();
    private final Map<String, Pending> pending = new HashMap<>();
    private final List<String> history = new ArrayList<>();
    private final WorkCompletion[] scratch = new WorkCompletion[64];
    private int expectations;
    private int compares;
    private int failures;
    private boolean chaosUsed;

    Session(Device device, FaultInjector chaos, Settings settings, PrintWriter out) {
        this.device = device;
        this.chaos = chaos;
        this.settings = settings;
        this.out = out;
        this.pd = device.allocPd();
    }

    List<String> history() {
        return history;
    }

    int expectationsMet() {
        return expectations;
    }

    int comparesMet() {
        return compares;
    }

    int failures() {
        return failures;
    }

    /** Counts a failure seen by the caller (interactive sessions go on after one). */
    void noteFailure() {
        failures++;
    }

    void run(Statement s) throws Failure, Exit, InterruptedException {
        try {
            switch (s.verb()) {
                case "mr" -> mr(s);
                case "dereg" -> dereg(s);
                case "fill" -> fill(s);
                case "dump" -> dump(s);
                case "compare" -> compare(s);
                case "cq" -> cq(s);
                case "qp" -> qp(s);
                case "listen", "connect" -> connect(s);
                case "recv" -> recv(s);
                case "send", "write", "read", "cas", "fadd" -> post(s);
                case "poll" -> poll(s);
                case "wait" -> waitFor(s);
                case "expect" -> expect(s);
                case "counters" -> counters(s.positional().isEmpty() ? "nonzero" : s.positional().get(0).literal());
                case "stats" -> stats();
                case "modify" -> modify(s);
                case "query" -> query(s);
                case "chaos" -> chaos(s);
                case "echo" -> out.println(echoText(s));
                case "sleep" -> Thread.sleep(Math.max(0, ((Duration) value(s, s.positional().get(0), Type.DURATION)).toMillis()));
                case "history" -> {
                    for (int i = 0; i < history.size(); i++) out.printf("%5d  %s%n", i + 1, history.get(i));
                }
                case "help" -> help(s);
                case "exit" -> throw new Exit(s.positional().isEmpty() ? (failures > 0 ? 1 : 0)
                        : SessionLanguage.exitCode(text(s.positional().get(0))));
                default -> throw new Failure("unknown command " + s.verb());
            }
        } catch (VerbsException | IllegalArgumentException | IllegalStateException e) {
            throw new Failure(s.verb() + ": " + oneLine(e.getMessage()), e);
        } finally {
            out.flush();
        }
    }

    // ------------------------------------------------------------------------------------------------
    // memory

    private void mr(Statement s) throws Failure {
        String name = s.positional().get(0).literal();
        long size = size(s, "size", 0);
        int access = s.has("access") ? (int) value(s, s.arg("access"), Type.ACCESS) : Access.ALL;
        SessionLanguage.checkRegionAccess(access);
        MemoryRegion mr = pd.allocateAndRegister(Math.toIntExact(size), access);
        mrs.put(name, mr);
        out.printf("mr %s: %d bytes at 0x%x, lkey 0x%x, rkey 0x%x, %s%n", name, size, mr.address(), mr.lkey(), mr.rkey(),
                Access.toString(access));
    }

    private void dereg(Statement s) {
        String name = s.positional().get(0).literal();
        mrs.remove(name).deregister();
        out.printf("dereg %s%n", name);
    }

    private MemoryRegion region(String name) throws Failure {
        MemoryRegion mr = mrs.get(name);
        if (mr == null) throw new Failure("no memory region '" + name + "'");
        return mr;
    }

    /** [offset, offset+len) of a region; len defaults to {@code dflt} or to the rest of the region. */
    private int[] range(Statement s, MemoryRegion mr, long dflt) throws Failure {
        long off = size(s, "offset", 0);
        long len = s.has("len") ? size(s, "len", 0) : dflt >= 0 ? dflt : mr.length() - off;
        if (off > mr.length() || len < 0 || off + len > mr.length()) {
            throw new Failure(s.verb() + ": offset " + off + " + length " + len + " is outside the region (" + mr.length() + " bytes)");
        }
        return new int[] {(int) off, (int) len};
    }

    private SessionBytes.Source source(Statement s) throws Failure {
        if (s.has("text")) return SessionBytes.repeat(text(s.arg("text")).getBytes(StandardCharsets.UTF_8));
        if (s.has("hex")) return SessionBytes.repeat((byte[]) value(s, s.arg("hex"), Type.HEX));
        if (s.has("u64")) return SessionBytes.repeat(SessionBytes.u64((long) value(s, s.arg("u64"), Type.U64)));
        if (s.has("pattern")) {
            String p = (String) value(s, s.arg("pattern"), Type.PATTERN);
            long seed = s.has("seed") ? (long) value(s, s.arg("seed"), Type.U64) : 0;
            return SessionBytes.pattern(p, seed);
        }
        if (s.has("file")) {
            Path p = settings.baseDir() == null ? Path.of(text(s.arg("file"))) : settings.baseDir().resolve(text(s.arg("file")));
            try {
                byte[] b = Files.readAllBytes(p);
                if (b.length == 0) throw new Failure(s.verb() + ": file " + p + " is empty");
                return SessionBytes.repeat(b);
            } catch (IOException e) {
                throw new Failure(s.verb() + ": cannot read " + p + ": " + e.getMessage());
            }
        }
        throw new Failure(s.verb() + ": no source");
    }

    private void fill(Statement s) throws Failure {
        String name = s.positional().get(0).literal();
        MemoryRegion mr = region(name);
        SessionBytes.Source src = source(s);
        int[] r = range(s, mr, src.length());
        SessionBytes.fill(mr.buffer(), r[0], r[1], src);
        out.printf("fill %s: %d bytes at offset %d%n", name, r[1], r[0]);
    }

    private void dump(Statement s) throws Failure {
        String name = s.positional().get(0).literal();
        MemoryRegion mr = region(name);
        String as = s.has("as") ? (String) value(s, s.arg("as"), Type.FORMAT) : "hex";
        long dflt = as.equals("sha256") ? -1 : Math.min(64, mr.length() - size(s, "offset", 0));
        int[] r = range(s, mr, dflt);
        switch (as) {
            case "sha256" -> out.printf("dump %s: sha256 of %d bytes at offset %d: %s%n", name, r[1], r[0],
                    SessionBytes.hex(SessionBytes.sha256(mr.buffer(), r[0], r[1])));
            case "text" -> out.printf("dump %s: \"%s\"%n", name, SessionBytes.text(mr.buffer(), r[0], r[1]));
            case "u64" -> out.printf("dump %s: %d bytes at offset %d, 64-bit words in host order%n%s", name, r[1], r[0],
                    SessionBytes.words(mr.buffer(), r[0], r[1]));
            default -> out.printf("dump %s: %d bytes at offset %d%n%s", name, r[1], r[0], SessionBytes.hexDump(mr.buffer(), r[0], r[1]));
        }
    }

    private void compare(Statement s) throws Failure {
        String name = s.positional().get(0).literal();
        MemoryRegion mr = region(name);
        if (s.has("sha256")) {
            byte[] want = (byte[]) value(s, s.arg("sha256"), Type.SHA256);
            int[] r = range(s, mr, -1);
            byte[] have = SessionBytes.sha256(mr.buffer(), r[0], r[1]);
            if (!java.util.Arrays.equals(want, have)) {
                throw new Failure("compare " + name + " failed: the SHA-256 of " + r[1] + " bytes at offset " + r[0] + " is "
                        + SessionBytes.hex(have) + ", expected " + SessionBytes.hex(want));
            }
            compares++;
            out.printf("compare %s: ok, sha256 of %d bytes at offset %d is %s%n", name, r[1], r[0], SessionBytes.hex(have));
            return;
        }
        SessionBytes.Source src = source(s);
        int[] r = range(s, mr, src.length());
        String diff = SessionBytes.compare(mr.buffer(), r[0], r[1], src);
        if (diff != null) throw new Failure("compare " + name + " failed: " + diff);
        compares++;
        out.printf("compare %s: ok, %d bytes at offset %d%n", name, r[1], r[0]);
    }

    // ------------------------------------------------------------------------------------------------
    // queues

    private void cq(Statement s) throws Failure {
        String name = s.positional().get(0).literal();
        int depth = (int) size(s, "depth", 256);
        CompletionQueue cq = device.createCq(depth);
        cqs.put(name, cq);
        backlog.put(cq, new ArrayDeque<>());
        out.printf("cq %s: depth %d%n", name, depth);
    }

    private void qp(Statement s) throws Failure {
        String name = s.positional().get(0).literal();
        CompletionQueue send = cqs.get(name(s, s.has("send_cq") ? "send_cq" : "cq"));
        CompletionQueue recv = cqs.get(name(s, s.has("recv_cq") ? "recv_cq" : "cq"));
        QpInitAttr init = new QpInitAttr(send, recv)
                .maxSendWr((int) size(s, "send_wr", 128)).maxRecvWr((int) size(s, "recv_wr", 128))
                .maxSendSge((int) size(s, "sge", 4)).maxRecvSge((int) size(s, "sge", 4))
                .maxInlineData((int) size(s, "inline", 64)).sqSigAll(flag(s, "sig_all"));
        int access = s.has("access") ? (int) value(s, s.arg("access"), Type.ACCESS) : Access.ALL;
        QueuePair qp = pd.createQp(init);
        RcConnect.toInit(qp, RcConnect.Params.defaults().accessFlags(access));
        qps.put(name, new Qp(qp, access));
        out.printf("qp %s: QPN 0x%06x, %s%n", name, qp.qpNum(), qp.state());
    }

    private Qp qpOf(Statement s) throws Failure {
        String name = name(s, "qp");
        Qp q = qps.get(name);
        if (q == null) throw new Failure("no queue pair '" + name + "'");
        return q;
    }

    // ------------------------------------------------------------------------------------------------
    // connection

    private void connect(Statement s) throws Failure {
        String qpName = name(s, "qp");
        Qp q = qpOf(s);
        Mtu mtu = s.has("mtu") ? (Mtu) value(s, s.arg("mtu"), Type.MTU) : settings.mtu();
        int psn = s.has("psn") ? (int) value(s, s.arg("psn"), Type.PSN) : ThreadLocalRandom.current().nextInt(1 << 24);
        int rd = s.has("rd_atomic") ? (int) value(s, s.arg("rd_atomic"), Type.SMALL) : DEFAULT_RD_ATOMIC;
        int port = s.has("port") ? (int) value(s, s.arg("port"), Type.PORT) : settings.tcpPort();
        Duration timeout = s.has("timeout") ? (Duration) value(s, s.arg("timeout"), Type.DURATION) : DEFAULT_CONNECT;
        List<RemoteRegion> published = new ArrayList<>();
        if (s.has("publish")) {
            @SuppressWarnings("unchecked")
            List<String> names = (List<String>) value(s, s.arg("publish"), Type.NAMES);
            for (String n : names) {
                MemoryRegion mr = region(n);
                published.add(new RemoteRegion(n, mr.address(), mr.rkey(), mr.length()));
            }
        }
        PeerInfo local = new PeerInfo(0, q.qp.qpNum(), psn, device.gid(0), mtu.bytes(), rd, published);
        boolean listen = s.verb().equals("listen");
        InetAddress host = listen ? null : s.has("host") ? (InetAddress) value(s, s.arg("host"), Type.ADDRESS) : settings.peer();
        if (listen) {
            out.printf("listen %s: waiting on TCP %s:%d for a peer to connect (timeout %s)%n", qpName,
                    settings.bind().getHostAddress(), port, human(timeout));
            out.flush();
        }
        PeerInfo peer;
        try {
            peer = listen ? JroceHandshake.serve(settings.bind(), port, local, timeout)
                    : JroceHandshake.connect(host, port, local, timeout);
        } catch (IOException e) {
            throw new Failure(s.verb() + ": " + oneLine(e.getMessage()).replace("check the host and -p port", "check host= and port=")
                    .replace("choose another port with -p", "choose another port with port= or --port"), e);
        }
        if (peer.mtu() != 0 && peer.mtu() != mtu.bytes()) {
            throw new Failure(s.verb() + ": the peer at " + peer.gid().toInetAddress().getHostAddress() + " uses path MTU " + peer.mtu()
                    + " but this node uses " + mtu.bytes() + ": give both sides the same mtu= (or --mtu)");
        }
        if (!peer.gid().isIpv4Mapped()) {
            throw new Failure(s.verb() + ": the peer's GID " + peer.gid() + " is not an IPv4 address; jroce speaks RoCEv2 over IPv4 only");
        }
        int maxRd = peer.outReads() > 0 ? Math.min(rd, peer.outReads()) : rd;
        RcConnect.Params p = RcConnect.Params.defaults().mtu(mtu).maxDestRdAtomic(rd).maxRdAtomic(maxRd)
                .accessFlags(q.access).timeout(DEFAULT_ACK_TIMEOUT);
        if (s.has("ack_timeout")) p.timeout((int) value(s, s.arg("ack_timeout"), Type.SMALL));
        if (s.has("retry_cnt")) p.retryCnt((int) value(s, s.arg("retry_cnt"), Type.SMALL));
        if (s.has("rnr_retry")) p.rnrRetry((int) value(s, s.arg("rnr_retry"), Type.SMALL));
        if (s.has("min_rnr_timer")) p.minRnrTimer((int) value(s, s.arg("min_rnr_timer"), Type.SMALL));
        RcConnect.connect(q.qp, peer.rcPeer(device.port()), psn, p);
        q.peer = peer;
        q.mtu = mtu;
        StringBuilder regions = new StringBuilder();
        for (RemoteRegion r : peer.regions()) {
            regions.append(regions.length() == 0 ? "" : ", ").append(r.name()).append(" (").append(r.length()).append(" bytes)");
        }
        out.printf("%s %s: connected QPN 0x%06x PSN 0x%06x to %s QPN 0x%06x PSN 0x%06x, MTU %d, rd_atomic %d; peer regions: %s%n",
                s.verb(), qpName, q.qp.qpNum(), psn, peer.gid().toInetAddress().getHostAddress(), peer.qpn(), peer.psn(), mtu.bytes(),
                maxRd, regions.length() == 0 ? "none" : regions);
    }

    // ------------------------------------------------------------------------------------------------
    // work requests

    private long wrId(Statement s) throws Failure {
        return s.has("wr_id") ? (long) value(s, s.arg("wr_id"), Type.U64) : s.line();
    }

    private void recv(Statement s) throws Failure {
        Qp q = qpOf(s);
        Sge[] sgl = new Sge[0];
        if (s.has("mr")) {
            MemoryRegion mr = region(name(s, "mr"));
            int[] r = range(s, mr, -1);
            sgl = new Sge[] {new Sge(mr.address() + r[0], r[1], mr.lkey())};
        }
        q.qp.postRecv(new ReceiveWorkRequest(wrId(s), sgl));
    }

    private void post(Statement s) throws Failure {
        String qpName = name(s, "qp");
        Qp q = qpOf(s);
        boolean atomic = s.verb().equals("cas") || s.verb().equals("fadd");
        SendWorkRequest wr = new SendWorkRequest().wrId(wrId(s));
        long size = 0;
        if (s.has("mr")) {
            MemoryRegion mr = region(name(s, "mr"));
            int[] r = range(s, mr, atomic ? 8 : -1);
            wr.sgl(new Sge(mr.address() + r[0], r[1], mr.lkey()));
            size = r[1];
        }
        int flags = flag(s, "unsignaled") ? 0 : SendFlags.SIGNALED;
        if (flag(s, "solicited")) flags |= SendFlags.SOLICITED;
        if (flag(s, "inline")) flags |= SendFlags.INLINE;
        if (flag(s, "fence")) flags |= SendFlags.FENCE;
        wr.flags(flags);
        WrOpcode op;
        switch (s.verb()) {
            case "send" -> {
                op = WrOpcode.SEND;
                if (s.has("imm")) {
                    op = WrOpcode.SEND_WITH_IMM;
                    wr.immData((int) value(s, s.arg("imm"), Type.U32));
                } else if (s.has("inv")) {
                    op = WrOpcode.SEND_WITH_INV;
                    Object v = value(s, s.arg("inv"), Type.KEY_OR_REMOTE);
                    wr.invalidateRkey(v instanceof Integer k ? k : remote(q, (String) v).rkey());
                }
            }
            case "write" -> {
                op = s.has("imm") ? WrOpcode.RDMA_WRITE_WITH_IMM : WrOpcode.RDMA_WRITE;
                if (s.has("imm")) wr.immData((int) value(s, s.arg("imm"), Type.U32));
            }
            case "read" -> op = WrOpcode.RDMA_READ;
            case "cas" -> {
                op = WrOpcode.ATOMIC_CMP_AND_SWP;
                wr.compareAdd((long) value(s, s.arg("compare"), Type.U64)).swap((long) value(s, s.arg("swap"), Type.U64));
            }
            default -> {
                op = WrOpcode.ATOMIC_FETCH_AND_ADD;
                wr.compareAdd((long) value(s, s.arg("add"), Type.U64));
            }
        }
        wr.opcode(op);
        if (s.has("remote")) {
            RemoteRegion r = remote(q, name(s, "remote"));
            long roff = size(s, "roffset", 0);
            int rkey = s.has("rkey") ? (int) value(s, s.arg("rkey"), Type.U32) : r.rkey();
            wr.remote(r.va() + roff, rkey);
        }
        long packets0 = settings.results() ? packets(q.qp) : 0;
        long t0 = System.nanoTime();
        q.qp.postSend(wr);
        if ((flags & SendFlags.SIGNALED) != 0 || q.qp.initAttr().sqSigAll()) {
            List<String> f = new ArrayList<>();
            for (String k : List.of("inline", "solicited", "fence")) if (flag(s, k)) f.add(k);
            pending.put(key(q.qp.qpNum(), wr.wrId()), new Pending(op.name(), String.join(",", f), size, t0, packets0, s.line(), qpName));
        }
    }

    private static RemoteRegion remote(Qp q, String name) throws Failure {
        if (q.peer == null) throw new Failure("the QP is not connected to a peer, so it knows no remote region '" + name + "'");
        return q.peer.region(name).orElseThrow(() -> new Failure("the peer published no region '" + name + "' (it published: "
                + (q.peer.regions().isEmpty() ? "none" : String.join(", ", q.peer.regions().stream().map(RemoteRegion::name).toList()))
                + "); add it to publish= on the peer's listen or connect"));
    }

    private static long packets(QueuePair qp) {
        QpCounters c = qp.counters();
        return c.packetsIn + c.packetsOut;
    }

    private static String key(int qpn, long wrId) {
        return qpn + "/" + wrId;
    }

    // ------------------------------------------------------------------------------------------------
    // completions

    /** Moves what the CQ holds into its backlog; returns how many. */
    private int drain(CompletionQueue cq, long waitNanos) throws InterruptedException {
        int n = waitNanos > 0 ? cq.poll(scratch, scratch.length, waitNanos, TimeUnit.NANOSECONDS) : cq.poll(scratch);
        ArrayDeque<WorkCompletion> q = backlog.get(cq);
        for (int i = 0; i < n; i++) {
            WorkCompletion wc = scratch[i].copy();
            q.add(wc);
            if (wc.opcode() != null && !wc.opcode().isReceive() || wc.status() != WcStatus.SUCCESS) observed(wc);
        }
        return n;
    }

    /** A send-side completion: closes its pending entry and, with --results, prints a result line. */
    private void observed(WorkCompletion wc) {
        Pending p = pending.remove(key(wc.qpNum(), wc.wrId()));
        if (p == null || !settings.results()) return;
        long t = System.nanoTime() - p.t0();
        Qp q = qps.get(p.qpName());
        long packets = q == null ? 0 : packets(q.qp) - p.packets0();
        out.printf("result op=%s%s size=%d packets=%d time_us=%.1f status=%s wr_id=%s line=%d at_ms=%d%n", p.op(),
                p.flags().isEmpty() ? "" : " flags=" + p.flags(), p.size(), packets, t / 1e3, wc.status(),
                Long.toUnsignedString(wc.wrId()), p.line(), System.currentTimeMillis());
    }

    private CompletionQueue cqOf(Statement s) throws Failure {
        String name = name(s, "cq");
        CompletionQueue cq = cqs.get(name);
        if (cq == null) throw new Failure("no completion queue '" + name + "'");
        return cq;
    }

    private void poll(Statement s) throws Failure, InterruptedException {
        CompletionQueue cq = cqOf(s);
        long max = size(s, "max", Long.MAX_VALUE);
        drainOverrun(cq, 0);
        ArrayDeque<WorkCompletion> q = backlog.get(cq);
        if (q.isEmpty()) out.printf("poll %s: empty%n", name(s, "cq"));
        for (long i = 0; i < max && !q.isEmpty(); i++) out.println("wc " + describe(q.poll()));
    }

    private void waitFor(Statement s) throws Failure, InterruptedException {
        CompletionQueue cq = cqOf(s);
        long count = size(s, "count", 1);
        Duration timeout = s.has("timeout") ? (Duration) value(s, s.arg("timeout"), Type.DURATION) : DEFAULT_WAIT;
        long deadline = System.nanoTime() + timeout.toNanos();
        ArrayDeque<WorkCompletion> q = backlog.get(cq);
        long got = 0;
        while (got < count) {
            if (q.isEmpty()) {
                long left = deadline - System.nanoTime();
                if (left <= 0 || drainOverrun(cq, left) == 0) {
                    throw new Failure("wait: " + got + " of " + count + " completion(s) on cq " + name(s, "cq") + " within " + human(timeout)
                            + stalledHint());
                }
                continue;
            }
            out.println("wc " + describe(q.poll()));
            got++;
        }
    }

    private int drainOverrun(CompletionQueue cq, long waitNanos) throws Failure, InterruptedException {
        try {
            return drain(cq, waitNanos);
        } catch (VerbsException e) {
            throw new Failure(oneLine(e.getMessage()), e);
        }
    }

    private void expect(Statement s) throws Failure, InterruptedException {
        CompletionQueue cq = cqOf(s);
        String cqName = name(s, "cq");
        Long wantId = s.has("wr_id") ? (Long) value(s, s.arg("wr_id"), Type.U64) : null;
        Duration timeout = s.has("timeout") ? (Duration) value(s, s.arg("timeout"), Type.DURATION) : DEFAULT_WAIT;
        long deadline = System.nanoTime() + timeout.toNanos();
        ArrayDeque<WorkCompletion> q = backlog.get(cq);
        WorkCompletion wc;
        while ((wc = take(q, wantId)) == null) {
            long left = deadline - System.nanoTime();
            if (left <= 0 || drainOverrun(cq, left) == 0) {
                String others = q.isEmpty() ? "" : "; waiting there instead: " + String.join(", ", q.stream().map(Session::describe).toList());
                throw new Failure("expect: no completion" + (wantId != null ? " with wr_id=" + Long.toUnsignedString(wantId) : "")
                        + " on cq " + cqName + " within " + human(timeout) + others + stalledHint());
            }
        }
        List<String> diffs = new ArrayList<>();
        WcStatus status = s.has("status") ? (WcStatus) value(s, s.arg("status"), Type.STATUS) : WcStatus.SUCCESS;
        if (wc.status() != status) diffs.add("status is " + wc.status() + ", expected " + status);
        if (s.has("qp")) {
            Qp want = qps.get(name(s, "qp"));
            if (want != null && wc.qpNum() != want.qp.qpNum()) {
                diffs.add(String.format("qp is 0x%06x, expected 0x%06x (%s)", wc.qpNum(), want.qp.qpNum(), name(s, "qp")));
            }
        }
        if (wc.status() == WcStatus.SUCCESS) {
            if (s.has("opcode")) {
                WcOpcode op = (WcOpcode) value(s, s.arg("opcode"), Type.OPCODE);
                if (wc.opcode() != op) diffs.add("opcode is " + wc.opcode() + ", expected " + op);
            }
            if (s.has("len")) {
                long len = size(s, "len", 0);
                if (wc.byteLen() != len) diffs.add("len is " + wc.byteLen() + ", expected " + len);
            }
            if (s.has("imm")) {
                Integer imm = (Integer) value(s, s.arg("imm"), Type.IMM_OR_NONE);
                if (imm == null && wc.hasImm()) diffs.add(String.format("imm is 0x%x, expected none", wc.immData()));
                if (imm != null && !wc.hasImm()) diffs.add(String.format("no imm, expected 0x%x", imm));
                if (imm != null && wc.hasImm() && wc.immData() != imm) diffs.add(String.format("imm is 0x%x, expected 0x%x", wc.immData(), imm));
            }
            if (s.has("inv")) {
                Integer inv = (Integer) value(s, s.arg("inv"), Type.IMM_OR_NONE);
                if (inv == null && wc.hasInv()) diffs.add(String.format("inv is 0x%x, expected none", wc.invalidatedRkey()));
                if (inv != null && !wc.hasInv()) diffs.add(String.format("no invalidated rkey, expected 0x%x", inv));
                if (inv != null && wc.hasInv() && wc.invalidatedRkey() != inv) {
                    diffs.add(String.format("inv is 0x%x, expected 0x%x", wc.invalidatedRkey(), inv));
                }
            }
        }
        if (!diffs.isEmpty()) {
            throw new Failure("expect failed: " + String.join("; ", diffs) + " (completion: " + describe(wc) + ")");
        }
        expectations++;
        out.println("expect ok: " + describe(wc));
    }

    /** The first completion with that wr_id (or the first of all), removed from the backlog. */
    private static WorkCompletion take(ArrayDeque<WorkCompletion> q, Long wrId) {
        if (wrId == null) return q.poll();
        for (Iterator<WorkCompletion> it = q.iterator(); it.hasNext(); ) {
            WorkCompletion wc = it.next();
            if (wc.wrId() == wrId) {
                it.remove();
                return wc;
            }
        }
        return null;
    }

    static String describe(WorkCompletion wc) {
        StringBuilder sb = new StringBuilder("wr_id=").append(Long.toUnsignedString(wc.wrId())).append(' ').append(wc.status());
        if (wc.status() == WcStatus.SUCCESS) {
            sb.append(' ').append(wc.opcode()).append(" len=").append(wc.byteLen());
            if (wc.hasImm()) sb.append(String.format(" imm=0x%x", wc.immData()));
            if (wc.hasInv()) sb.append(String.format(" inv=0x%x", wc.invalidatedRkey()));
        } else {
            sb.append(" vendor_err=").append(wc.vendorErr());
        }
        return sb.append(String.format(" qp=0x%06x", wc.qpNum())).toString();
    }

    /** Why a wait may have found nothing: the QPs' states and the retry counters. */
    private String stalledHint() {
        List<String> states = new ArrayList<>();
        for (Map.Entry<String, Qp> e : qps.entrySet()) {
            QueuePair qp = e.getValue().qp;
            String reason = qp.errorReason();
            states.add(e.getKey() + " " + qp.state() + (reason == null ? "" : " (" + reason + ")"));
        }
        return states.isEmpty() ? "" : "; qp " + String.join(", ", states) + " (is the peer's session at the matching step?)";
    }

    // ------------------------------------------------------------------------------------------------
    // state and counters

    /** Prints counters: {@code nonzero} (default), {@code all}, {@code device}, {@code qp} or {@code chaos}. */
    void counters(String which) {
        boolean all = which.equals("all");
        if (all || which.equals("nonzero") || which.equals("device")) {
            out.println("counters device " + device.address().getHostAddress() + ": " + format(device.counters().asMap(), all));
        }
        if (all || which.equals("nonzero") || which.equals("qp")) {
            for (Map.Entry<String, Qp> e : qps.entrySet()) {
                out.printf("counters qp %s 0x%06x: %s%n", e.getKey(), e.getValue().qp.qpNum(), format(e.getValue().qp.counters().asMap(), all));
            }
        }
        if (chaos != null && (all || which.equals("chaos") || (which.equals("nonzero") && chaosActive()))) {
            out.println("counters chaos: " + format(chaos.counters(), all || which.equals("chaos")));
        }
        out.flush();
    }

    private boolean chaosActive() {
        for (Direction d : Direction.values()) {
            if (!chaos.plan(d).equals(FaultPlan.none()) || chaos.arrived(d) != chaos.passed(d)) return true;
        }
        return false;
    }

    private static String format(Map<String, Long> m, boolean zeros) {
        StringBuilder sb = new StringBuilder();
        int skipped = 0;
        for (Map.Entry<String, Long> e : m.entrySet()) {
            if (!zeros && e.getValue() == 0) {
                skipped++;
                continue;
            }
            if (sb.length() > 0) sb.append(' ');
            sb.append(e.getKey()).append('=').append(e.getValue());
        }
        if (sb.length() == 0) return "all 0";
        return skipped > 0 ? sb + " (others 0)" : sb.toString();
    }

    void stats() {
        if (qps.isEmpty()) out.println("stats: no queue pairs");
        for (Map.Entry<String, Qp> e : qps.entrySet()) out.println("stats " + e.getKey() + ": " + e.getValue().qp.describe());
        out.flush();
    }

    private void modify(Statement s) throws Failure {
        Qp q = qpOf(s);
        QpAttr a = new QpAttr();
        if (s.has("state")) a.state((QpState) value(s, s.arg("state"), Type.STATE));
        if (s.has("access")) a.accessFlags((int) value(s, s.arg("access"), Type.ACCESS));
        if (s.has("mtu")) a.pathMtu((Mtu) value(s, s.arg("mtu"), Type.MTU));
        if (s.has("dest")) a.dest((InetAddress) value(s, s.arg("dest"), Type.ADDRESS), device.port());
        if (s.has("dest_qpn")) a.destQpNum((int) value(s, s.arg("dest_qpn"), Type.QPN));
        if (s.has("rq_psn")) a.rqPsn((int) value(s, s.arg("rq_psn"), Type.PSN));
        if (s.has("sq_psn")) a.sqPsn((int) value(s, s.arg("sq_psn"), Type.PSN));
        if (s.has("ack_timeout")) a.timeout((int) value(s, s.arg("ack_timeout"), Type.SMALL));
        if (s.has("retry_cnt")) a.retryCnt((int) value(s, s.arg("retry_cnt"), Type.SMALL));
        if (s.has("rnr_retry")) a.rnrRetry((int) value(s, s.arg("rnr_retry"), Type.SMALL));
        if (s.has("min_rnr_timer")) a.minRnrTimer((int) value(s, s.arg("min_rnr_timer"), Type.SMALL));
        if (s.has("rd_atomic")) a.maxRdAtomic((int) value(s, s.arg("rd_atomic"), Type.SMALL));
        if (s.has("dest_rd_atomic")) a.maxDestRdAtomic((int) value(s, s.arg("dest_rd_atomic"), Type.SMALL));
        if (a.has(QpAttr.Field.STATE) && a.state() == QpState.INIT && q.qp.state() == QpState.RESET) {
            if (!a.has(QpAttr.Field.ACCESS_FLAGS)) a.accessFlags(q.access);
            a.pkeyIndex(0).port(1); // the only P_Key index and port, as ibv_rc_pingpong passes them
        }
        QpState before = q.qp.state();
        q.qp.modify(a);
        out.printf("modify %s: %s -> %s%n", name(s, "qp"), before, q.qp.state());
    }

    private void query(Statement s) throws Failure {
        Qp q = qpOf(s);
        QpAttr a = q.qp.query();
        out.printf("query %s: QPN 0x%06x state %s mtu %d dest %s:%d dest_qpn 0x%06x rq_psn 0x%06x sq_psn 0x%06x access %s "
                        + "rd_atomic %d dest_rd_atomic %d min_rnr_timer %d ack_timeout %d retry_cnt %d rnr_retry %d%n",
                name(s, "qp"), q.qp.qpNum(), a.state(), a.pathMtu().bytes(),
                a.destAddress() == null ? "-" : a.destAddress().getHostAddress(), a.destPort(), a.destQpNum(), a.rqPsn(), a.sqPsn(),
                Access.toString(a.accessFlags()), a.maxRdAtomic(), a.maxDestRdAtomic(), a.minRnrTimer(), a.timeout(), a.retryCnt(),
                a.rnrRetry());
    }

    private void chaos(Statement s) throws Failure {
        String spec = resolveRest(s, false);
        if (chaos == null) throw new Failure("chaos: this node has no fault injector");
        if (spec.equals("off")) {
            chaos.plan(Direction.IN, FaultPlan.none());
            chaos.plan(Direction.OUT, FaultPlan.none());
            out.println("chaos: off");
            return;
        }
        FaultInjector parsed = FaultInjector.parse(spec);
        chaosUsed = true;
        chaos.plan(Direction.IN, parsed.plan(Direction.IN));
        chaos.plan(Direction.OUT, parsed.plan(Direction.OUT));
        boolean seedGiven = spec.matches("(?s).*(^|,)\\s*seed\\s*=.*");
        out.println("chaos: " + chaos.spec() + (seedGiven && parsed.seed() != chaos.seed()
                ? " (the seed is chosen when the node starts: --chaos seed=" + parsed.seed() + " to replay with it)" : ""));
    }

    private void help(Statement s) {
        if (!s.positional().isEmpty()) {
            SessionLanguage.Command c = SessionLanguage.command(s.positional().get(0).literal());
            out.println(c.usage());
            out.println("  " + c.summary());
            return;
        }
        out.println("commands (one per line; name=value arguments; # comments; \"quotes\"; $mr.rkey references):");
        for (SessionLanguage.Command c : SessionLanguage.COMMANDS) out.println("  " + c.usage());
        out.println("'help COMMAND' describes one.");
    }

    // ------------------------------------------------------------------------------------------------
    // values

    private String echoText(Statement s) throws Failure {
        return resolveRest(s, true);
    }

    private String resolveRest(Statement s, boolean blanks) throws Failure {
        List<Token> all = new ArrayList<>(s.positional());
        all.addAll(s.named().values());
        all.sort((a, b) -> Integer.compare(a.column(), b.column()));
        List<String> words = new ArrayList<>();
        for (Token t : all) words.add(t.named() ? t.key() + "=" + text(t) : text(t));
        return String.join(blanks ? " " : ",", words);
    }

    /** The token's text with references resolved. */
    private String text(Token t) throws Failure {
        if (!t.hasRefs()) return t.literal();
        StringBuilder sb = new StringBuilder();
        for (Part p : t.parts()) {
            if (p instanceof Literal l) sb.append(l.text());
            else sb.append(resolve((Ref) p));
        }
        return sb.toString();
    }

    private String resolve(Ref r) throws Failure {
        MemoryRegion mr = mrs.get(r.object());
        if (mr != null) {
            return switch (r.field()) {
                case "addr" -> "0x" + Long.toHexString(mr.address());
                case "len" -> Integer.toString(mr.length());
                case "lkey" -> "0x" + Integer.toHexString(mr.lkey());
                case "rkey" -> "0x" + Integer.toHexString(mr.rkey());
                default -> throw new Failure("a memory region has no field " + r.field());
            };
        }
        Qp q = qps.get(r.object());
        if (q != null) {
            return switch (r.field()) {
                case "qpn" -> String.format("0x%06x", q.qp.qpNum());
                case "state" -> q.qp.state().name();
                case "psn" -> String.format("0x%06x", q.qp.query().sqPsn());
                default -> throw new Failure("a queue pair has no field " + r.field());
            };
        }
        CompletionQueue cq = cqs.get(r.object());
        if (cq != null) {
            return switch (r.field()) {
                case "depth" -> Integer.toString(cq.depth());
                case "size" -> Integer.toString(cq.size() + backlog.get(cq).size());
                default -> throw new Failure("a completion queue has no field " + r.field());
            };
        }
        throw new Failure("$" + r.object() + " is not defined");
    }

    private Object value(Statement s, Token t, Type type) throws Failure {
        String text = text(t);
        try {
            return SessionLanguage.parse(type, text);
        } catch (IllegalArgumentException e) {
            throw new Failure((t.key() != null ? t.key() + ": " : "") + e.getMessage()
                    + (t.hasRefs() ? " (from " + t.raw() + ")" : ""));
        }
    }

    private String name(Statement s, String key) throws Failure {
        return (String) value(s, s.arg(key), Type.NAME);
    }

    private long size(Statement s, String key, long dflt) throws Failure {
        return s.has(key) ? (long) value(s, s.arg(key), Type.SIZE) : dflt;
    }

    private boolean flag(Statement s, String key) throws Failure {
        return s.has(key) && (boolean) value(s, s.arg(key), Type.BOOL);
    }

    static String human(Duration d) {
        long ms = d.toMillis();
        if (ms % 1000 == 0) return ms / 1000 + " s";
        return ms + " ms";
    }

    static String oneLine(String msg) {
        return msg == null ? "" : msg.strip().replaceAll("\\s*\\R\\s*", " ");
    }

    /** Whether the 'chaos' command turned fault injection on at some point. */
    boolean chaosUsed() {
        return chaosUsed;
    }

    /** Whether any QP got connected to a peer. */
    boolean hadPeer() {
        for (Qp q : qps.values()) if (q.peer != null) return true;
        return false;
    }

    /**
     * Keeps the device answering until no datagram has arrived for {@code quiet} (at most {@code max}): the
     * peer may still be retransmitting a request whose ACK was lost, and that ACK must come from a live QP,
     * not from a closed port. The other side of the last-ACK problem every RC application has at exit.
     */
    void linger(Duration quiet, Duration max) throws InterruptedException {
        long start = System.nanoTime();
        long lastIn = device.counters().packetsIn;
        long quietSince = start;
        while (System.nanoTime() - start < max.toNanos()) {
            Thread.sleep(Math.max(1, Math.min(20, quiet.toMillis() / 4)));
            long in = device.counters().packetsIn;
            long now = System.nanoTime();
            if (in != lastIn) {
                lastIn = in;
                quietSince = now;
            } else if (now - quietSince >= quiet.toNanos()) {
                return;
            }
        }
    }

    /** Deregisters nothing and destroys nothing: closing the device releases everything at once. */
    void printSummary() {
        if (settings.results()) {
            out.printf("result summary expects=%d compares=%d failures=%d%n", expectations, compares, failures);
        }
    }
}
