package io.jroce.cli.soak;

import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

/**
 * The client's side of the soak, on one thread: on every QP, rounds of
 * <ol>
 *   <li>an RDMA WRITE into the server's write slot, a SEND (the server verifies both when the SEND arrives: the
 *       WRITE was executed before it, IBA 9.5 ordering) and a FETCH_AND_ADD of 1 on the QP's counter, which must
 *       return the round's number (any lost or repeated execution shows);</li>
 *   <li>the server's reply, a SEND back, verified here; the server has filled its read slot before sending it;</li>
 *   <li>an RDMA READ of that slot, verified here.</li>
 * </ol>
 * Up to {@code depth} rounds are in flight per QP; round r + depth starts when round r is complete, so no slot is
 * written before the side that reads it is done with it. Rounds of a QP complete in order (the READ is the last
 * work request of a round, and a QP completes its sends in order).
 */
final class SoakClient implements Runnable {
    private static final int WRITE_DONE = 1;
    private static final int SEND_DONE = 2;
    private static final int ATOMIC_DONE = 4;
    private static final int REPLY_DONE = 8;
    private static final int READ_DONE = 16;
    private static final int ROUND_DONE = 31;

    private final SoakQps q;
    private final SoakLayout layout;
    private final SoakPattern pattern;
    private final SoakCounters counters;
    private final long[] remoteVa;
    private final int[] remoteRkey;
    private final long[] nextRound;
    private final long[] nextReply;
    private final long[] completed;
    private final int[][] done;
    private final boolean[] failed;
    private volatile boolean stopping;
    private volatile boolean abandon;
    private int inFlight;

    SoakClient(SoakQps q, SoakPattern pattern, SoakCounters counters, long[] remoteVa, int[] remoteRkey) {
        this.q = q;
        this.layout = q.layout;
        this.pattern = pattern;
        this.counters = counters;
        this.remoteVa = remoteVa;
        this.remoteRkey = remoteRkey;
        int n = q.size();
        this.nextRound = new long[n];
        this.nextReply = new long[n];
        this.completed = new long[n];
        this.done = new int[n][layout.depth()];
        this.failed = new boolean[n];
    }

    /** The send queue depth a QP needs: three requests per round at once, then the READ. */
    static int sendWr(int depth) {
        return 4 * depth + 1;
    }

    /** Posts every QP's receives for replies; before the QPs connect. */
    void postReceives() {
        for (int i = 0; i < q.size(); i++) {
            for (int s = 0; s < layout.depth(); s++) q.postRecv(i, SoakOp.REPLY, s, layout.replyAt(s), layout.maxReply());
        }
    }

    /** No new rounds from now on; the thread ends once every round in flight is complete. */
    void stop() {
        stopping = true;
    }

    /** Ends the thread now, rounds in flight or not (after a drain that took too long). */
    void abandon() {
        stopping = true;
        abandon = true;
    }

    /** Rounds completed per QP; read after the thread ended. */
    long[] completed() {
        return completed.clone();
    }

    /** Rounds started and not completed on QPs not in error; read after the thread ended. */
    long unfinished() {
        long n = 0;
        for (int i = 0; i < q.size(); i++) if (!failed[i]) n += nextRound[i] - completed[i];
        return n;
    }

