package io.jroce.cli.node;

import io.jroce.cli.conn.RemoteRegion;
import io.jroce.cli.node.Session.Failure;
import io.jroce.cli.node.Session.Qp;
import io.jroce.cli.node.SessionChecker.Kind;
import io.jroce.cli.node.SessionLanguage.Type;
import io.jroce.cli.node.SessionSyntax.ScriptException;
import io.jroce.cli.node.SessionSyntax.Statement;
import io.jroce.cli.node.Syntax.Arg;
import io.jroce.cli.node.Syntax.Positional;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendFlags;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WrOpcode;

import java.util.ArrayList;
import java.util.List;

import static io.jroce.cli.node.SessionChecker.err;
import static io.jroce.cli.node.Syntax.Arg.opt;
import static io.jroce.cli.node.Syntax.Arg.req;

/** Work requests: recv, and the send-queue operations send, write, read, cas and fadd. */
final class PostCommands {
    private static final List<Arg> WR = List.of(opt("qp", Type.NAME), opt("wr_id", Type.U64), opt("unsignaled", Type.BOOL),
            opt("fence", Type.BOOL));
    private static final List<Arg> REMOTE = List.of(req("remote", Type.NAME), opt("roffset", Type.SIZE), opt("rkey", Type.U32));

    private PostCommands() {
    }

