package io.jroce.endpoint;

import java.net.InetAddress;
import java.util.EnumSet;
import java.util.Set;

/**
 * Queue pair attributes for {@link QueuePair#modify} and {@link QueuePair#query}, in the spirit of
 * {@code struct ibv_qp_attr} with its attribute mask: every setter records its field in {@link #mask()},
 * and a transition checks that exactly the attributes it requires were given.
 */
public final class QpAttr {
    /** The attribute mask bits ({@code IBV_QP_*}). */
    public enum Field {
        STATE, ACCESS_FLAGS, PKEY_INDEX, PORT, PATH_MTU, DEST_QPN, AV, RQ_PSN, MAX_DEST_RD_ATOMIC,
        MIN_RNR_TIMER, SQ_PSN, TIMEOUT, RETRY_CNT, RNR_RETRY, MAX_QP_RD_ATOMIC,
        /** The Q_Key of a UD QP ({@code IBV_QP_QKEY}). */
        QKEY
    }

    private final EnumSet<Field> mask = EnumSet.noneOf(Field.class);
    QpState state;
    int accessFlags;
    int pkeyIndex;
    int port = 1;
    Mtu pathMtu = Mtu.MTU_1024;
    int destQpNum;
    InetAddress destAddress;
    int destPort = io.jroce.wire.RoceV2.UDP_PORT;
    int rqPsn;
    int sqPsn;
    int maxDestRdAtomic;
    int maxRdAtomic;
    int minRnrTimer;
    int timeout;
    int retryCnt;
    int rnrRetry;
    int qkey;

    public Set<Field> mask() { return mask; }
    public boolean has(Field f) { return mask.contains(f); }

    public QpAttr state(QpState v) { state = v; mask.add(Field.STATE); return this; }
    public QpAttr accessFlags(int v) { accessFlags = v; mask.add(Field.ACCESS_FLAGS); return this; }
    public QpAttr pkeyIndex(int v) { pkeyIndex = v; mask.add(Field.PKEY_INDEX); return this; }
    public QpAttr port(int v) { port = v; mask.add(Field.PORT); return this; }
    public QpAttr pathMtu(Mtu v) { pathMtu = v; mask.add(Field.PATH_MTU); return this; }
    public QpAttr destQpNum(int v) { destQpNum = v; mask.add(Field.DEST_QPN); return this; }
    /** The address vector: the peer's IP address (of the device's family; for IPv4 its GID is the IPv4-mapped form) and UDP port. */
    public QpAttr dest(InetAddress address, int udpPort) { destAddress = address; destPort = udpPort; mask.add(Field.AV); return this; }
    public QpAttr dest(InetAddress address) { return dest(address, io.jroce.wire.RoceV2.UDP_PORT); }
    public QpAttr dest(Gid gid) { return dest(gid.toInetAddress()); }
    public QpAttr rqPsn(int v) { rqPsn = v; mask.add(Field.RQ_PSN); return this; }
    public QpAttr sqPsn(int v) { sqPsn = v; mask.add(Field.SQ_PSN); return this; }
    public QpAttr maxDestRdAtomic(int v) { maxDestRdAtomic = v; mask.add(Field.MAX_DEST_RD_ATOMIC); return this; }
    public QpAttr maxRdAtomic(int v) { maxRdAtomic = v; mask.add(Field.MAX_QP_RD_ATOMIC); return this; }
    public QpAttr minRnrTimer(int v) { minRnrTimer = v; mask.add(Field.MIN_RNR_TIMER); return this; }
    public QpAttr timeout(int v) { timeout = v; mask.add(Field.TIMEOUT); return this; }
    public QpAttr retryCnt(int v) { retryCnt = v; mask.add(Field.RETRY_CNT); return this; }
    public QpAttr rnrRetry(int v) { rnrRetry = v; mask.add(Field.RNR_RETRY); return this; }
    /** The Q_Key of a UD QP: what its received datagrams must carry, and what a send WR with the Q_Key's high bit set sends instead. */
    public QpAttr qkey(int v) { qkey = v; mask.add(Field.QKEY); return this; }

    public QpState state() { return state; }
    public int accessFlags() { return accessFlags; }
    public int pkeyIndex() { return pkeyIndex; }
    public int port() { return port; }
    public Mtu pathMtu() { return pathMtu; }
    public int destQpNum() { return destQpNum; }
    public InetAddress destAddress() { return destAddress; }
    public int destPort() { return destPort; }
    public int rqPsn() { return rqPsn; }
    public int sqPsn() { return sqPsn; }
    public int maxDestRdAtomic() { return maxDestRdAtomic; }
    public int maxRdAtomic() { return maxRdAtomic; }
    public int minRnrTimer() { return minRnrTimer; }
    public int timeout() { return timeout; }
    public int retryCnt() { return retryCnt; }
    public int rnrRetry() { return rnrRetry; }
    public int qkey() { return qkey; }

    @Override
    public String toString() {
        return "QpAttr{state=" + state + ", mtu=" + pathMtu.bytes() + ", destQpn=0x" + Integer.toHexString(destQpNum)
                + ", dest=" + destAddress + ":" + destPort + ", rqPsn=0x" + Integer.toHexString(rqPsn)
                + ", sqPsn=0x" + Integer.toHexString(sqPsn) + ", maxRdAtomic=" + maxRdAtomic
                + ", maxDestRdAtomic=" + maxDestRdAtomic + ", minRnrTimer=" + minRnrTimer + ", timeout=" + timeout
                + ", retryCnt=" + retryCnt + ", rnrRetry=" + rnrRetry + ", qkey=0x" + Integer.toHexString(qkey) + ", access=" + Access.toString(accessFlags) + "}";
    }
}