    @Override
    public void run() {
        WorkCompletion[] wcs = new WorkCompletion[64];
        for (int i = 0; i < wcs.length; i++) wcs[i] = new WorkCompletion();
        for (int i = 0; i < q.size(); i++) {
            for (int r = 0; r < layout.depth(); r++) startRound(i);
        }
        try {
            while (!abandon && !(stopping && inFlight == 0)) {
                int n = q.cq.poll(wcs, wcs.length, 50, TimeUnit.MILLISECONDS);
                for (int k = 0; k < n; k++) completion(wcs[k]);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void startRound(int qp) {
        long r = nextRound[qp]++;
        int s = layout.slot(r);
        done[qp][s] = 0;
        ByteBuffer region = q.mrs.get(qp).buffer();
        long ws = pattern.seed(qp, SoakOp.WRITE, r);
        int wl = SoakPattern.length(ws, layout.maxLen());
        pattern.fill(region, layout.writeAt(s), wl, ws);
        long ss = pattern.seed(qp, SoakOp.SEND, r);
        int sl = SoakPattern.length(ss, layout.maxLen());
        pattern.fill(region, layout.sendAt(s), sl, ss);
        long va = remoteVa[qp];
        int rkey = remoteRkey[qp];
        SendWorkRequest write = new SendWorkRequest(SoakQps.wrId(qp, SoakOp.WRITE, r), WrOpcode.RDMA_WRITE, q.sge(qp, layout.writeAt(s), wl))
                .remote(va + layout.writeAt(s), rkey).signaled();
        SendWorkRequest send = new SendWorkRequest(SoakQps.wrId(qp, SoakOp.SEND, r), WrOpcode.SEND, q.sge(qp, layout.sendAt(s), sl)).signaled();
        SendWorkRequest add = new SendWorkRequest(SoakQps.wrId(qp, SoakOp.ATOMIC, r), WrOpcode.ATOMIC_FETCH_AND_ADD,
                q.sge(qp, layout.atomicAt(s), 8)).remote(va + layout.counterAt(), rkey).compareAdd(1).signaled();
        q.qps.get(qp).postSend(write.next(send.next(add)));
        inFlight++;
    }

    private void completion(WorkCompletion wc) {
        long id = wc.wrId();
        int qp = SoakQps.qpOf(id);
        SoakOp op = SoakQps.opOf(id);
        if (qp >= q.size() || op == null) return;
        if (failed[qp]) return; // the flushes that follow a QP's first error
        if (!wc.ok()) {
            QueuePair p = q.qps.get(qp);
            String why = p.errorReason() == null ? "" : " (" + p.errorReason() + ")";
            counters.errorCompletion(qp, op + " completed with " + wc.status() + why);
            failed[qp] = true;
            inFlight -= (int) (nextRound[qp] - completed[qp]);
            return;
        }
        ByteBuffer region = q.mrs.get(qp).buffer();
        switch (op) {
            case WRITE -> roundStep(qp, SoakQps.valueOf(id), WRITE_DONE, op);
            case SEND -> roundStep(qp, SoakQps.valueOf(id), SEND_DONE, op);
            case ATOMIC -> {
                long r = SoakQps.valueOf(id);
                long old = q.mrs.get(qp).getLong(layout.atomicAt(layout.slot(r)));
                if (old != r) {
                    counters.failed(qp, SoakOp.ATOMIC, r, "FETCH_AND_ADD returned " + old + ", expected " + r
                            + (old > r ? " (an add executed twice)" : " (an add lost)"));
                } else {
                    counters.verified(SoakOp.ATOMIC, 8);
                }
                roundStep(qp, r, ATOMIC_DONE, op);
            }
            case REPLY -> {
                long r = nextReply[qp]++;
                int slot = (int) SoakQps.valueOf(id);
                long seed = pattern.seed(qp, SoakOp.REPLY, r);
                int len = SoakPattern.length(seed, layout.maxReply());
                String bad = slot != layout.slot(r) ? "landed in slot " + slot + ", expected " + layout.slot(r)
                        : wc.byteLen() != len ? wc.byteLen() + " bytes, expected " + len
                        : pattern.check(region, layout.replyAt(slot), len, seed);
                if (bad != null) counters.failed(qp, SoakOp.REPLY, r, bad);
                else counters.verified(SoakOp.REPLY, len);
                q.postRecv(qp, SoakOp.REPLY, slot, layout.replyAt(slot), layout.maxReply());
                if (r >= nextRound[qp]) {
                    counters.failed(qp, SoakOp.REPLY, r, "a reply for a round not started (" + nextRound[qp] + " started)");
                    return;
                }
                int s = layout.slot(r);
                long rs = pattern.seed(qp, SoakOp.READ, r);
                int rl = SoakPattern.length(rs, layout.maxLen());
                q.qps.get(qp).postSend(new SendWorkRequest(SoakQps.wrId(qp, SoakOp.READ, r), WrOpcode.RDMA_READ,
                        q.sge(qp, layout.readAt(s), rl)).remote(remoteVa[qp] + layout.readAt(s), remoteRkey[qp]).signaled());
                roundStep(qp, r, REPLY_DONE, op);
            }
            case READ -> {
                long r = SoakQps.valueOf(id);
                long seed = pattern.seed(qp, SoakOp.READ, r);
                int len = SoakPattern.length(seed, layout.maxLen());
                String bad = pattern.check(region, layout.readAt(layout.slot(r)), len, seed);
                if (bad != null) counters.failed(qp, SoakOp.READ, r, bad);
                else counters.verified(SoakOp.READ, len);
                roundStep(qp, r, READ_DONE, op);
            }
            default -> counters.failed(qp, op, SoakQps.valueOf(id), "an unexpected completion " + wc);
        }
    }

    /** One more part of round {@code r} done; a complete round makes room for the next. */
    private void roundStep(int qp, long r, int bit, SoakOp op) {
        int s = layout.slot(r);
        if ((done[qp][s] & bit) != 0) {
            counters.failed(qp, op, r, "completed twice");
            return;
        }
        done[qp][s] |= bit;
        if (done[qp][s] != ROUND_DONE) return;
        if (r != completed[qp]) counters.failed(qp, SoakOp.READ, r, "completed before round " + completed[qp]);
        completed[qp]++;
        inFlight--;
        if (!stopping) startRound(qp);
    }
}
