package io.jroce.endpoint;

import io.netty.util.collection.IntObjectHashMap;

import java.util.List;

/** The queue pairs a shard owns, by number (rdma_rxe's QP pool index). Loop only. */
final class QpTable {
    private final IntObjectHashMap<QueuePair> qps = new IntObjectHashMap<>();

    QueuePair get(int qpn) {
        return qps.get(qpn);
    }

    /** Adds {@code qp}; false if its number is taken. */
    boolean add(QueuePair qp) {
        if (qps.containsKey(qp.qpNum())) return false;
        qps.put(qp.qpNum(), qp);
        return true;
    }

    boolean contains(int qpn) {
        return qps.containsKey(qpn);
    }

    void remove(QueuePair qp) {
        qps.remove(qp.qpNum());
    }

    int size() {
        return qps.size();
    }

    List<QueuePair> list() {
        return List.copyOf(qps.values());
    }

    /** Forgets every QP, with {@code fail} first moving the live ones to ERR (device closed). */
    void clear(boolean fail) {
        if (fail) {
            for (QueuePair qp : qps.values()) {
                if (qp.state != QpState.RESET && qp.state != QpState.ERR) qp.toError("device closed");
            }
        }
        qps.clear();
    }
}
