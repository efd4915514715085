package io.jroce.cli.cmtools;

import io.jroce.cli.Converters;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WcStatus;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;
import io.jroce.endpoint.cm.CmId;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * One RC connection of {@code ucmatose}, with cmatose.c's resources: a protection domain, a send and a receive CQ
 * and a QP with room for {@code count} work requests each (every send signalled), and the message buffers; then
 * {@code count} receives posted before the connection is accepted or requested, and {@code count} SENDs of the
 * message size when its turn comes.
 */
final class RcConnection extends ToolConnection {
    final CompletionQueue sendCq;
    final CompletionQueue recvCq;
    final QueuePair qp;
    /** DISCONNECTED came. */
    boolean disconnected;
    /** Completions polled so far: successful sends, sends flushed, successful receives. */
    int sendsDone;
    int sendsFlushed;
    int recvsDone;

    RcConnection(int index, CmId id, Device dev, int count, int size) {
        super(index, id, dev, count, size, size, 'a');
        int depth = Math.max(1, count);
        this.sendCq = dev.createCq(depth);
        this.recvCq = dev.createCq(depth);
        this.qp = id.createQp(pd, new QpInitAttr(sendCq, recvCq).maxSendWr(depth).maxRecvWr(depth).maxSendSge(1).maxRecvSge(1)
                .maxInlineData(0).sqSigAll(true));
    }

    /** All {@code count} receives, each the whole message size (they share one buffer: the content is not kept). */
    @Override
    void postRecvs() {
        for (int i = 0; i < count; i++) qp.postRecv(new ReceiveWorkRequest(i, new Sge(recvMr.address(), size, recvMr.lkey())));
    }

    /** All {@code count} SENDs at once. */
    void postSends() {
        for (int i = 0; i < count; i++) qp.postSend(new SendWorkRequest(i, WrOpcode.SEND, new Sge(sendMr.address(), size, sendMr.lkey())));
    }

    boolean sendsAccounted() {
        return sendsDone + sendsFlushed >= count;
    }

    /**
     * Takes what the send CQ holds now. A send flushed is counted apart (the caller decides whether that is fine);
     * any other error is returned as a line.
     */
    String pollSends(WorkCompletion[] wcs) {
        int n;
        while ((n = sendCq.poll(wcs, wcs.length)) > 0) {
            for (int i = 0; i < n; i++) {
                if (wcs[i].ok()) sendsDone++;
                else if (wcs[i].status() == WcStatus.WR_FLUSH_ERR) sendsFlushed++;
                else return failed("send", wcs[i]);
            }
        }
        return null;
    }

    /** Takes what the receive CQ holds now; an error (a flush included: the peer went away) is returned as a line. */
    String pollRecvs(WorkCompletion[] wcs) {
        int n;
        while ((n = recvCq.poll(wcs, wcs.length)) > 0) {
            for (int i = 0; i < n; i++) {
                if (!wcs[i].ok()) return failed("receive", wcs[i]);
                recvsDone++;
            }
        }
        return null;
    }

    /** Waits for every send's completion, each successful; a line saying what went wrong otherwise. */
    String awaitSends(WorkCompletion[] wcs, Duration idle) throws InterruptedException {
        return await(sendCq, wcs, idle, true);
    }

    /** Waits for every receive's completion, each successful; a line saying what went wrong otherwise. */
    String awaitRecvs(WorkCompletion[] wcs, Duration idle) throws InterruptedException {
        return await(recvCq, wcs, idle, false);
    }

    private String await(CompletionQueue cq, WorkCompletion[] wcs, Duration idle, boolean sends) throws InterruptedException {
        long last = System.nanoTime();
        while ((sends ? sendsDone : recvsDone) < count) {
            int n = cq.poll(wcs, wcs.length, CmRun.SLICE.toNanos(), TimeUnit.NANOSECONDS);
            if (n == 0) {
                if (System.nanoTime() - last > idle.toNanos()) {
                    return (sends ? sendsDone + " of " + count + " sends completed" : "received " + recvsDone + " of " + count + " messages")
                            + ", then nothing for " + Converters.seconds(idle);
                }
                continue;
            }
            last = System.nanoTime();
            for (int i = 0; i < n; i++) {
                if (!wcs[i].ok()) return failed(sends ? "send" : "receive", wcs[i]);
                if (sends) sendsDone++;
                else recvsDone++;
            }
        }
        return null;
    }

    private String failed(String what, WorkCompletion wc) {
        String why = qp.errorReason() == null ? "" : " (" + qp.errorReason() + ")";
        return what + " completion with status " + wc.status().ibvValue() + " " + wc.status() + why;
    }

    /** Destroys the QP and deregisters the buffers (the id is the run's to destroy). */
    @Override
    public void close() {
        qp.destroy();
        deregister();
    }
}
