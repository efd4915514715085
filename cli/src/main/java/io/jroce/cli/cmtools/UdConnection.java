package io.jroce.cli.cmtools;

import io.jroce.cli.Converters;
import io.jroce.endpoint.AddressHandle;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QpType;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;
import io.jroce.endpoint.cm.CmId;
import io.jroce.endpoint.cm.CmUdParam;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * One UD "connection" of {@code udaddy}: an id of the UDP port space with udaddy.c's resources, a protection domain,
 * one CQ for sends and receives ({@code 2 * count} entries) and a UD QP with room for {@code count} work requests
 * each way; {@code count} receives of the message size plus the 40-byte GRH area, posted before the SIDR_REQ is
 * sent or answered; and where this side's messages go (address handle, QPN, Q_Key), from the SIDR_REP (client) or
 * from the first message received (server).
 */
final class UdConnection extends ToolConnection {
    /** The GRH area at the head of every UD receive buffer (IBA 11.4.1.2). */
    static final int GRH_BYTES = 40;
    /** Work request IDs: receives are 0..count-1, sends this bit and their index (a failed completion has no opcode). */
    private static final long SEND_WR = 1L << 32;

    private final CompletionQueue cq;
    final QueuePair qp;
    /** Where the sends go: set by {@link #sendTo} or by the first receive ({@link #await} with replyTo). */
    private AddressHandle ah;
    private int remoteQpn;
    private int remoteQkey;
    /** Client: the SIDR_REQ was answered, either way. */
    boolean settled;
    int recvsDone;
    int sendsDone;

    UdConnection(int index, CmId id, Device dev, int count, int size) {
        super(index, id, dev, count, size, count * (size + GRH_BYTES), 'A');
        int depth = Math.max(1, count);
        this.cq = dev.createCq(2 * depth);
        this.qp = id.createQp(pd, new QpInitAttr(cq).qpType(QpType.UD).maxSendWr(depth).maxRecvWr(depth).maxSendSge(1)
                .maxRecvSge(1).maxInlineData(0));
    }

    /** Every receive, each with its own slot (so the GRH of the first one is still there when the reply is made). */
    @Override
    void postRecvs() {
        for (int i = 0; i < count; i++) {
            qp.postRecv(new ReceiveWorkRequest(i, new Sge(recvMr.address() + (long) i * (size + GRH_BYTES), size + GRH_BYTES, recvMr.lkey())));
        }
    }

    /** Client: where the SIDR_REP says the server's QP is. */
    void sendTo(CmUdParam ud) {
        ah = ud.ah();
        remoteQpn = ud.qpNum();
        remoteQkey = ud.qkey();
    }

    boolean hasDestination() {
        return ah != null;
    }

    /** All {@code count} SEND_WITH_IMMs at once, the immediate data our QPN (udaddy's way to say who sent them). */
    void postSends() {
        for (int i = 0; i < count; i++) {
            qp.postSend(new SendWorkRequest(SEND_WR | i, WrOpcode.SEND_WITH_IMM, new Sge(sendMr.address(), size, sendMr.lkey()))
                    .immData(qp.qpNum()).ud(ah, remoteQpn, remoteQkey).signaled());
        }
    }

    /**
     * Waits until {@code recvs} receives and {@code sends} sends have completed, each successfully; a line saying what
     * went wrong otherwise. With {@code replyTo} the first receive sets where the sends go: the address handle from
     * its GRH, the QPN from its immediate data and our own Q_Key, as udaddy.c's server does.
     */
    String await(WorkCompletion[] wcs, int recvs, int sends, boolean replyTo, Duration idle) throws InterruptedException {
        long last = System.nanoTime();
        while (recvsDone < recvs || sendsDone < sends) {
            int n = cq.poll(wcs, wcs.length, CmRun.SLICE.toNanos(), TimeUnit.NANOSECONDS);
            if (n == 0) {
                if (System.nanoTime() - last > idle.toNanos()) {
                    String got = recvsDone < recvs ? "received " + recvsDone + " of " + recvs + " messages"
                            : sendsDone + " of " + sends + " sends completed";
                    return got + ", then nothing for " + Converters.seconds(idle);
                }
                continue;
            }
            last = System.nanoTime();
            for (int i = 0; i < n; i++) {
                WorkCompletion wc = wcs[i];
                boolean send = (wc.wrId() & SEND_WR) != 0;
                if (!wc.ok()) {
                    return (send ? "send" : "receive") + " completion with status " + wc.status().ibvValue() + " " + wc.status();
                }
                if (send) {
                    sendsDone++;
                    continue;
                }
                recvsDone++;
                if (replyTo && ah == null) {
                    if (!wc.hasImm()) return "a message without immediate data: the sender's QPN is unknown, so no reply can go back";
                    ByteBuffer grh = recvMr.buffer().position((int) wc.wrId() * (size + GRH_BYTES));
                    ah = pd.createAhFromWc(wc, grh);
                    remoteQpn = wc.immData() & 0xFFFFFF;
                    remoteQkey = id.qkey(); // udaddy.c create_reply_ah: the Q_Key of our own QP
                }
            }
        }
        return null;
    }

    @Override
    public void close() {
        if (ah != null && id.udParam() == null) ah.destroy(); // the SIDR_REP's belongs to the id
        qp.destroy();
        deregister();
    }
}
