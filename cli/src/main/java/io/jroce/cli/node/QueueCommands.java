package io.jroce.cli.node;

import io.jroce.wire.IpText;
import io.jroce.cli.node.Session.Failure;
import io.jroce.cli.node.Session.Qp;
import io.jroce.cli.node.SessionChecker.Kind;
import io.jroce.cli.node.SessionChecker.Sym;
import io.jroce.cli.node.SessionLanguage.Type;
import io.jroce.cli.node.SessionSyntax.ScriptException;
import io.jroce.cli.node.SessionSyntax.Statement;
import io.jroce.cli.node.Syntax.Positional;
import io.jroce.endpoint.Access;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.QpAttr;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QpType;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.RcConnect;

import java.net.InetAddress;
import java.util.List;

import static io.jroce.cli.node.SessionChecker.err;
import static io.jroce.cli.node.Syntax.Arg.opt;

/** Completion queues and queue pairs: cq, qp, modify, query. */
final class QueueCommands {
    /** A UD QP's Q_Key unless qkey= says otherwise: ibv_ud_pingpong's. */
    static final int UD_QKEY = 0x11111111;

    private QueueCommands() {
    }

    static final SessionCommand CQ = new SessionCommand(Syntax.of("cq", Positional.NAME, "cq NAME [depth=N]",
            "create a completion queue (default depth 256)", opt("depth", Type.SIZE))) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            String name = c.defineName(s, Kind.CQ);
            long depth = SessionChecker.literalLong(s, "depth", 256);
            if (depth == 0 || depth > (1 << 22)) throw err(s.line(), s.arg("depth").valueColumn(), "depth must be 1..4194304");
            c.symbols().live.put(name, new Sym(Kind.CQ, s.line(), depth, false));
            return s;
        }

        @Override
        void run(Session x, Statement s) throws Failure {
            String name = s.positional().get(0).literal();
            int depth = (int) x.values.size(s, "depth", 256);
            CompletionQueue cq = x.device.createCq(depth);
            x.addCq(name, cq);
            x.out.printf("cq %s: depth %d%n", name, depth);
        }
    };

    static final SessionCommand QP = new SessionCommand(Syntax.of("qp", Positional.NAME,
            "qp NAME [cq=CQ] [send_cq=CQ] [recv_cq=CQ] [send_wr=N] [recv_wr=N] [sge=N] [inline=N] [sig_all] [access=FLAGS] "
                    + "[ud [qkey=N]]",
            "create an RC queue pair and move it to INIT, so receives can be posted before the connection exists; with ud: "
                    + "a UD queue pair, straight to RTS (Q_Key default 0x11111111), whose sends name their destination",
            opt("cq", Type.NAME), opt("send_cq", Type.NAME), opt("recv_cq", Type.NAME), opt("send_wr", Type.SIZE),
            opt("recv_wr", Type.SIZE), opt("sge", Type.SIZE), opt("inline", Type.SIZE), opt("sig_all", Type.BOOL),
            opt("access", Type.ACCESS), opt("ud", Type.BOOL), opt("qkey", Type.U32))) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            String name = c.defineName(s, Kind.QP);
            if (s.has("cq") && (s.has("send_cq") || s.has("recv_cq"))) {
                throw err(s.line(), s.arg("cq").column(), "give cq= (one CQ for both queues) or send_cq= and recv_cq=, not both");
            }
            if (s.has("send_cq") != s.has("recv_cq")) {
                throw err(s.line(), 0, "send_cq= and recv_cq= go together (or use cq= for both)");
            }
            Statement out = s;
            if (s.has("send_cq")) {
                c.requireKind(s, s.arg("send_cq"), Kind.CQ);
                c.requireKind(s, s.arg("recv_cq"), Kind.CQ);
            } else {
                out = c.withDefault(s, "cq", Kind.CQ);
            }
            if (s.has("access")) SessionLanguage.access(s.arg("access").literal());
            for (String k : List.of("send_wr", "recv_wr")) {
                long v = SessionChecker.literalLong(s, k, 1);
                if (v < 1 || v > 65536) throw err(s.line(), s.arg(k).valueColumn(), k + " must be 1..65536");
            }
            long sge = SessionChecker.literalLong(s, "sge", 4);
            if (sge < 1 || sge > 32) throw err(s.line(), s.arg("sge").valueColumn(), "sge must be 1..32");
            long inline = SessionChecker.literalLong(s, "inline", 64);
            if (inline > 4096) throw err(s.line(), s.arg("inline").valueColumn(), "inline must be 0..4096");
            boolean ud = s.has("ud") && !s.arg("ud").hasRefs() && SessionLanguage.bool(s.arg("ud").literal());
            if (s.has("qkey") && !ud) throw err(s.line(), s.arg("qkey").column(), "qkey= is for a UD QP: add ud");
            if (s.has("access") && ud) throw err(s.line(), s.arg("access").column(), "a UD QP takes no access flags (SEND and receive only)");
            // a UD QP is usable at once: it is taken to RTS when created
            c.symbols().live.put(name, new Sym(Kind.QP, s.line(), 0, ud, ud));
            return out;
        }

        @Override
        void run(Session x, Statement s) throws Failure {
            String name = s.positional().get(0).literal();
            Values v = x.values;
            CompletionQueue send = x.cqs.get(v.name(s, s.has("send_cq") ? "send_cq" : "cq"));
            CompletionQueue recv = x.cqs.get(v.name(s, s.has("recv_cq") ? "recv_cq" : "cq"));
            QpInitAttr init = new QpInitAttr(send, recv)
                    .maxSendWr((int) v.size(s, "send_wr", 128)).maxRecvWr((int) v.size(s, "recv_wr", 128))
                    .maxSendSge((int) v.size(s, "sge", 4)).maxRecvSge((int) v.size(s, "sge", 4))
                    .maxInlineData((int) v.size(s, "inline", 64)).sqSigAll(v.flag(s, "sig_all"));
            if (v.flag(s, "ud")) {
                int qkey = v.get(s, "qkey", Type.U32, UD_QKEY);
                QueuePair qp = x.pd.createQp(init.qpType(QpType.UD));
                qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(qkey));
                qp.modify(new QpAttr().state(QpState.RTR));
                qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
                x.qps.put(name, new Qp(qp, 0));
                x.out.printf("qp %s: QPN 0x%06x, %s, UD qkey 0x%08x%n", name, qp.qpNum(), qp.state(), qkey);
                return;
            }
            int access = v.get(s, "access", Type.ACCESS, Access.ALL);
            QueuePair qp = x.pd.createQp(init);
            RcConnect.toInit(qp, RcConnect.Params.defaults().accessFlags(access));
            x.qps.put(name, new Qp(qp, access));
            x.out.printf("qp %s: QPN 0x%06x, %s%n", name, qp.qpNum(), qp.state());
        }
    };

    static final SessionCommand MODIFY = new SessionCommand(Syntax.of("modify", Positional.NONE,
            "modify [qp=QP] [state=S] [access=FLAGS] [mtu=N] [dest=ADDR] [dest_qpn=N] [rq_psn=N] [sq_psn=N] [ack_timeout=N] "
                    + "[retry_cnt=N] [rnr_retry=N] [min_rnr_timer=N] [rd_atomic=N] [dest_rd_atomic=N] [qkey=N]",
            "ibv_modify_qp with the attributes given (e.g. state=ERR to flush, state=SQD to drain)",
            opt("qp", Type.NAME), opt("state", Type.STATE), opt("access", Type.ACCESS), opt("mtu", Type.MTU),
            opt("dest", Type.ADDRESS), opt("dest_qpn", Type.QPN), opt("rq_psn", Type.PSN), opt("sq_psn", Type.PSN),
            opt("ack_timeout", Type.SMALL), opt("retry_cnt", Type.SMALL), opt("rnr_retry", Type.SMALL),
            opt("min_rnr_timer", Type.SMALL), opt("rd_atomic", Type.U8), opt("dest_rd_atomic", Type.U8), opt("qkey", Type.U32))) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            Statement out = c.withDefault(s, "qp", Kind.QP);
            String qp = out.arg("qp").literal();
            if (out.named().size() == 1) throw err(s.line(), 0, "modify needs at least one attribute; usage: " + syntax().usage());
            if (s.has("state") && !s.arg("state").hasRefs()) {
                QpState st = (QpState) SessionLanguage.parse(Type.STATE, s.arg("state").literal());
                Sym sym = c.symbols().live.get(qp);
                if (st == QpState.RTS || st == QpState.SQD) c.symbols().live.put(qp, new Sym(Kind.QP, s.line(), 0, true, sym.ud()));
                else if (st == QpState.RESET) c.symbols().live.put(qp, new Sym(Kind.QP, sym.line(), 0, false, sym.ud()));
            }
            return out;
        }

        @Override
        void run(Session x, Statement s) throws Failure {
            Values v = x.values;
            Qp q = x.qp(s);
            QpAttr a = new QpAttr();
            if (s.has("state")) a.state((QpState) v.value(s.arg("state"), Type.STATE));
            if (s.has("access")) a.accessFlags((int) v.value(s.arg("access"), Type.ACCESS));
            if (s.has("mtu")) a.pathMtu((Mtu) v.value(s.arg("mtu"), Type.MTU));
            if (s.has("dest")) a.dest((InetAddress) v.value(s.arg("dest"), Type.ADDRESS), x.device.port());
            if (s.has("dest_qpn")) a.destQpNum((int) v.value(s.arg("dest_qpn"), Type.QPN));
            if (s.has("rq_psn")) a.rqPsn((int) v.value(s.arg("rq_psn"), Type.PSN));
            if (s.has("sq_psn")) a.sqPsn((int) v.value(s.arg("sq_psn"), Type.PSN));
            if (s.has("ack_timeout")) a.timeout((int) v.value(s.arg("ack_timeout"), Type.SMALL));
            if (s.has("retry_cnt")) a.retryCnt((int) v.value(s.arg("retry_cnt"), Type.SMALL));
            if (s.has("rnr_retry")) a.rnrRetry((int) v.value(s.arg("rnr_retry"), Type.SMALL));
            if (s.has("min_rnr_timer")) a.minRnrTimer((int) v.value(s.arg("min_rnr_timer"), Type.SMALL));
            if (s.has("rd_atomic")) a.maxRdAtomic((int) v.value(s.arg("rd_atomic"), Type.U8));
            if (s.has("dest_rd_atomic")) a.maxDestRdAtomic((int) v.value(s.arg("dest_rd_atomic"), Type.U8));
            if (s.has("qkey")) a.qkey((int) v.value(s.arg("qkey"), Type.U32));
            if (q.qp.type() == QpType.UD && a.has(QpAttr.Field.STATE) && a.state() == QpState.INIT && q.qp.state() == QpState.RESET) {
                a.pkeyIndex(0).port(1);
                if (!a.has(QpAttr.Field.QKEY)) a.qkey(UD_QKEY);
            } else if (a.has(QpAttr.Field.STATE) && a.state() == QpState.INIT && q.qp.state() == QpState.RESET) {
                if (!a.has(QpAttr.Field.ACCESS_FLAGS)) a.accessFlags(q.access);
                a.pkeyIndex(0).port(1); // the only P_Key index and port, as ibv_rc_pingpong passes them
            }
            QpState before = q.qp.state();
            q.qp.modify(a);
            x.out.printf("modify %s: %s -> %s%n", v.name(s, "qp"), before, q.qp.state());
        }
    };

    static final SessionCommand QUERY = new SessionCommand(Syntax.of("query", Positional.NONE, "query [qp=QP]",
            "print the QP's attributes (ibv_query_qp)", opt("qp", Type.NAME))) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            return c.withDefault(s, "qp", Kind.QP);
        }

        @Override
        void run(Session x, Statement s) throws Failure {
            Qp q = x.qp(s);
            QpAttr a = q.qp.query();
            x.out.printf("query %s: QPN 0x%06x state %s mtu %d dest %s:%d dest_qpn 0x%06x rq_psn 0x%06x sq_psn 0x%06x access %s "
                            + "rd_atomic %d dest_rd_atomic %d min_rnr_timer %d ack_timeout %d retry_cnt %d rnr_retry %d extensions %s%n",
                    x.values.name(s, "qp"), q.qp.qpNum(), a.state(), a.pathMtu().bytes(),
                    a.destAddress() == null ? "-" : IpText.of(a.destAddress()), a.destPort(), a.destQpNum(), a.rqPsn(),
                    a.sqPsn(), Access.toString(a.accessFlags()), a.maxRdAtomic(), a.maxDestRdAtomic(), a.minRnrTimer(), a.timeout(),
                    a.retryCnt(), a.rnrRetry(), io.jroce.endpoint.JroceExtensions.toString(q.qp.extensions()));
            if (q.qp.type() == QpType.UD) x.out.printf("query %s: UD qkey 0x%08x%n", x.values.name(s, "qp"), a.qkey());
        }
    };
}
