package io.jroce.endpoint;

import io.jroce.wire.Psn;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.EnumSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The QP state machine (IBA 10.3.1, ibv_modify_qp): legal transitions with their required attributes,
 * illegal transitions and missing or surplus attributes refused with a message naming them (and the QP
 * left as it was), posting in a state that does not take work refused without a packet on the wire, and
 * {@link QueuePair#query()} reporting the live PSNs.
 */
class QpStateMachineTest {
    private static final int PSN_A = 0x123456;
    private static final int PSN_B = 0xABCDEF;

    private static QueuePair newQp(Pair p, Device d) {
        CompletionQueue cq = d.createCq(64);
        ProtectionDomain pd = d == p.a ? p.pdA : p.pdB;
        return pd.createQp(new QpInitAttr(cq).maxSendWr(16).maxRecvWr(16));
    }

    private static QpAttr init() {
        return new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(Pair.QP_ACCESS);
    }

    private static QpAttr rtr(Device peer, int peerQpn) {
        return new QpAttr().state(QpState.RTR).dest(peer.address(), peer.port()).pathMtu(Mtu.MTU_1024).destQpNum(peerQpn)
                .rqPsn(PSN_B).maxDestRdAtomic(2).minRnrTimer(1);
    }

    private static QpAttr rts() {
        return new QpAttr().state(QpState.RTS).sqPsn(PSN_A).timeout(14).retryCnt(7).rnrRetry(7).maxRdAtomic(2);
    }

    /** Drives a fresh QP into {@code target} through legal transitions. */
    private static void moveTo(QueuePair qp, Pair p, QpState target) {
        switch (target) {
            case RESET -> { }
            case INIT -> qp.modify(init());
            case RTR -> { moveTo(qp, p, QpState.INIT); qp.modify(rtr(p.b, 0x99)); }
            case RTS -> { moveTo(qp, p, QpState.RTR); qp.modify(rts()); }
            case SQD -> { moveTo(qp, p, QpState.RTS); qp.modify(new QpAttr().state(QpState.SQD)); }
            case ERR -> qp.modify(new QpAttr().state(QpState.ERR));
            case SQE -> throw new IllegalArgumentException("SQE is entered only by a send queue error");
        }
        assertEquals(target, qp.state());
        assertEquals(target, qp.query().state());
    }

    private static void assertRefused(QueuePair qp, QpAttr attr, String... mustName) {
        QpState before = qp.state();
        VerbsException e = assertThrows(VerbsException.class, () -> qp.modify(attr), "modify " + attr.mask() + " from " + before);
        assertNotNull(e.getMessage());
        for (String s : mustName) {
            assertTrue(e.getMessage().contains(s), "the message should name " + s + ": " + e.getMessage());
        }
        assertEquals(before, qp.state(), "a refused modify leaves the QP as it was");
    }

    @Test
    void aNewQpIsInReset() throws Exception {
        try (Pair p = new Pair()) {
            QueuePair qp = newQp(p, p.a);
            assertEquals(QpState.RESET, qp.state());
            assertEquals(QpState.RESET, qp.query().state());
        }
    }

    @Test
    void illegalTransitionsAreRefusedNamingBothStates() throws Exception {
        try (Pair p = new Pair()) {
            record Illegal(QpState from, QpState to) { }
            List<Illegal> illegal = List.of(
                    new Illegal(QpState.RESET, QpState.RTR), new Illegal(QpState.RESET, QpState.RTS),
                    new Illegal(QpState.RESET, QpState.SQD), new Illegal(QpState.INIT, QpState.RTS),
                    new Illegal(QpState.INIT, QpState.SQD), new Illegal(QpState.RTR, QpState.INIT),
                    new Illegal(QpState.RTR, QpState.SQD), new Illegal(QpState.RTS, QpState.INIT),
                    new Illegal(QpState.RTS, QpState.RTR), new Illegal(QpState.SQD, QpState.INIT),
                    new Illegal(QpState.SQD, QpState.RTR), new Illegal(QpState.ERR, QpState.INIT),
                    new Illegal(QpState.ERR, QpState.RTR), new Illegal(QpState.ERR, QpState.RTS),
                    new Illegal(QpState.ERR, QpState.SQD), new Illegal(QpState.RESET, QpState.SQE),
                    new Illegal(QpState.RTS, QpState.SQE));
            for (Illegal t : illegal) {
                QueuePair qp = newQp(p, p.a);
                moveTo(qp, p, t.from());
                // give the attributes the target would need, so only the transition itself is wrong
                QpAttr attr = switch (t.to()) {
                    case INIT -> init();
                    case RTR -> rtr(p.b, 0x99);
                    case RTS -> rts();
                    default -> new QpAttr().state(t.to());
                };
                assertRefused(qp, attr, t.from().name(), t.to().name());
                qp.destroy();
            }
        }
    }

    enum Required {
        INIT_PKEY_INDEX(QpState.RESET, QpAttr.Field.PKEY_INDEX),
        INIT_PORT(QpState.RESET, QpAttr.Field.PORT),
        INIT_ACCESS_FLAGS(QpState.RESET, QpAttr.Field.ACCESS_FLAGS),
        RTR_AV(QpState.INIT, QpAttr.Field.AV),
        RTR_PATH_MTU(QpState.INIT, QpAttr.Field.PATH_MTU),
        RTR_DEST_QPN(QpState.INIT, QpAttr.Field.DEST_QPN),
        RTR_RQ_PSN(QpState.INIT, QpAttr.Field.RQ_PSN),
        RTR_MAX_DEST_RD_ATOMIC(QpState.INIT, QpAttr.Field.MAX_DEST_RD_ATOMIC),
        RTR_MIN_RNR_TIMER(QpState.INIT, QpAttr.Field.MIN_RNR_TIMER),
        RTS_SQ_PSN(QpState.RTR, QpAttr.Field.SQ_PSN),
        RTS_TIMEOUT(QpState.RTR, QpAttr.Field.TIMEOUT),
        RTS_RETRY_CNT(QpState.RTR, QpAttr.Field.RETRY_CNT),
        RTS_RNR_RETRY(QpState.RTR, QpAttr.Field.RNR_RETRY),
        RTS_MAX_QP_RD_ATOMIC(QpState.RTR, QpAttr.Field.MAX_QP_RD_ATOMIC);

        final QpState from;
        final QpAttr.Field field;

        Required(QpState from, QpAttr.Field field) {
            this.from = from;
            this.field = field;
        }
    }

    /** The full attribute set for the transition out of {@code from}, without {@code skip}. */
    private static QpAttr fullAttrsWithout(QpState from, QpAttr.Field skip, Device peer) {
        QpAttr a = new QpAttr();
        switch (from) {
            case RESET -> {
                a.state(QpState.INIT);
                if (skip != QpAttr.Field.PKEY_INDEX) a.pkeyIndex(0);
                if (skip != QpAttr.Field.PORT) a.port(1);
                if (skip != QpAttr.Field.ACCESS_FLAGS) a.accessFlags(Pair.QP_ACCESS);
            }
            case INIT -> {
                a.state(QpState.RTR);
                if (skip != QpAttr.Field.AV) a.dest(peer.address(), peer.port());
                if (skip != QpAttr.Field.PATH_MTU) a.pathMtu(Mtu.MTU_1024);
                if (skip != QpAttr.Field.DEST_QPN) a.destQpNum(0x99);
                if (skip != QpAttr.Field.RQ_PSN) a.rqPsn(PSN_B);
                if (skip != QpAttr.Field.MAX_DEST_RD_ATOMIC) a.maxDestRdAtomic(1);
                if (skip != QpAttr.Field.MIN_RNR_TIMER) a.minRnrTimer(1);
            }
            case RTR -> {
                a.state(QpState.RTS);
                if (skip != QpAttr.Field.SQ_PSN) a.sqPsn(PSN_A);
                if (skip != QpAttr.Field.TIMEOUT) a.timeout(14);
                if (skip != QpAttr.Field.RETRY_CNT) a.retryCnt(7);
                if (skip != QpAttr.Field.RNR_RETRY) a.rnrRetry(7);
                if (skip != QpAttr.Field.MAX_QP_RD_ATOMIC) a.maxRdAtomic(1);
            }
            default -> throw new IllegalArgumentException(from.name());
        }
        return a;
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(Required.class)
    void aMissingRequiredAttributeIsNamed(Required r) throws Exception {
        try (Pair p = new Pair()) {
            QueuePair qp = newQp(p, p.a);
            moveTo(qp, p, r.from);
            assertRefused(qp, fullAttrsWithout(r.from, r.field, p.b), r.field.name());
            // with it, the same transition goes through
            qp.modify(fullAttrsWithout(r.from, null, p.b));
            assertEquals(fullAttrsWithout(r.from, null, p.b).state(), qp.state());
        }
    }

    /** The legal RC transitions of IBA 10.3.1 (QP state diagram) besides "any state -> RESET or ERR". */
    private static final Set<String> IBA_TRANSITIONS = Set.of("RESET->INIT", "INIT->INIT", "INIT->RTR", "RTR->RTS",
            "RTS->RTS", "RTS->SQD", "SQD->RTS", "SQD->SQD", "SQE->RTS");

    @Test
    void theTransitionTableHoldsExactlyTheLegalTransitions() {
        for (QpState from : QpState.values()) {
            for (QpState to : QpState.values()) {
                boolean legal = to == QpState.RESET || to == QpState.ERR || IBA_TRANSITIONS.contains(from + "->" + to);
                QpStateTable.Transition t = QpStateTable.lookup(from, to);
                assertEquals(legal, t != null, from + " -> " + to);
                if (t == null) continue;
                assertFalse(t.required().contains(QpAttr.Field.STATE) || t.optional().contains(QpAttr.Field.STATE), "STATE selects the cell");
                for (QpAttr.Field f : t.required()) assertFalse(t.optional().contains(f), from + " -> " + to + ": " + f + " both required and optional");
            }
        }
    }

    /** A valid value for {@code f}, as the transitions into RTS would take it. */
    private static QpAttr give(QpAttr a, QpAttr.Field f, Device peer) {
        return switch (f) {
            case STATE -> a;
            case ACCESS_FLAGS -> a.accessFlags(Pair.QP_ACCESS);
            case PKEY_INDEX -> a.pkeyIndex(0);
            case PORT -> a.port(1);
            case PATH_MTU -> a.pathMtu(Mtu.MTU_1024);
            case DEST_QPN -> a.destQpNum(0x99);
            case AV -> a.dest(peer.address(), peer.port());
            case RQ_PSN -> a.rqPsn(PSN_B);
            case MAX_DEST_RD_ATOMIC -> a.maxDestRdAtomic(2);
            case MIN_RNR_TIMER -> a.minRnrTimer(1);
            case SQ_PSN -> a.sqPsn(PSN_A);
            case TIMEOUT -> a.timeout(14);
            case RETRY_CNT -> a.retryCnt(7);
            case RNR_RETRY -> a.rnrRetry(7);
            case MAX_QP_RD_ATOMIC -> a.maxRdAtomic(2);
            case QKEY -> a.qkey(0x1234);
        };
    }

    /**
     * Every cell of the table is what modify enforces: the transition goes through with its required and
     * optional attributes all given, and an attribute outside both sets is refused, named.
     */
    @Test
    void everyLegalTransitionTakesExactlyItsTableAttributes() throws Exception {
        try (Pair p = new Pair()) {
            for (QpState from : QpState.values()) {
                if (from == QpState.SQE) continue; // entered only by a send queue error, not by modify
                for (QpState to : QpState.values()) {
                    QpStateTable.Transition t = QpStateTable.lookup(from, to);
                    if (t == null) continue;
                    QueuePair qp = newQp(p, p.a);
                    moveTo(qp, p, from);
                    EnumSet<QpAttr.Field> outside = EnumSet.complementOf(t.required());
                    outside.removeAll(t.optional());
                    outside.remove(QpAttr.Field.STATE);
                    if (!outside.isEmpty()) {
                        QpAttr.Field stray = outside.iterator().next();
                        QpAttr bad = new QpAttr().state(to);
                        for (QpAttr.Field f : t.required()) give(bad, f, p.b);
                        assertRefused(qp, give(bad, stray, p.b), stray.name(), from.name(), to.name());
                    }
                    QpAttr all = new QpAttr().state(to);
                    for (QpAttr.Field f : t.required()) give(all, f, p.b);
                    for (QpAttr.Field f : t.optional()) give(all, f, p.b);
                    qp.modify(all);
                    assertEquals(to, qp.state(), from + " -> " + to + " with " + all.mask());
                    qp.destroy();
                }
            }
        }
    }

    @Test
    void anAttributeTheTransitionDoesNotTakeIsNamed() throws Exception {
        try (Pair p = new Pair()) {
            QueuePair qp = newQp(p, p.a);
            assertRefused(qp, init().sqPsn(5), "SQ_PSN");
            assertRefused(qp, init().pathMtu(Mtu.MTU_256), "PATH_MTU");
            qp.modify(init());
            assertRefused(qp, rtr(p.b, 0x99).timeout(3), "TIMEOUT");
            qp.modify(rtr(p.b, 0x99));
            assertRefused(qp, rts().destQpNum(0x12), "DEST_QPN");
            assertRefused(qp, rts().rqPsn(0x12), "RQ_PSN");
            qp.modify(rts());
            assertRefused(qp, new QpAttr().pathMtu(Mtu.MTU_4096), "PATH_MTU");
            assertEquals(QpState.RTS, qp.state());
        }
    }

    @Test
    void outOfRangeValuesAreRefusedNamingTheAttribute() throws Exception {
        try (Pair p = new Pair()) {
            QueuePair qp = newQp(p, p.a);
            assertRefused(qp, init().port(2), "port");
            assertRefused(qp, init().pkeyIndex(1), "P_Key");
            assertRefused(qp, init().accessFlags(1 << 10), "access flag");
            qp.modify(init());
            assertRefused(qp, rtr(p.b, 0x99).rqPsn(0x1000000), "rq_psn");
            assertRefused(qp, rtr(p.b, 0x99).destQpNum(0x1000000), "dest_qp_num");
            assertRefused(qp, rtr(p.b, 0x99).minRnrTimer(32), "min_rnr_timer");
            assertRefused(qp, rtr(p.b, 0x99).maxDestRdAtomic(QueuePair.MAX_RD_ATOMIC + 1), "max_dest_rd_atomic");
            qp.modify(rtr(p.b, 0x99));
            assertRefused(qp, rts().sqPsn(-1), "sq_psn");
            assertRefused(qp, rts().timeout(32), "timeout");
            assertRefused(qp, rts().retryCnt(8), "retry_cnt");
            assertRefused(qp, rts().rnrRetry(8), "rnr_retry");
            assertRefused(qp, rts().maxRdAtomic(QueuePair.MAX_RD_ATOMIC + 1), "max_rd_atomic");
            qp.modify(rts());
            QpAttr q = qp.query();
            assertEquals(QpState.RTS, q.state());
            assertEquals(14, q.timeout());
            assertEquals(7, q.retryCnt());
            assertEquals(7, q.rnrRetry());
            assertEquals(2, q.maxRdAtomic());
            assertEquals(2, q.maxDestRdAtomic());
            assertEquals(Mtu.MTU_1024, q.pathMtu());
            assertEquals(0x99, q.destQpNum());
            assertEquals(Pair.QP_ACCESS, q.accessFlags());
        }
    }

    @Test
    void everyStateMayGoToResetOrErr() throws Exception {
        try (Pair p = new Pair()) {
            for (QpState from : new QpState[] {QpState.RESET, QpState.INIT, QpState.RTR, QpState.RTS, QpState.SQD, QpState.ERR}) {
                for (QpState to : new QpState[] {QpState.RESET, QpState.ERR}) {
                    QueuePair qp = newQp(p, p.a);
                    moveTo(qp, p, from);
                    qp.modify(new QpAttr().state(to));
                    assertEquals(to, qp.state(), from + " -> " + to);
                    assertEquals(to, qp.query().state(), from + " -> " + to);
                    qp.destroy();
                }
            }
        }
    }

    /** ibv_post_send in RESET, INIT or RTR and ibv_post_recv in RESET fail at once; nothing goes on the wire. */
    @ParameterizedTest(name = "post in {0}")
    @EnumSource(value = QpState.class, names = {"RESET", "INIT", "RTR"})
    void postingInAStateThatTakesNoWorkFailsAndSendsNothing(QpState state) throws Exception {
        try (Pair p = new Pair()) {
            QueuePair qp = newQp(p, p.a);
            moveTo(qp, p, state);
            MemoryRegion mr = p.pdA.allocateAndRegister(4096, Access.LOCAL_WRITE);
            long outA = p.a.counters().packetsOut;
            long outB = p.b.counters().packetsOut;
            for (WrOpcode op : WrOpcode.values()) {
                SendWorkRequest wr = new SendWorkRequest(1, op, Sge.of(mr, 0, op.isAtomic() ? 8 : 100)).remote(0x1000, 1).signaled();
                VerbsException e = assertThrows(VerbsException.class, () -> qp.postSend(wr), op + " in " + state);
                assertTrue(e.getMessage().contains(state.name()), "the message names the state: " + e.getMessage());
                assertEquals(wr, e.badRequest());
            }
            if (state == QpState.RESET) {
                ReceiveWorkRequest rwr = new ReceiveWorkRequest(2, Sge.of(mr));
                VerbsException e = assertThrows(VerbsException.class, () -> qp.postRecv(rwr));
                assertTrue(e.getMessage().contains("RESET"), e.getMessage());
            } else {
                qp.postRecv(new ReceiveWorkRequest(2, Sge.of(mr))); // receives may be posted from INIT on
            }
            Pair.barrier(p.a);
            assertEquals(outA, p.a.counters().packetsOut, "nothing sent from A");
            assertEquals(outB, p.b.counters().packetsOut, "nothing sent from B");
            assertEquals(0, qp.sendCq().size(), "a refused post produces no completion");
            assertEquals(state, qp.state());
        }
    }

    /** RTR is ready to receive: the responder runs (and acknowledges), only the send queue is closed. */
    @Test
    void aQpInRtrReceivesButCannotSend() throws Exception {
        try (Pair p = new Pair()) {
            CompletionQueue cqA = p.a.createCq(16);
            CompletionQueue cqB = p.b.createCq(16);
            QueuePair qa = p.pdA.createQp(new QpInitAttr(cqA).maxSendWr(8).maxRecvWr(8));
            QueuePair qb = p.pdB.createQp(new QpInitAttr(cqB).maxSendWr(8).maxRecvWr(8));
            Pair.bringUp(qa, p.b, qb.qpNum(), Mtu.MTU_1024, PSN_B, PSN_A, 2, 2);
            qb.modify(init());
            qb.modify(new QpAttr().state(QpState.RTR).dest(p.a.address(), p.a.port()).pathMtu(Mtu.MTU_1024).destQpNum(qa.qpNum())
                    .rqPsn(PSN_A).maxDestRdAtomic(2).minRnrTimer(1));
            MemoryRegion src = p.pdA.allocateAndRegister(2000, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(2000, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
            qb.postRecv(new ReceiveWorkRequest(5, Sge.of(dst)));
            qa.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(src)).signaled());
            Wcs.assertOk(Pair.awaitOne(cqA), 1, WcOpcode.SEND, 2000, qa);
            Wcs.assertOk(Pair.awaitOne(cqB), 5, WcOpcode.RECV, 2000, qb);
            qa.postSend(new SendWorkRequest(2, WrOpcode.RDMA_READ, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
            Wcs.assertOk(Pair.awaitOne(cqA), 2, WcOpcode.RDMA_READ, 2000, qa);
            assertThrows(VerbsException.class, () -> qb.postSend(new SendWorkRequest(3, WrOpcode.SEND, Sge.of(dst))));
            assertEquals(QpState.RTR, qb.state());
        }
    }

    @Test
    void sendsPostedInSqdWaitUntilRtsAgain() throws Exception {
        try (Pair p = new Pair()) {
            Pair.Conn c = p.connect(Mtu.MTU_1024, PSN_A, PSN_B);
            MemoryRegion src = p.pdA.allocateAndRegister(256, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(256, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            c.qpA.modify(new QpAttr().state(QpState.SQD));
            assertEquals(QpState.SQD, c.qpA.state());
            long out = p.a.counters().packetsOut;
            c.qpA.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(src)).remote(dst.address(), dst.rkey()).signaled());
            Pair.barrier(p.a);
            assertEquals(out, p.a.counters().packetsOut, "a drained send queue starts nothing new");
            Pair.assertEmpty(c.cqA);
            c.qpA.modify(new QpAttr().state(QpState.RTS));
            Wcs.assertOk(Pair.awaitOne(c.cqA), 1, WcOpcode.RDMA_WRITE, 256, c.qpA);
        }
    }

    @Test
    void queryReportsLivePsns() throws Exception {
        try (Pair p = new Pair()) {
            Pair.Conn c = p.connect(Mtu.MTU_256, PSN_A, PSN_B);
            QpAttr qa = c.qpA.query();
            QpAttr qb = c.qpB.query();
            assertEquals(PSN_A, qa.sqPsn());
            assertEquals(PSN_B, qa.rqPsn());
            assertEquals(PSN_B, qb.sqPsn());
            assertEquals(PSN_A, qb.rqPsn());

            MemoryRegion src = p.pdA.allocateAndRegister(4096, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
            // a WRITE of 3 MTUs + 1 byte takes 4 PSNs
            c.qpA.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(src, 0, 3 * 256 + 1)).remote(dst.address(), dst.rkey()).signaled());
            Pair.awaitOne(c.cqA);
            assertEquals(Psn.add(PSN_A, 4), c.qpA.query().sqPsn(), "A's send PSN after 4 packets");
            assertEquals(Psn.add(PSN_A, 4), c.qpB.query().rqPsn(), "B's expected PSN after 4 packets");
            // a READ of 1000 bytes takes ceil(1000/256) = 4 PSNs at the requester and the responder
            c.qpA.postSend(new SendWorkRequest(2, WrOpcode.RDMA_READ, Sge.of(src, 0, 1000)).remote(dst.address(), dst.rkey()).signaled());
            Pair.awaitOne(c.cqA);
            assertEquals(Psn.add(PSN_A, 8), c.qpA.query().sqPsn());
            assertEquals(Psn.add(PSN_A, 8), c.qpB.query().rqPsn());
            // B sends a 2-packet SEND: B's send PSN and A's expected PSN move, A's send PSN does not
            MemoryRegion rbuf = p.pdA.allocateAndRegister(512, Access.LOCAL_WRITE);
            c.qpA.postRecv(new ReceiveWorkRequest(3, Sge.of(rbuf)));
            c.qpB.postSend(new SendWorkRequest(4, WrOpcode.SEND, Sge.of(dst, 0, 300)).signaled());
            Pair.awaitOne(c.cqB);
            Pair.awaitOne(c.cqA);
            assertEquals(Psn.add(PSN_B, 2), c.qpB.query().sqPsn());
            assertEquals(Psn.add(PSN_B, 2), c.qpA.query().rqPsn());
            assertEquals(Psn.add(PSN_A, 8), c.qpA.query().sqPsn());
            assertEquals(Psn.add(PSN_A, 8), c.qpB.query().rqPsn());
            // the PSNs stay readable after an error
            c.qpA.modify(new QpAttr().state(QpState.ERR));
            assertEquals(Psn.add(PSN_A, 8), c.qpA.query().sqPsn());
        }
    }

    @Test
    void aQpIsReusableAfterErrAndReset() throws Exception {
        try (Pair p = new Pair()) {
            Pair.Conn c = p.connect(Mtu.MTU_1024, PSN_A, PSN_B);
            MemoryRegion src = p.pdA.allocateAndRegister(3000, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(3000, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            Bytes.write(src, 0, Bytes.random(new java.util.Random(3), 3000));
            c.qpB.postRecv(new ReceiveWorkRequest(50, Sge.of(dst)));
            c.qpA.modify(new QpAttr().state(QpState.ERR));
            c.qpB.modify(new QpAttr().state(QpState.ERR));
            Wcs.assertFlushed(Pair.await(c.cqB, 1, 5_000), c.qpB, 50);
            c.qpA.modify(new QpAttr().state(QpState.RESET));
            c.qpB.modify(new QpAttr().state(QpState.RESET));
            assertEquals(QpState.RESET, c.qpA.query().state());
            // reconnect with new PSNs; the old ones must not linger
            Pair.bringUp(c.qpA, p.b, c.qpB.qpNum(), Mtu.MTU_256, 0x10, 0xFFFFF0, 2, 2);
            Pair.bringUp(c.qpB, p.a, c.qpA.qpNum(), Mtu.MTU_256, 0xFFFFF0, 0x10, 2, 2);
            assertEquals(0xFFFFF0, c.qpA.query().sqPsn());
            assertEquals(0xFFFFF0, c.qpB.query().rqPsn());
            c.qpB.postRecv(new ReceiveWorkRequest(51, Sge.of(dst)));
            c.qpA.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(src)).signaled());
            Wcs.assertOk(Pair.awaitOne(c.cqA), 1, WcOpcode.SEND, 3000, c.qpA);
            Wcs.assertOk(Pair.awaitOne(c.cqB), 51, WcOpcode.RECV, 3000, c.qpB);
            assertEquals(Psn.add(0xFFFFF0, 12), c.qpA.query().sqPsn());
            Bytes.assertRegion("received after reconnect", Bytes.image(src), dst, 0, 3000);
        }
    }
}
