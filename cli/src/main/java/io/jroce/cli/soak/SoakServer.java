package io.jroce.cli.soak;

import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The server's side of the soak, on one thread. When the SEND of round r arrives on a QP (the QP's SENDs arrive
 * in order, so the receive says which round it is), it verifies the SEND and the RDMA WRITE the client made just
 * before it, fills its read slot with the round's READ pattern, posts the receive again and replies with a SEND.
 * A reply's buffer is reused only once the reply before it in that slot has completed.
 */
final class SoakServer implements Runnable {
    private final SoakQps q;
    private final SoakLayout layout;
    private final SoakPattern pattern;
    private final SoakCounters counters;
    private final long[] nextRound;
    private final boolean[][] replyBusy;
    private final long[][] replyWaiting;
    private final boolean[] failed;
    private volatile boolean stopping;
    private volatile boolean abandon;
    private int repliesInFlight;

    SoakServer(SoakQps q, SoakPattern pattern, SoakCounters counters) {
        this.q = q;
        this.layout = q.layout;
        this.pattern = pattern;
        this.counters = counters;
        int n = q.size();
        this.nextRound = new long[n];
        this.replyBusy = new boolean[n][layout.depth()];
        this.replyWaiting = new long[n][layout.depth()];
        for (long[] w : replyWaiting) java.util.Arrays.fill(w, -1);
        this.failed = new boolean[n];
    }

    static int sendWr(int depth) {
        return depth + 1;
    }

    /** Every QP's receives for the client's SENDs; before the QPs connect. */
    void postReceives() {
        for (int i = 0; i < q.size(); i++) {
            for (int s = 0; s < layout.depth(); s++) q.postRecv(i, SoakOp.SEND, s, layout.sendAt(s), layout.maxLen());
        }
    }

    /** The client has stopped: the thread ends once every reply has completed. */
    void stop() {
        stopping = true;
    }

    void abandon() {
        stopping = true;
        abandon = true;
    }

    @Override
    public void run() {
        WorkCompletion[] wcs = new WorkCompletion[64];
        for (int i = 0; i < wcs.length; i++) wcs[i] = new WorkCompletion();
        try {
            while (!abandon && !(stopping && repliesInFlight == 0)) {
                int n = q.cq.poll(wcs, wcs.length, 50, TimeUnit.MILLISECONDS);
                for (int k = 0; k < n; k++) completion(wcs[k]);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void completion(WorkCompletion wc) {
        long id = wc.wrId();
        int qp = SoakQps.qpOf(id);
        SoakOp op = SoakQps.opOf(id);
        if (qp >= q.size() || op == null || failed[qp]) return;
        if (!wc.ok()) {
            QueuePair p = q.qps.get(qp);
            String why = p.errorReason() == null ? "" : " (" + p.errorReason() + ")";
            counters.errorCompletion(qp, (op == SoakOp.SEND ? "a receive" : op.toString()) + " completed with " + wc.status() + why);
            failed[qp] = true;
            for (boolean busy : replyBusy[qp]) if (busy) repliesInFlight--;
            return;
        }
        if (op == SoakOp.SEND) arrived(qp, (int) SoakQps.valueOf(id), wc.byteLen());
        else if (op == SoakOp.REPLY) replied(qp, SoakQps.valueOf(id));
        else counters.failed(qp, op, SoakQps.valueOf(id), "an unexpected completion " + wc);
    }

    /** The SEND of the QP's next round is in receive slot {@code slot}. */
    private void arrived(int qp, int slot, int byteLen) {
        long r = nextRound[qp]++;
        ByteBuffer region = q.mrs.get(qp).buffer();
        long ss = pattern.seed(qp, SoakOp.SEND, r);
        int sl = SoakPattern.length(ss, layout.maxLen());
        String bad = slot != layout.slot(r) ? "landed in slot " + slot + ", expected " + layout.slot(r)
                : byteLen != sl ? byteLen + " bytes, expected " + sl
                : pattern.check(region, layout.sendAt(slot), sl, ss);
        if (bad != null) counters.failed(qp, SoakOp.SEND, r, bad);
        else counters.verified(SoakOp.SEND, sl);
        int s = layout.slot(r);
        long ws = pattern.seed(qp, SoakOp.WRITE, r);
        int wl = SoakPattern.length(ws, layout.maxLen());
        bad = pattern.check(region, layout.writeAt(s), wl, ws);
        if (bad != null) counters.failed(qp, SoakOp.WRITE, r, bad);
        else counters.verified(SoakOp.WRITE, wl);
        long rs = pattern.seed(qp, SoakOp.READ, r);
        pattern.fill(region, layout.readAt(s), SoakPattern.length(rs, layout.maxLen()), rs);
        q.postRecv(qp, SoakOp.SEND, slot, layout.sendAt(slot), layout.maxLen());
        if (replyBusy[qp][s]) replyWaiting[qp][s] = r;
        else reply(qp, r);
    }

    private void reply(int qp, long r) {
        int s = layout.slot(r);
        long seed = pattern.seed(qp, SoakOp.REPLY, r);
        int len = SoakPattern.length(seed, layout.maxReply());
        pattern.fill(q.mrs.get(qp).buffer(), layout.replyAt(s), len, seed);
        q.qps.get(qp).postSend(new SendWorkRequest(SoakQps.wrId(qp, SoakOp.REPLY, r), WrOpcode.SEND, q.sge(qp, layout.replyAt(s), len))
                .signaled());
        replyBusy[qp][s] = true;
        repliesInFlight++;
    }

    private void replied(int qp, long r) {
        int s = layout.slot(r);
        replyBusy[qp][s] = false;
        repliesInFlight--;
        if (replyWaiting[qp][s] >= 0) {
            long next = replyWaiting[qp][s];
            replyWaiting[qp][s] = -1;
            reply(qp, next);
        }
    }

    /**
     * After the thread ended: what does not add up against the rounds the client completed on each QP (a SEND
     * lost or received twice, an atomic executed twice or not at all, a QP in error).
     */
    List<String> audit(long[] clientRounds) {
        List<String> problems = new ArrayList<>();
        if (clientRounds.length != q.size()) {
            problems.add("the client reported " + clientRounds.length + " QPs, the server has " + q.size());
            return problems;
        }
        for (int i = 0; i < q.size(); i++) {
            QueuePair p = q.qps.get(i);
            if (p.state() == QpState.ERR) {
                problems.add("QP " + i + " is in the error state" + (p.errorReason() == null ? "" : " (" + p.errorReason() + ")"));
                continue;
            }
            if (nextRound[i] != clientRounds[i]) {
                problems.add("QP " + i + ": the server received " + nextRound[i] + " SENDs, the client completed " + clientRounds[i] + " rounds");
            }
            long counter = q.mrs.get(i).getLong(layout.counterAt());
            if (counter != clientRounds[i]) {
                problems.add("QP " + i + ": the FETCH_AND_ADD counter is " + counter + " after " + clientRounds[i] + " rounds");
            }
        }
        if (repliesInFlight != 0) problems.add(repliesInFlight + " replies never completed");
        return problems;
    }
}
