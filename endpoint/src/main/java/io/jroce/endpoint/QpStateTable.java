package io.jroce.endpoint;

import java.util.EnumSet;
import java.util.Set;

import static io.jroce.endpoint.QpAttr.Field.*;

/**
 * The legal {@code ibv_modify_qp} transitions of an RC or a UD queue pair and, for each, the attributes it requires
 * and the ones it may take: a (from, to) table, as IBA vol.1 11.2.4.2 (Modify Queue Pair, the QP state
 * transition properties) and the kernel's {@code qp_state_table} / {@code ib_modify_qp_is_ok}
 * (drivers/infiniband/core/verbs.c) lay it out. A missing cell is an illegal transition. The STATE bit
 * itself is in neither set: it selects the cell.
 */
final class QpStateTable {
    /** The attribute masks of one legal transition. */
    record Transition(EnumSet<QpAttr.Field> required, EnumSet<QpAttr.Field> optional) { }

    private static final EnumSet<QpAttr.Field> NONE = EnumSet.noneOf(QpAttr.Field.class);
    private static final QpState[] STATES = QpState.values();
    private static final Transition[][] TABLE = new Transition[STATES.length][STATES.length];
    /** The UD table: the same cells with a UD QP's attributes (Q_Key instead of the connection's). */
    private static final Transition[][] UD = new Transition[STATES.length][STATES.length];

    static {
        // any state may be reset or moved to the error state, with no other attribute (IBA 10.3.1)
        for (QpState from : STATES) {
            legal(from, QpState.RESET, NONE, NONE);
            legal(from, QpState.ERR, NONE, NONE);
            ud(from, QpState.RESET, NONE, NONE);
            ud(from, QpState.ERR, NONE, NONE);
        }
        // UD (the kernel's qp_state_table, IB_QPT_UD column; ibv_modify_qp(3)): no address vector, PSN
        // for the receive side or retry counters; the Q_Key is set at INIT and may change later
        ud(QpState.RESET, QpState.INIT, EnumSet.of(PKEY_INDEX, PORT, QKEY), NONE);
        ud(QpState.INIT, QpState.INIT, NONE, EnumSet.of(PKEY_INDEX, PORT, QKEY));
        ud(QpState.INIT, QpState.RTR, NONE, EnumSet.of(PKEY_INDEX, QKEY));
        ud(QpState.RTR, QpState.RTS, EnumSet.of(SQ_PSN), EnumSet.of(QKEY));
        ud(QpState.RTS, QpState.RTS, NONE, EnumSet.of(QKEY));
        ud(QpState.SQE, QpState.RTS, NONE, EnumSet.of(QKEY));
        ud(QpState.RTS, QpState.SQD, NONE, NONE);
        ud(QpState.SQD, QpState.RTS, NONE, EnumSet.of(QKEY));
        ud(QpState.SQD, QpState.SQD, NONE, EnumSet.of(PKEY_INDEX, QKEY));
        legal(QpState.RESET, QpState.INIT, EnumSet.of(PKEY_INDEX, PORT, ACCESS_FLAGS), NONE);
        legal(QpState.INIT, QpState.INIT, NONE, EnumSet.of(PKEY_INDEX, PORT, ACCESS_FLAGS));
        legal(QpState.INIT, QpState.RTR, EnumSet.of(AV, PATH_MTU, DEST_QPN, RQ_PSN, MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER),
                EnumSet.of(ACCESS_FLAGS, PKEY_INDEX));
        legal(QpState.RTR, QpState.RTS, EnumSet.of(SQ_PSN, TIMEOUT, RETRY_CNT, RNR_RETRY, MAX_QP_RD_ATOMIC),
                EnumSet.of(ACCESS_FLAGS, MIN_RNR_TIMER));
        legal(QpState.RTS, QpState.RTS, NONE, EnumSet.of(ACCESS_FLAGS, MIN_RNR_TIMER));
        legal(QpState.SQE, QpState.RTS, NONE, EnumSet.of(ACCESS_FLAGS, MIN_RNR_TIMER));
        legal(QpState.RTS, QpState.SQD, NONE, NONE);
        legal(QpState.SQD, QpState.RTS, NONE, EnumSet.of(ACCESS_FLAGS, MIN_RNR_TIMER));
        legal(QpState.SQD, QpState.SQD, NONE,
                EnumSet.of(ACCESS_FLAGS, MIN_RNR_TIMER, TIMEOUT, RETRY_CNT, RNR_RETRY, MAX_QP_RD_ATOMIC, MAX_DEST_RD_ATOMIC));
    }

    private QpStateTable() { }

    private static void legal(QpState from, QpState to, EnumSet<QpAttr.Field> required, EnumSet<QpAttr.Field> optional) {
        TABLE[from.ordinal()][to.ordinal()] = new Transition(required, optional);
    }

    private static void ud(QpState from, QpState to, EnumSet<QpAttr.Field> required, EnumSet<QpAttr.Field> optional) {
        UD[from.ordinal()][to.ordinal()] = new Transition(required, optional);
    }

    /** The RC cell for {@code from -> to}, or null when the transition is illegal. */
    static Transition lookup(QpState from, QpState to) {
        return lookup(QpType.RC, from, to);
    }

    /** The cell of a QP of {@code type} for {@code from -> to}, or null when the transition is illegal. */
    static Transition lookup(QpType type, QpState from, QpState to) {
        return to == null ? null : (type == QpType.UD ? UD : TABLE)[from.ordinal()][to.ordinal()];
    }

    /**
     * Checks a modify of a QP in {@code from} with attribute mask {@code mask} (the STATE bit selecting
     * the target, none meaning "stay") and returns the attributes to apply. Throws, naming the states or
     * the attributes, when the transition is illegal, a required attribute is missing or one is given
     * that the transition does not take.
     */
    static EnumSet<QpAttr.Field> check(QpState from, QpState to, Set<QpAttr.Field> mask, int qpn) {
        return check(QpType.RC, from, to, mask, qpn);
    }

    static EnumSet<QpAttr.Field> check(QpType type, QpState from, QpState to, Set<QpAttr.Field> mask, int qpn) {
        Transition t = lookup(type, from, to);
        if (t == null) {
            throw new VerbsException("illegal " + type + " QP transition " + from + " -> " + to + " for QP 0x" + Integer.toHexString(qpn));
        }
        EnumSet<QpAttr.Field> given = EnumSet.copyOf(mask.isEmpty() ? EnumSet.of(STATE) : mask);
        given.remove(STATE);
        EnumSet<QpAttr.Field> missing = t.required().clone();
        missing.removeAll(given);
        if (!missing.isEmpty()) {
            throw new VerbsException(type + " " + from + " -> " + to + " needs attribute(s) " + missing);
        }
        EnumSet<QpAttr.Field> extra = EnumSet.copyOf(given);
        extra.removeAll(t.required());
        extra.removeAll(t.optional());
        if (!extra.isEmpty()) {
            throw new VerbsException(type + " " + from + " -> " + to + " does not take attribute(s) " + extra);
        }
        return given;
    }
}
