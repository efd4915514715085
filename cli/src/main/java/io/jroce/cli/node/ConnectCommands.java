package io.jroce.cli.node;

import io.jroce.wire.IpText;
import io.jroce.cli.conn.GidFamily;
import io.jroce.cli.conn.JroceHandshake;
import io.jroce.cli.conn.PeerInfo;
import io.jroce.cli.conn.RemoteRegion;
import io.jroce.cli.node.Session.Failure;
import io.jroce.cli.node.Session.Qp;
import io.jroce.cli.node.SessionChecker.Kind;
import io.jroce.cli.node.SessionChecker.Sym;
import io.jroce.cli.node.SessionLanguage.Type;
import io.jroce.cli.node.SessionSyntax.ScriptException;
import io.jroce.cli.node.SessionSyntax.Statement;
import io.jroce.cli.node.Syntax.Arg;
import io.jroce.cli.node.Syntax.Positional;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.RcConnect;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import static io.jroce.cli.node.SessionChecker.err;
import static io.jroce.cli.node.Syntax.Arg.opt;

/**
 * listen and connect: the TCP exchange of QPN, PSN, GID, MTU and published regions with the peer node, then
 * the QP to RTS. The two differ only in who waits for whom.
 */
final class ConnectCommands {
    static final Duration DEFAULT_CONNECT = Duration.ofSeconds(60);
    static final int DEFAULT_RD_ATOMIC = 4;
    /**
     * Local ACK timeout exponent: 4.096 us * 2^17 = 0.54 s, so 7 retries ride out about 4 s without an answer.
     * ibv_rc_pingpong's 14 (67 ms, 0.5 s in all) is too short for two JVMs sharing a busy machine, where a
     * peer's event loop can be descheduled for hundreds of milliseconds; chaos experiments can lower it.
     */
    static final int DEFAULT_ACK_TIMEOUT = 17;

    private static final List<Arg> EXCHANGE = List.of(opt("qp", Type.NAME), opt("port", Type.PORT), opt("publish", Type.NAMES),
            opt("mtu", Type.MTU), opt("psn", Type.PSN), opt("rd_atomic", Type.U8), opt("timeout", Type.DURATION),
            opt("ack_timeout", Type.SMALL), opt("retry_cnt", Type.SMALL), opt("rnr_retry", Type.SMALL), opt("min_rnr_timer", Type.SMALL),
            opt("cm", Type.BOOL));
    /**
     * What the connection manager decides itself (REQ/REP values), so {@code cm} takes none of them; ack_timeout it
     * takes as librdmacm's RDMA_OPTION_ID_ACK_TIMEOUT.
     */
    private static final List<String> NOT_WITH_CM = List.of("psn", "mtu", "min_rnr_timer");

    private ConnectCommands() {
    }

    static final SessionCommand LISTEN = new Connect(Syntax.of("listen", Positional.NONE,
            "listen [qp=QP] [port=N] [publish=MR,...] [mtu=N] [psn=N] [rd_atomic=N] [timeout=DUR] [ack_timeout=N] [retry_cnt=N] "
                    + "[rnr_retry=N] [min_rnr_timer=N] [cm]",
            "wait for one peer's connect on TCP (default port: --port, timeout 60s), exchange QPN, PSN, GID, MTU and published "
                    + "regions, move the QP to RTS (defaults: rd_atomic 4, ack_timeout 17 = 0.5 s, retry_cnt 7, rnr_retry 7 = forever, "
                    + "min_rnr_timer 12); with cm: wait for an rdma_cm connect to port N over QP 1 instead (REQ/REP, as rdma_listen "
                    + "+ rdma_accept; regions travel in the private data; ack_timeout= as rdma_set_option's RDMA_OPTION_ID_ACK_TIMEOUT, "
                    + "else the CM's from the path, 19 = 2.1 s); a UD QP with cm answers one SIDR_REQ for port N of "
                    + "rdma_cm's UDP port space with its QPN and Q_Key",
            EXCHANGE));

    static final SessionCommand CONNECT = new Connect(Syntax.of("connect", Positional.NONE,
            "connect [qp=QP] [host=ADDR] [port=N] [publish=MR,...] [mtu=N] [psn=N] [rd_atomic=N] [timeout=DUR] [ack_timeout=N] "
                    + "[retry_cnt=N] [rnr_retry=N] [min_rnr_timer=N] [cm]",
            "connect to a listening peer (default host: --peer), retrying until it listens; then as listen; with cm: an rdma_cm "
                    + "connect (rdma_connect) to port N of the peer's QP 1, retried while it answers REJ 8 (nobody listens; the "
                    + "receives posted before, which the REJ flushed, are posted again), ack_timeout= as with listen; a UD QP "
                    + "with cm resolves the peer's UD QP with SIDR_REQ (UDP port space; retried while nobody listens), and its "
                    + "sends then go there unless they name a destination",
            EXCHANGE, opt("host", Type.ADDRESS)));

