package io.jroce.cli.node;

import io.jroce.cli.node.Session.Failure;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.QpCounters;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.VerbsException;
import io.jroce.endpoint.WcStatus;
import io.jroce.endpoint.WorkCompletion;

import java.io.PrintWriter;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The completions a session has taken off each CQ but not yet matched by a {@code wait} or {@code expect}
 * (its backlog: an {@code expect wr_id=} may pick one from the middle and leave the others for later), and
 * the signaled work requests still waiting for theirs, for the {@code --results} lines.
 */
final class Completions {
    /** A signaled work request: what its result line reports once its completion arrives. */
    record Pending(String op, String flags, long size, long t0, long packets0, int line, QueuePair qp) {
    }

    private final boolean results;
    private final PrintWriter out;
    private final Map<CompletionQueue, ArrayDeque<WorkCompletion>> backlog = new HashMap<>();
    private final Map<String, Pending> pending = new HashMap<>();
    private final WorkCompletion[] scratch = new WorkCompletion[64];

    /** @param results whether to print a result line per signaled work request */
    Completions(boolean results, PrintWriter out) {
        this.results = results;
        this.out = out;
    }

    /** A new CQ, with an empty backlog. */
    void add(CompletionQueue cq) {
        backlog.put(cq, new ArrayDeque<>());
    }

    /** Completions in the CQ and in its backlog. */
    int size(CompletionQueue cq) {
        return cq.size() + backlog.get(cq).size();
    }

    /** The QP's packets so far, when result lines need them (else 0). */
    long packets(QueuePair qp) {
        if (!results) return 0;
        QpCounters c = qp.counters();
        return c.packetsIn + c.packetsOut;
    }

    /** A signaled work request just posted. */
    void track(long wrId, Pending p) {
        pending.put(key(p.qp().qpNum(), wrId), p);
    }

    /** Up to {@code max} completions, without waiting. */
    List<WorkCompletion> poll(CompletionQueue cq, long max) throws Failure, InterruptedException {
        drainOverrun(cq, 0);
        ArrayDeque<WorkCompletion> q = backlog.get(cq);
        List<WorkCompletion> got = new ArrayList<>();
        for (long i = 0; i < max && !q.isEmpty(); i++) got.add(q.poll());
        return got;
    }

    /**
     * The first completion with that wr_id (or the first of all when {@code wrId} is null), waiting for the
     * CQ until {@code deadline} (System.nanoTime); null when none came.
     */
    WorkCompletion next(CompletionQueue cq, Long wrId, long deadline) throws Failure, InterruptedException {
        ArrayDeque<WorkCompletion> q = backlog.get(cq);
        WorkCompletion wc;
        while ((wc = take(q, wrId)) == null) {
            long left = deadline - System.nanoTime();
            if (left <= 0 || drainOverrun(cq, left) == 0) return null;
        }
        return wc;
    }

    /**
     * Takes out of {@code cq} and its backlog every flushed completion (WR_FLUSH_ERR) of QP {@code qpn}; returns how
     * many. For a QP that was never connected, these are the receives a REJ flushed.
     */
    int discardFlushed(CompletionQueue cq, int qpn) throws Failure, InterruptedException {
        drainOverrun(cq, 0);
        int n = 0;
        for (Iterator<WorkCompletion> it = backlog.get(cq).iterator(); it.hasNext(); ) {
            WorkCompletion wc = it.next();
            if (wc.qpNum() == qpn && wc.status() == WcStatus.WR_FLUSH_ERR) {
                it.remove();
                n++;
            }
        }
        return n;
    }

    /** The completions left in the backlog, described. */
    List<String> waiting(CompletionQueue cq) {
        return backlog.get(cq).stream().map(Completions::describe).toList();
    }

    static String describe(WorkCompletion wc) {
        StringBuilder sb = new StringBuilder("wr_id=").append(Long.toUnsignedString(wc.wrId())).append(' ').append(wc.status());
        if (wc.status() == WcStatus.SUCCESS) {
            sb.append(' ').append(wc.opcode()).append(" len=").append(wc.byteLen());
            if (wc.hasImm()) sb.append(String.format(" imm=0x%x", wc.immData()));
            if (wc.hasInv()) sb.append(String.format(" inv=0x%x", wc.invalidatedRkey()));
            if (wc.hasGrh()) sb.append(String.format(" src_qp=0x%06x", wc.srcQp()));
        } else {
            sb.append(" vendor_err=").append(wc.vendorErr());
        }
        return sb.append(String.format(" qp=0x%06x", wc.qpNum())).toString();
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

    private int drainOverrun(CompletionQueue cq, long waitNanos) throws Failure, InterruptedException {
        try {
            return drain(cq, waitNanos);
        } catch (VerbsException e) {
            throw new Failure(Session.oneLine(e.getMessage()), e);
        }
    }

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
        if (p == null || !results) return;
        long t = System.nanoTime() - p.t0();
        long packets = packets(p.qp()) - p.packets0();
        out.printf("result op=%s%s size=%d packets=%d time_us=%.1f status=%s wr_id=%s line=%d at_ms=%d%n", p.op(),
                p.flags().isEmpty() ? "" : " flags=" + p.flags(), p.size(), packets, t / 1e3, wc.status(),
                Long.toUnsignedString(wc.wrId()), p.line(), System.currentTimeMillis());
    }

    private static String key(int qpn, long wrId) {
        return qpn + "/" + wrId;
    }
}
