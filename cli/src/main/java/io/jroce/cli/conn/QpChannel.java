package io.jroce.cli.conn;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WcOpcode;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * perftest's {@code -R} exchange channel: one RC QP (send and receive depth 1, as {@code create_comm_struct}
 * makes it) over which every exchange is one SEND each way ({@code rdma_write_data} / {@code rdma_read_data},
 * {@code rdma_write_keys} / {@code rdma_read_keys}). One receive of {@value #RECV_BYTES} bytes
 * ({@code sizeof(struct pingpong_dest)}, {@code post_one_recv_wqe}) is kept posted: the first before the
 * connection is made, the next after each message is taken. Messages must therefore not exceed 56 bytes, which
 * holds for every perftest exchange in this mode.
 */
public final class QpChannel implements ExchangeChannel {
    /** {@code sizeof(struct pingpong_dest)} on x86-64: the size of the receive perftest posts. */
    public static final int RECV_BYTES = 56;

    private final QueuePair qp;
    private final CompletionQueue sendCq;
    private final CompletionQueue recvCq;
    private final MemoryRegion sendBuf;
    private final MemoryRegion recvBuf;
    private final String peer;
    private final WorkCompletion[] wc = {new WorkCompletion()};
    private WorkCompletion pending;
    private Duration timeout;

    /**
     * Creates the QP (RESET; the caller hands it to the connection manager, which moves it to INIT, RTR and RTS)
     * and its buffers on {@code dev}. Call {@link #postFirstRecv} once the QP is in INIT.
     */
    public QpChannel(Device dev, String peer, Duration timeout) {
        ProtectionDomain pd = dev.allocPd();
        sendCq = dev.createCq(4);
        recvCq = dev.createCq(4);
        qp = pd.createQp(new QpInitAttr(sendCq, recvCq).maxSendWr(2).maxRecvWr(1));
        sendBuf = pd.allocateAndRegister(RECV_BYTES, Access.LOCAL_WRITE);
        recvBuf = pd.allocateAndRegister(RECV_BYTES, Access.LOCAL_WRITE);
        this.peer = peer;
        this.timeout = timeout;
    }

    public QueuePair qp() {
        return qp;
    }

    /** The receive perftest posts before {@code rdma_connect} / {@code rdma_accept}. */
    public void postFirstRecv() {
        postRecv();
    }

    @Override
    public void write(byte[] b) throws IOException {
        send(b, false);
    }

    /**
     * As {@link #write}, except that a SEND flushed (WR_FLUSH_ERR) counts as sent: after the last message the peer
     * disconnects as soon as it has read it, and its DREQ, which moves our QP to ERR, may be handled before the
     * ACK of the SEND it read (a retry-exceeded or any other error still fails).
     */
    @Override
    public void writeLast(byte[] b) throws IOException {
        send(b, true);
    }

    private void send(byte[] b, boolean last) throws IOException {
        if (b.length > RECV_BYTES) throw new IllegalArgumentException(b.length + " bytes: perftest receives at most " + RECV_BYTES);
        sendBuf.buffer().put(0, b);
        qp.postSend(new SendWorkRequest(1, WrOpcode.SEND, new Sge(sendBuf.address(), b.length, sendBuf.lkey())).signaled());
        WorkCompletion c = await(sendCq, "the completion of our SEND of " + b.length + " bytes");
        if (last && c.status() == io.jroce.endpoint.WcStatus.WR_FLUSH_ERR) return;
        if (!c.ok() || c.opcode() != WcOpcode.SEND) throw failed(c, "sending");
    }

    @Override
    public byte[] readFully(int n, String what) throws IOException {
        WorkCompletion c = pending != null ? pending : await(recvCq, what);
        pending = null;
        if (!c.ok()) throw failed(c, "waiting for " + what);
        if (c.byteLen() < n) {
            throw new IOException("peer " + peer + " sent " + c.byteLen() + " bytes where " + what + " (" + n
                    + " bytes) belongs: it speaks another protocol or version");
        }
        byte[] b = new byte[n];
        recvBuf.buffer().get(0, b);
        postRecv();
        return b;
    }

    @Override
    public boolean poll(Duration wait) throws IOException {
        if (pending != null) return true;
        try {
            if (recvCq.poll(wc, 1, Math.max(1, wait.toMillis()), TimeUnit.MILLISECONDS) == 0) return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted");
        }
        pending = wc[0].copy();
        if (!pending.ok()) throw failed(pending, "waiting for the peer");
        return true;
    }

    @Override
    public QpChannel timeout(Duration t) {
        this.timeout = t;
        return this;
    }

    @Override
    public String peer() {
        return peer;
    }

    /** Destroys the QP and deregisters the buffers (the connection manager's id is the caller's). */
    @Override
    public void close() {
        qp.destroy();
        sendBuf.deregister();
        recvBuf.deregister();
    }

    private void postRecv() {
        qp.postRecv(new ReceiveWorkRequest(2, new Sge(recvBuf.address(), RECV_BYTES, recvBuf.lkey())));
    }

    private WorkCompletion await(CompletionQueue cq, String what) throws IOException {
        try {
            if (cq.poll(wc, 1, timeout.toMillis(), TimeUnit.MILLISECONDS) == 0) {
                throw new PeerTimeout("peer " + peer + " sent nothing of " + what + " within " + timeout.toSeconds()
                        + " s over the rdma_cm exchange QP: it is stuck or failed; see its output");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted");
        }
        return wc[0].copy();
    }

    private IOException failed(WorkCompletion c, String doing) {
        String why = qp.errorReason() == null ? "" : " (" + qp.errorReason() + ")";
        return new IOException("the rdma_cm exchange QP with " + peer + " failed while " + doing + ": " + c.status() + why
                + ": the peer disconnected or crashed; see its output");
    }
}
