package io.jroce.cli.rping;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WcOpcode;
import io.jroce.endpoint.WcStatus;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The data protocol of rdma-core's {@code rping} (librdmacm/examples/rping.c) over one connected RC queue
 * pair, independent of how the QP got connected (the connection manager, or {@link io.jroce.endpoint.RcConnect}
 * in tests).
 *
 * <p>Per iteration: the client SENDs a 16-byte {@code struct rping_rdma_info} (big-endian buffer address,
 * rkey, size) naming its start buffer; the server RDMA READs it, SENDs 16 bytes as a go-ahead; the client
 * SENDs the info of its sink buffer; the server RDMA WRITEs {@code strlen + 1} bytes of what it read there and
 * SENDs the go-ahead again; with -V the client compares both buffers. Both sides keep exactly one receive
 * posted (rping's {@code max_recv_wr} is 2 but it reposts one after each receive) and reject a receive of
 * any length other than 16 ({@code server_recv} / {@code client_recv}). The server's loop ends when the client
 * disconnects.
 */
public final class RpingSession implements AutoCloseable {
    /** {@code sizeof(struct rping_rdma_info)}. */
    static final int INFO_BYTES = 16;
    /** rping.c {@code RPING_MIN_BUFSIZE}: sizeof("2147483647") + sizeof("rdma-ping-%d: "). */
    public static final int MIN_SIZE = 26;
    /** rping.c {@code RPING_BUFSIZE - 1}. */
    public static final int MAX_SIZE = 64 * 1024 - 1;
    /** rping.c {@code RPING_SQ_DEPTH}. */
    static final int SQ_DEPTH = 16;

    private static final long WR_SEND = 1;
    private static final long WR_RDMA = 2;
    private static final long WR_RECV = 3;
    /** Slice of a wait between checks of the disconnect signal. */
    private static final long POLL_SLICE_MS = 100;

    private final boolean server;
    private final int size;
    private final boolean validate;
    private final boolean verbose;
    private final boolean debug;
    private final PrintWriter out;
    private final PrintWriter err;
    private final CompletionQueue cq;
    private final QueuePair qp;
    private final MemoryRegion recvMr;
    private final MemoryRegion sendMr;
    private final MemoryRegion rdmaMr;
    private final MemoryRegion startMr;
    private final WorkCompletion[] wcs = {new WorkCompletion()};
    private volatile BooleanSupplier disconnected = () -> false;

    /** The options that shape a session (rping's -S, -V, -v, -d). */
    public record Options(int size, boolean validate, boolean verbose, boolean debug) {
        public Options {
            if (size < MIN_SIZE || size > MAX_SIZE) {
                throw new IllegalArgumentException("size " + size + " out of " + MIN_SIZE + ".." + MAX_SIZE);
            }
        }
    }

    /**
     * Creates rping's CQ (depth {@code 2 * RPING_SQ_DEPTH}), RC QP (16 send WRs, 2 receive WRs) and buffers in
     * {@code pd}, and posts the first receive only once {@link #postFirstRecv} is called, as rping does
     * before it connects or accepts. The QP is in RESET: the caller connects it.
     */
    public RpingSession(ProtectionDomain pd, boolean server, Options o, PrintWriter out, PrintWriter err) {
        this.server = server;
        this.size = o.size();
        this.validate = o.validate();
        this.verbose = o.verbose();
        this.debug = o.debug();
        this.out = out;
        this.err = err;
        this.cq = pd.device().createCq(SQ_DEPTH * 2);
        this.qp = pd.createQp(new QpInitAttr(cq, cq).maxSendWr(SQ_DEPTH).maxRecvWr(2));
        debug("created pd, cq and qp " + qp.qpNum());
        recvMr = pd.allocateAndRegister(INFO_BYTES, Access.LOCAL_WRITE);
        sendMr = pd.allocateAndRegister(INFO_BYTES, 0);
        int remote = Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE;
        rdmaMr = pd.allocateAndRegister(size, remote);
        startMr = server ? null : pd.allocateAndRegister(size, remote);
        debug("allocated & registered buffers...");
    }

    /** The QP to connect (RESET until the caller moves it). */
    public QueuePair qp() {
        return qp;
    }

    /** Where the server learns that the client disconnected (the CM's DISCONNECTED event). */
    public void disconnectedWhen(BooleanSupplier signal) {
        this.disconnected = signal;
    }

    /** Posts the one receive rping keeps posted; call once the QP is in INIT or later, before connecting. */
    public void postFirstRecv() {
        postRecv();
    }

    /**
     * The client loop ({@code rping_test_client}): {@code count} pings, or forever with 0. Throws with
     * rping's message on the first failure; the caller disconnects either way. Returns false when the server
     * disconnected first: rping then prints the state it waited for and still exits 0
     * ({@code return (cb->state == DISCONNECTED) ? 0 : ret}).
     */
    public boolean runClient(int count) throws IOException, InterruptedException {
        int start = 65;
        ByteBuffer startBuf = startMr.buffer();
        ByteBuffer sink = rdmaMr.buffer();
        for (int ping = 0; count == 0 || ping < count; ping++) {
            byte[] head = String.format(Locale.ROOT, "rdma-ping-%d: ", ping).getBytes(StandardCharsets.US_ASCII);
            // snprintf(start_buf, size, ...) writes at most size-1 characters
            int cc = Math.min(head.length, size - 1);
            startBuf.clear();
            startBuf.put(head, 0, cc);
            int c = start;
            for (int i = cc; i < size; i++) {
                startBuf.put(i, (byte) c);
                if (++c > 122) c = 65;
            }
            if (++start > 122) start = 65;
            startBuf.put(size - 1, (byte) 0);

            postInfo(startMr);
            if (!awaitRecv("RDMA_WRITE_ADV")) return false;
            postInfo(rdmaMr);
            if (!awaitRecv("RDMA_WRITE_COMPLETE")) return false;
            if (validate) {
                for (int i = 0; i < size; i++) {
                    if (startBuf.get(i) != sink.get(i)) throw new IOException("data mismatch!");
                }
            }
            if (verbose) {
                out.println("ping data: " + cString(sink));
                out.flush();
            }
        }
        return true;
    }

    /**
     * The server loop ({@code rping_test_server}) until the client disconnects (then it returns normally)
     * or a step fails (then it throws with rping's message).
     */
    public void runServer() throws IOException, InterruptedException {
        ByteBuffer sink = rdmaMr.buffer();
        while (true) {
            Info read = awaitInfo("RDMA_READ_ADV");
            if (read == null) return;
            debug("server received sink adv");
            rdma(WrOpcode.RDMA_READ, read, read.size);
            debug("server posted rdma read req");
            awaitRdma("RDMA_READ_COMPLETE", WcOpcode.RDMA_READ);
            debug("server received read complete");
            if (verbose) {
                out.println("server ping data: " + cString(sink));
                out.flush();
            }
            postSend();
            debug("server posted go ahead");
            Info write = awaitInfo("RDMA_WRITE_ADV");
            if (write == null) return;
            debug("server received sink adv");
            int len = Math.min(cString(sink).length() + 1, size);
            rdma(WrOpcode.RDMA_WRITE, write, len);
            awaitRdma("RDMA_WRITE_COMPLETE", WcOpcode.RDMA_WRITE);
            debug("server rdma write complete");
            postSend();
            debug("server posted go ahead");
        }
    }

    /** A received {@code struct rping_rdma_info}. */
    record Info(long addr, int rkey, int size) {
    }

    private void postInfo(MemoryRegion mr) {
        ByteBuffer b = sendMr.buffer();
        b.putLong(0, mr.address()).putInt(8, mr.rkey()).putInt(12, size);
        debug(String.format(Locale.ROOT, "RDMA addr %x rkey %x len %d", mr.address(), mr.rkey(), size));
        postSend();
    }

    private void postSend() {
        qp.postSend(new SendWorkRequest(WR_SEND, WrOpcode.SEND, new Sge(sendMr.address(), INFO_BYTES, sendMr.lkey())).signaled());
    }

    private void postRecv() {
        qp.postRecv(new ReceiveWorkRequest(WR_RECV, new Sge(recvMr.address(), INFO_BYTES, recvMr.lkey())));
    }

    private void rdma(WrOpcode op, Info remote, int len) {
        qp.postSend(new SendWorkRequest(WR_RDMA, op, new Sge(rdmaMr.address(), len, rdmaMr.lkey()))
                .remote(remote.addr(), remote.rkey()).signaled());
    }

    /** Server: the next receive as an info, or null when the client disconnected first. */
    private Info awaitInfo(String state) throws IOException, InterruptedException {
        WorkCompletion wc = next(state, true);
        if (wc == null) return null;
        ByteBuffer b = recvMr.buffer();
        Info info = new Info(b.getLong(0), b.getInt(8), b.getInt(12));
        debug(String.format(Locale.ROOT, "Received rkey %x addr %x len %d from peer", info.rkey(), info.addr(), info.size()));
        postRecv();
        if (info.size() < 0 || info.size() > size) {
            // rping would overrun its own rdma_buf here; refuse instead
            throw new IOException("peer advertised " + (info.size() & 0xFFFFFFFFL) + " bytes, more than our size " + size
                    + " (-S must match on both sides)");
        }
        return info;
    }

    private boolean awaitRecv(String state) throws IOException, InterruptedException {
        if (next(state, true) == null) {
            err.println("wait for " + state + ": the server disconnected");
            err.flush();
            return false;
        }
        postRecv();
        return true;
    }

    private void awaitRdma(String state, WcOpcode op) throws IOException, InterruptedException {
        WorkCompletion wc = next(state, false);
        if (wc == null) throw new IOException("wait for " + state + ": peer disconnected");
        if (wc.opcode() != op) throw new IOException("wait for " + state + ": got a " + wc.opcode() + " completion");
    }

    /**
     * The next receive or RDMA completion (send completions are consumed silently, as rping's CQ handler
     * does). Returns null when the peer disconnected: the signal, or (server side, between iterations) our
     * receive flushed because the QP went to the error state.
     */
    private WorkCompletion next(String state, boolean idle) throws IOException, InterruptedException {
        while (true) {
            int n = cq.poll(wcs, 1, POLL_SLICE_MS, TimeUnit.MILLISECONDS);
            if (n == 0) {
                if (disconnected.getAsBoolean()) return null;
                continue;
            }
            WorkCompletion wc = wcs[0];
            if (wc.status() == WcStatus.WR_FLUSH_ERR) {
                if (idle) return awaitDisconnect();
                continue;
            }
            if (!wc.ok()) {
                String why = qp.errorReason() == null ? "" : " (" + qp.errorReason() + ")";
                throw new IOException("cq completion failed status " + wc.status().ibvValue() + " " + wc.status() + why
                        + " while waiting for " + state);
            }
            if (wc.opcode() == WcOpcode.SEND) {
                debug("send completion");
                continue;
            }
            if (wc.opcode().isReceive()) {
                debug("recv completion");
                if (wc.byteLen() != INFO_BYTES) throw new IOException("Received bogus data, size " + wc.byteLen());
            } else {
                debug(wc.opcode() == WcOpcode.RDMA_READ ? "rdma read completion" : "rdma write completion");
            }
            return wc;
        }
    }

    /** Our receive was flushed: the QP is in error because the peer disconnected; wait for the signal briefly. */
    private WorkCompletion awaitDisconnect() throws InterruptedException, IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (System.nanoTime() < deadline) {
            if (disconnected.getAsBoolean()) return null;
            Thread.sleep(10);
        }
        if (qp.state() == QpState.ERR) return null;
        throw new IOException("receive flushed but the QP is " + qp.state());
    }

    private static String cString(ByteBuffer b) {
        int end = 0;
        while (end < b.limit() && b.get(end) != 0) end++;
        byte[] s = new byte[end];
        b.get(0, s);
        return new String(s, StandardCharsets.ISO_8859_1);
    }

    private void debug(String line) {
        if (debug) {
            out.println(line);
            out.flush();
        }
    }

    /** Destroys the QP and CQ and deregisters the buffers. */
    @Override
    public void close() {
        qp.destroy();
        recvMr.deregister();
        sendMr.deregister();
        rdmaMr.deregister();
        if (startMr != null) startMr.deregister();
    }

    boolean isServer() {
        return server;
    }
}