    static final SessionCommand DISCONNECT = new SessionCommand(Syntax.of("disconnect", Positional.NONE,
            "disconnect [qp=QP] [timeout=DUR]",
            "release a connection made with cm (rdma_disconnect: QP to ERR, DREQ) and wait for DISCONNECTED (default timeout "
                    + "10s; at once if the peer released first); a QP connected over TCP just moves to ERR",
            opt("qp", Type.NAME), opt("timeout", Type.DURATION))) {
        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            return c.withDefault(s, "qp", Kind.QP);
        }

        @Override
        void run(Session x, Statement s) throws Failure {
            CmConnect.disconnect(x, s, x.values.name(s, "qp"), x.qp(s), x.values.get(s, "timeout", Type.DURATION, Duration.ofSeconds(10)));
        }
    };

    private static final class Connect extends SessionCommand {
        Connect(Syntax syntax) {
            super(syntax);
        }

        @Override
        Statement check(SessionChecker c, Statement s) throws ScriptException {
            Statement out = c.withDefault(s, "qp", Kind.QP);
            String qp = out.arg("qp").literal();
            Sym sym = c.symbols().live.get(qp);
            if (sym.ud()) {
                if (!s.has("cm")) {
                    throw err(s.line(), s.has("qp") ? s.arg("qp").valueColumn() : 0, "qp " + qp
                            + " is a UD QP: it needs no connection; name the destination on each send (send to=ADDR qpn=N), "
                            + "or resolve the peer with cm (rdma_cm's UDP port space)");
                }
                for (String k : List.of("publish", "rd_atomic", "retry_cnt", "rnr_retry", "psn", "mtu", "ack_timeout", "min_rnr_timer")) {
                    if (s.has(k)) throw err(s.line(), s.arg(k).column(), k + "= is not for a UD QP");
                }
                if (s.verb().equals("connect") && !s.has("host") && !c.hasPeerDefault()) {
                    throw err(s.line(), 0, "connect needs host=ADDR (or run the node with --peer ADDR)");
                }
                c.symbols().live.put(qp, new Sym(Kind.QP, s.line(), 0, true, true, sym.udPeer() || s.verb().equals("connect")));
                return out;
            }
            if (sym.connected()) {
                throw err(s.line(), s.has("qp") ? s.arg("qp").valueColumn() : 0, "qp " + qp + " is already connected (line "
                        + sym.line() + "): create another QP for a second connection");
            }
            if (s.has("publish") && !s.arg("publish").hasRefs()) {
                for (String mr : SessionLanguage.names(s.arg("publish").literal())) {
                    Sym m = c.symbols().live.get(mr);
                    if (m == null || m.kind() != Kind.MR) {
                        throw err(s.line(), s.arg("publish").valueColumn(), "publish: '" + mr
                                + "' is not a memory region defined before this line");
                    }
                }
            }
            if (s.verb().equals("connect") && !s.has("host") && !c.hasPeerDefault()) {
                throw err(s.line(), 0, "connect needs host=ADDR (or run the node with --peer ADDR)");
            }
            long rd = SessionChecker.literalLong(s, "rd_atomic", 1);
            if (rd > QueuePair.MAX_RD_ATOMIC) {
                throw err(s.line(), s.arg("rd_atomic").valueColumn(), "rd_atomic must be 0.." + QueuePair.MAX_RD_ATOMIC);
            }
            if (s.has("cm")) {
                for (String k : NOT_WITH_CM) {
                    if (s.has(k)) {
                        throw err(s.line(), s.arg(k).valueColumn(), k + "= is not for cm: the connection manager sets it (the path "
                                + "MTU is the node's --mtu)");
                    }
                }
            }
            c.symbols().live.put(qp, new Sym(Kind.QP, s.line(), 0, true));
            return out;
        }

        @Override
        void run(Session x, Statement s) throws Failure {
            Values v = x.values;
            Session.Settings settings = x.settings;
            PrintWriter out = x.out;
            String qpName = v.name(s, "qp");
            Qp q = x.qp(s);
            Mtu mtu = v.get(s, "mtu", Type.MTU, settings.mtu());
            int psn = s.has("psn") ? (int) v.value(s.arg("psn"), Type.PSN) : ThreadLocalRandom.current().nextInt(1 << 24);
            int rd = v.get(s, "rd_atomic", Type.U8, DEFAULT_RD_ATOMIC);
            int port = v.get(s, "port", Type.PORT, settings.tcpPort());
            Duration timeout = v.get(s, "timeout", Type.DURATION, DEFAULT_CONNECT);
            List<RemoteRegion> published = new ArrayList<>();
            if (s.has("publish")) {
                @SuppressWarnings("unchecked")
                List<String> names = (List<String>) v.value(s.arg("publish"), Type.NAMES);
                for (String n : names) {
                    MemoryRegion mr = x.regions.require(n);
                    published.add(new RemoteRegion(n, mr.address(), mr.rkey(), mr.length()));
                }
            }
            if (v.flag(s, "cm")) {
                CmConnect.run(x, s, qpName, q, port, published, rd, timeout);
                return;
            }
            // a jroce peer offers its transport extensions; what both offer is used, nothing with an older peer
            PeerInfo local = new PeerInfo(0, q.qp.qpNum(), psn, x.device.gid(0), mtu.bytes(), rd, published)
                    .withExtensions(io.jroce.endpoint.JroceExtensions.ALL).withReceiveBuffer(x.device.receiveBufferBytes());
            boolean listen = s.verb().equals("listen");
            InetAddress host = listen ? null : v.get(s, "host", Type.ADDRESS, settings.peer());
            if (listen) {
                out.printf("listen %s: waiting on TCP %s:%d for a peer to connect (timeout %s)%n", qpName,
                        IpText.of(settings.bind()), port, Session.human(timeout));
                out.flush();
            }
            PeerInfo peer;
            try {
                peer = listen ? JroceHandshake.serve(settings.bind(), port, local, timeout)
                        : JroceHandshake.connect(host, port, local, timeout);
            } catch (IOException e) {
                throw new Failure(s.verb() + ": " + Session.oneLine(e.getMessage())
                        .replace("check the host and -p port", "check host= and port=")
                        .replace("choose another port with -p", "choose another port with port= or --port"), e);
            }
            if (peer.mtu() != 0 && peer.mtu() != mtu.bytes()) {
                throw new Failure(s.verb() + ": the peer at " + IpText.of(peer.gid().toInetAddress()) + " uses path MTU " + peer.mtu()
                        + " but this node uses " + mtu.bytes() + ": give both sides the same mtu= (or --mtu)");
            }
            try {
                GidFamily.requireSame(x.device.gid(0), peer.gid(), null);
            } catch (IOException e) {
                throw new Failure(s.verb() + ": " + e.getMessage(), e);
            }
            int maxRd = peer.outReads() > 0 ? Math.min(rd, peer.outReads()) : rd;
            RcConnect.Params p = RcConnect.Params.defaults().mtu(mtu).maxDestRdAtomic(rd).maxRdAtomic(maxRd)
                    .accessFlags(q.access).timeout(DEFAULT_ACK_TIMEOUT)
                    .extensions(local.extensions() & peer.extensions()).peerReceiveBuffer(peer.receiveBuffer());
            if (s.has("ack_timeout")) p.timeout((int) v.value(s.arg("ack_timeout"), Type.SMALL));
            if (s.has("retry_cnt")) p.retryCnt((int) v.value(s.arg("retry_cnt"), Type.SMALL));
            if (s.has("rnr_retry")) p.rnrRetry((int) v.value(s.arg("rnr_retry"), Type.SMALL));
            if (s.has("min_rnr_timer")) p.minRnrTimer((int) v.value(s.arg("min_rnr_timer"), Type.SMALL));
            RcConnect.connect(q.qp, peer.rcPeer(x.device.port()), psn, p);
            q.unconnectedRecvs.clear();
            q.peer = peer;
            q.mtu = mtu;
            StringBuilder regions = new StringBuilder();
            for (RemoteRegion r : peer.published()) {
                regions.append(regions.length() == 0 ? "" : ", ").append(r.name()).append(" (").append(r.length()).append(" bytes)");
            }
            out.printf("%s %s: connected QPN 0x%06x PSN 0x%06x to %s QPN 0x%06x PSN 0x%06x, MTU %d, rd_atomic %d; peer regions: %s; extensions: %s%s%n",
                    s.verb(), qpName, q.qp.qpNum(), psn, IpText.of(peer.gid().toInetAddress()), peer.qpn(), peer.psn(), mtu.bytes(),
                    maxRd, regions.length() == 0 ? "none" : regions, io.jroce.endpoint.JroceExtensions.toString(q.qp.extensions()),
                    peer.receiveBuffer() > 0 ? "; peer receive buffer " + peer.receiveBuffer() + " bytes" : "");
        }
    }
}
