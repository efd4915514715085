package io.jroce.cli.soak;

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
import io.jroce.endpoint.Sge;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One side's QPs: a region per QP ({@link SoakLayout}), one completion queue for every send and receive, and
 * the QPs in INIT until {@link #connect}. Work request ids carry the QP's index, the operation and a round or
 * slot, so a completion says what it completes.
 */
final class SoakQps {
    /** Outstanding READs and atomics per QP in each direction (the device maximum). */
    static final int RD_ATOMIC = QueuePair.MAX_RD_ATOMIC;
    static final int ALL_ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;

    final Device dev;
    final SoakLayout layout;
    final CompletionQueue cq;
    final List<QueuePair> qps = new ArrayList<>();
    final List<MemoryRegion> mrs = new ArrayList<>();
    final int[] psn;

    /** {@code sendWr} and {@code recvWr}: the depth of each QP's queues. */
    SoakQps(Device dev, int count, SoakLayout layout, int sendWr, int recvWr) {
        this.dev = dev;
        this.layout = layout;
        this.cq = dev.createCq(count * (sendWr + recvWr) + 16);
        this.psn = new int[count];
        ProtectionDomain pd = dev.allocPd();
        for (int i = 0; i < count; i++) {
            MemoryRegion mr = pd.allocateAndRegister(layout.regionBytes(), ALL_ACCESS);
            QueuePair qp = pd.createQp(new QpInitAttr(cq).maxSendWr(sendWr).maxRecvWr(recvWr));
            RcConnect.toInit(qp, RcConnect.Params.defaults().accessFlags(ALL_ACCESS));
            mrs.add(mr);
            qps.add(qp);
            psn[i] = ThreadLocalRandom.current().nextInt(1 << 24);
        }
    }

    int size() {
        return qps.size();
    }

    int[] qpns() {
        int[] n = new int[qps.size()];
        for (int i = 0; i < n.length; i++) n[i] = qps.get(i).qpNum();
        return n;
    }

    /** Every QP to RTR and RTS towards its peer QP of the same index. */
    void connect(InetAddress peer, int[] peerQpn, int[] peerPsn, Mtu mtu, int qpTimeout, int extensions) {
        RcConnect.Params p = RcConnect.Params.defaults().mtu(mtu).timeout(qpTimeout).retryCnt(7).rnrRetry(7).minRnrTimer(12)
                .rdAtomic(RD_ATOMIC).accessFlags(ALL_ACCESS).extensions(extensions);
        for (int i = 0; i < qps.size(); i++) {
            RcConnect.connect(qps.get(i), RcConnect.Peer.of(peer, peerQpn[i], peerPsn[i]), psn[i], p);
        }
    }

    /** A receive into the slot of area {@code at} of QP {@code qp}, {@code len} bytes. */
    void postRecv(int qp, SoakOp op, int slot, int at, int len) {
        MemoryRegion mr = mrs.get(qp);
        qps.get(qp).postRecv(new ReceiveWorkRequest(wrId(qp, op, slot), new Sge(mr.address() + at, len, mr.lkey())));
    }

    Sge sge(int qp, int at, int len) {
        MemoryRegion mr = mrs.get(qp);
        return new Sge(mr.address() + at, len, mr.lkey());
    }

    static long wrId(int qp, SoakOp op, long value) {
        return ((long) qp << 48) | ((long) op.ordinal() << 40) | (value & 0xFF_FFFF_FFFFL);
    }

    static int qpOf(long wrId) {
        return (int) (wrId >>> 48);
    }

    static SoakOp opOf(long wrId) {
        int o = (int) (wrId >>> 40) & 0xFF;
        return o < SoakOp.ALL.length ? SoakOp.ALL[o] : null;
    }

    static long valueOf(long wrId) {
        return wrId & 0xFF_FFFF_FFFFL;
    }
}