    static final SessionCommand RECV = new SessionCommand(Syntax.of("recv", Positional.NONE,
            "recv [qp=QP] [mr=MR [offset=N] [len=N]] [wr_id=N]", "post a receive (without mr=: no buffer, for RDMA WRITE with immediate)",
            opt("qp", Type.NAME), opt("mr", Type.NAME), Syntax.RANGE, opt("wr_id", Type.U64))) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            Statement out = c.withDefault(s, "qp", Kind.QP);
            c.checkLocalBuffer(s, false);
            return out;
        }

        @Override
        void run(Session x, Statement s) throws Failure {
            Qp q = x.qp(s);
            Sge[] sgl = new Sge[0];
            if (s.has("mr")) {
                MemoryRegion mr = x.regions.require(x.values.name(s, "mr"));
                int[] r = x.values.range(s, mr, -1);
                sgl = new Sge[] {new Sge(mr.address() + r[0], r[1], mr.lkey())};
            }
            ReceiveWorkRequest wr = new ReceiveWorkRequest(wrId(x, s), sgl);
            QpState before = q.qp.state();
            q.qp.postRecv(wr);
            if (before == QpState.RESET || before == QpState.INIT) q.unconnectedRecvs.add(wr);
        }
    };

    static final SessionCommand SEND = new Post(Syntax.of("send", Positional.NONE,
            "send [qp=QP] [mr=MR [offset=N] [len=N]] [imm=N | inv=REMOTE|N] [solicited] [inline] [unsignaled] [fence] [wr_id=N] "
                    + "[to=ADDR [udp_port=N] qpn=N [qkey=N]]",
            "post a SEND (SEND_WITH_IMM with imm=, SEND_WITH_INV invalidating the peer's rkey with inv=); from a UD QP to "
                    + "QP qpn= at to= (UDP port: ours unless udp_port=; Q_Key: the QP's own unless qkey=), or without them to the "
                    + "peer a connect cm resolved (its QPN and Q_Key)",
            WR, opt("mr", Type.NAME), Syntax.RANGE, opt("imm", Type.U32), opt("inv", Type.KEY_OR_REMOTE),
            opt("solicited", Type.BOOL), opt("inline", Type.BOOL), opt("to", Type.ADDRESS), opt("udp_port", Type.PORT),
            opt("qpn", Type.QPN), opt("qkey", Type.U32)), false, (v, s, q, wr) -> {
                if (s.has("to")) {
                    // a UD destination (ibv_send_wr.wr.ud): an address handle per send; a Q_Key with the high bit
                    // set stands for the QP's own (IBA 10.2.4)
                    java.net.InetAddress to = (java.net.InetAddress) v.value(s.arg("to"), Type.ADDRESS);
                    int port = s.has("udp_port") ? (int) v.value(s.arg("udp_port"), Type.PORT) : q.qp.device().port();
                    io.jroce.endpoint.AddressHandle ah;
                    try {
                        ah = q.qp.pd().createAh(to, port);
                    } catch (RuntimeException e) {
                        throw new Failure(e.getMessage());
                    }
                    wr.ud(ah, (int) v.value(s.arg("qpn"), Type.QPN), s.has("qkey") ? (int) v.value(s.arg("qkey"), Type.U32) : 0x80000000);
                } else if (q.udPeer != null) { // the peer connect cm resolved (SIDR_REP: its QPN and Q_Key)
                    wr.ud(q.udPeer.ah(), q.udPeer.qpNum(), s.has("qkey") ? (int) v.value(s.arg("qkey"), Type.U32) : q.udPeer.qkey());
                }
                if (s.has("imm")) {
                    wr.immData((int) v.value(s.arg("imm"), Type.U32));
                    return WrOpcode.SEND_WITH_IMM;
                }
                if (s.has("inv")) {
                    Object key = v.value(s.arg("inv"), Type.KEY_OR_REMOTE);
                    wr.invalidateRkey(key instanceof Integer k ? k : remote(q, (String) key).rkey());
                    return WrOpcode.SEND_WITH_INV;
                }
                return WrOpcode.SEND;
            }) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            Statement out = super.check(c, s);
            if (s.has("inv") && s.arg("inv").hasRefs()) {
                throw err(s.line(), s.arg("inv").valueColumn(), "inv= is a peer's region name or an rkey number");
            }
            return out;
        }
    };

    static final SessionCommand WRITE = new Post(Syntax.of("write", Positional.NONE,
            "write [qp=QP] mr=MR [offset=N] [len=N] remote=REMOTE [roffset=N] [rkey=N] [imm=N] [solicited] [inline] [unsignaled] "
                    + "[fence] [wr_id=N]",
            "post an RDMA WRITE (WITH_IMM with imm=) into a region the peer published",
            WR, req("mr", Type.NAME), Syntax.RANGE, REMOTE, opt("imm", Type.U32), opt("solicited", Type.BOOL),
            opt("inline", Type.BOOL)), false, (v, s, q, wr) -> {
                if (!s.has("imm")) return WrOpcode.RDMA_WRITE;
                wr.immData((int) v.value(s.arg("imm"), Type.U32));
                return WrOpcode.RDMA_WRITE_WITH_IMM;
            });

    static final SessionCommand READ = new Post(Syntax.of("read", Positional.NONE,
            "read [qp=QP] mr=MR [offset=N] [len=N] remote=REMOTE [roffset=N] [rkey=N] [unsignaled] [fence] [wr_id=N]",
            "post an RDMA READ from a region the peer published into a local one",
            WR, req("mr", Type.NAME), Syntax.RANGE, REMOTE), false, (v, s, q, wr) -> WrOpcode.RDMA_READ);

    static final SessionCommand CAS = new Post(Syntax.of("cas", Positional.NONE,
            "cas [qp=QP] mr=MR [offset=N] remote=REMOTE [roffset=N] [rkey=N] compare=N swap=N [unsignaled] [fence] [wr_id=N]",
            "post an atomic compare-and-swap on the peer's 8-byte word; the original value lands in mr",
            WR, req("mr", Type.NAME), opt("offset", Type.SIZE), REMOTE, req("compare", Type.U64), req("swap", Type.U64)), true,
            (v, s, q, wr) -> {
                wr.compareAdd((long) v.value(s.arg("compare"), Type.U64)).swap((long) v.value(s.arg("swap"), Type.U64));
                return WrOpcode.ATOMIC_CMP_AND_SWP;
            });

    static final SessionCommand FADD = new Post(Syntax.of("fadd", Positional.NONE,
            "fadd [qp=QP] mr=MR [offset=N] remote=REMOTE [roffset=N] [rkey=N] add=N [unsignaled] [fence] [wr_id=N]",
            "post an atomic fetch-and-add on the peer's 8-byte word; the original value lands in mr",
            WR, req("mr", Type.NAME), opt("offset", Type.SIZE), REMOTE, req("add", Type.U64)), true, (v, s, q, wr) -> {
                wr.compareAdd((long) v.value(s.arg("add"), Type.U64));
                return WrOpcode.ATOMIC_FETCH_AND_ADD;
            });

    /** What one send-queue verb adds to the work request; returns its opcode. */
    @FunctionalInterface
    private interface Operation {
        WrOpcode prepare(Values v, Statement s, Qp q, SendWorkRequest wr) throws Failure;
    }

    /** A send-queue verb: the checks and the posting they share, and its own {@link Operation}. */
    private static class Post extends SessionCommand {
        private final boolean atomic;
        private final Operation operation;

        Post(Syntax syntax, boolean atomic, Operation operation) {
            super(syntax);
            this.atomic = atomic;
            this.operation = operation;
        }

        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            Statement out = c.withDefault(s, "qp", Kind.QP);
            String qp = out.arg("qp").literal();
            if (!c.symbols().live.get(qp).connected()) {
                throw err(s.line(), s.has("qp") ? s.arg("qp").valueColumn() : s.verbColumn(), "qp " + qp
                        + " is not connected yet: 'listen' or 'connect' it on an earlier line (or modify it to RTS)");
            }
            if (s.has("imm") && s.has("inv")) throw err(s.line(), s.arg("inv").column(), "imm= and inv= exclude each other");
            boolean ud = c.symbols().live.get(qp).ud();
            if (ud && !s.verb().equals("send")) {
                throw err(s.line(), s.verbColumn(), "qp " + qp + " is a UD QP: it posts send only (no RDMA or atomics over UD)");
            }
            if (ud) {
                if ((!s.has("to") || !s.has("qpn")) && !(c.symbols().live.get(qp).udPeer() && !s.has("to") && !s.has("qpn"))) {
                    throw err(s.line(), s.verbColumn(), "qp " + qp + " is a UD QP: name the destination with to=ADDR qpn=N "
                            + "(or resolve a peer first with connect cm)");
                }
                if (s.has("inv")) throw err(s.line(), s.arg("inv").column(), "a UD QP sends SEND and SEND with imm= only");
            } else {
                for (String k : List.of("to", "udp_port", "qpn", "qkey")) {
                    if (s.has(k)) throw err(s.line(), s.arg(k).column(), k + "= is for a UD QP (qp NAME ud); qp " + qp + " is RC");
                }
            }
            c.checkLocalBuffer(s, atomic);
            return out;
        }

        @Override
        void run(Session x, Statement s) throws Failure {
            Values v = x.values;
            String qpName = v.name(s, "qp");
            Qp q = x.qp(s);
            SendWorkRequest wr = new SendWorkRequest().wrId(wrId(x, s));
            long size = 0;
            if (s.has("mr")) {
                MemoryRegion mr = x.regions.require(v.name(s, "mr"));
                int[] r = v.range(s, mr, atomic ? 8 : -1);
                wr.sgl(new Sge(mr.address() + r[0], r[1], mr.lkey()));
                size = r[1];
            }
            int flags = v.flag(s, "unsignaled") ? 0 : SendFlags.SIGNALED;
            if (v.flag(s, "solicited")) flags |= SendFlags.SOLICITED;
            if (v.flag(s, "inline")) flags |= SendFlags.INLINE;
            if (v.flag(s, "fence")) flags |= SendFlags.FENCE;
            wr.flags(flags);
            WrOpcode op = operation.prepare(v, s, q, wr);
            wr.opcode(op);
            if (s.has("remote")) {
                RemoteRegion r = remote(q, v.name(s, "remote"));
                long roff = v.size(s, "roffset", 0);
                int rkey = v.get(s, "rkey", Type.U32, r.rkey());
                wr.remote(r.va() + roff, rkey);
            }
            long packets0 = x.completions.packets(q.qp);
            long t0 = System.nanoTime();
            q.qp.postSend(wr);
            if ((flags & SendFlags.SIGNALED) != 0 || q.qp.initAttr().sqSigAll()) {
                List<String> f = new ArrayList<>();
                for (String k : List.of("inline", "solicited", "fence")) if (v.flag(s, k)) f.add(k);
                x.completions.track(wr.wrId(), new Completions.Pending(op.name(), String.join(",", f), size, t0, packets0, s.line(), q.qp));
            }
        }
    }

    /** wr_id= or the line number. */
    private static long wrId(Session x, Statement s) throws Failure {
        return x.values.get(s, "wr_id", Type.U64, (long) s.line());
    }

    private static RemoteRegion remote(Qp q, String name) throws Failure {
        if (q.peer == null) throw new Failure("the QP is not connected to a peer, so it knows no remote region '" + name + "'");
        return q.peer.region(name).orElseThrow(() -> new Failure("the peer published no region '" + name + "' (it published: "
                + (q.peer.published().isEmpty() ? "none" : String.join(", ", q.peer.published().stream().map(RemoteRegion::name).toList()))
                + "); add it to publish= on the peer's listen or connect"));
    }
}
