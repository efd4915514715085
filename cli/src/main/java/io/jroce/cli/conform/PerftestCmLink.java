package io.jroce.cli.conform;

import io.jroce.cli.conn.PerftestHandshake;
import io.jroce.cli.conn.PerftestHandshake.Keys;
import io.jroce.cli.conn.PerftestHandshake.Test;
import io.jroce.endpoint.Mtu;
import io.jroce.wire.IpText;
import io.jroce.wire.Psn;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A perftest server run with {@code -R} ({@code ib_write_bw -R} and the others, or {@code jroce perf ... -R}): as
 * perftest's client does it (perftest_communication.c {@code rdma_client_connect}, {@code ctx_xchg_data_rdma},
 * {@code create_rdma_cm_connection}), but with packets and MADs the tester builds itself. First the exchange QP's
 * connection through the peer's connection manager (our REQ asks responder resources and initiator depth 0: the
 * exchange QP only SENDs, and the cm cases judge that REP too), then perftest's exchange over it as SEND/RECV
 * ({@link RawQpChannel}): versions, sys data, MTU, a sync, the test QP's own connection to the same port (its REQ
 * asks 255/255), a sync, the keys (the server's buffer VA and R_Key, as with the TCP exchange) and the syncs
 * around where {@code ctx_connect} would be. Instead of the test's traffic, the cases; {@link #close} runs the
 * closing syncs and releases both connections (test QP first, as perftest's {@code rdma_cm_disconnect_nodes}), so
 * the server ends normally. What the buffer grants follows the test, as {@link PerftestLink} says.
 */
final class PerftestCmLink extends CmPeerLink {
    private final Test test;
    private final long regionLength;
    private PerftestHandshake hs;
    private Keys mine;
    private CmConnection exchange;
    private CmConnection conn;

    PerftestCmLink(RawPort raw, InetAddress host, InetAddress roce, int port, int rocePort, Duration timeout, Test test, long regionLength,
                   long waitNanos) {
        super(raw, host, roce, port, rocePort, timeout, waitNanos);
        this.test = test;
        this.regionLength = regionLength;
    }

    @Override
    public Target open(Local local) throws IOException {
        close();
        InetSocketAddress peer = peer();
        Gsi gsi = new Gsi(raw, peer);
        int mtuEnum = Mtu.ofBytes(local.mtu()).ibvEnum();
        // the exchange QP: a QPN of its own beside the test QP's, its own first PSN
        int xQpn = (local.qpn() + 0x8000) & Psn.MASK;
        int xPsn = ThreadLocalRandom.current().nextInt(1 << 24);
        exchange = CmConnection.connect(gsi, req(local, xQpn, xPsn, mtuEnum, 0), port, timeout.toNanos(), false);
        // the active side sends from the REP's Starting PSN and receives from its REQ's (cm.c cm_init_qp_rtr_attr, _rts_attr)
        RawQpChannel ch = new RawQpChannel(raw, peer, xQpn, exchange.peerQpn, exchange.peerStartingPsn(), xPsn,
                IpText.of(host) + " rdma_cm port " + port, timeout);
        hs = PerftestHandshake.overQp(ch, true);
        mine = PerftestLink.preamble(hs, local, host);
        boolean holdRtu = first;
        List<Keys> remote = hs.setUp(test, List.of(mine), () -> {
            CmMads.Req testReq = req(local, local.qpn(), local.psn(), mtuEnum, 255);
            // perftest's server listens only until its connections are made: the cases that need the listener ask now
            // (it refuses each of them before its application sees it: cm.c, cma.c)
            java.util.Map<String, String> asked = CmCases.askListenerFirst(gsi, testReq, waitNanos, System.nanoTime() + timeout.toNanos());
            conn = CmConnection.connect(gsi, testReq, port, timeout.toNanos(), holdRtu);
            conn.exchange = exchange;
            conn.listenerAnswers = asked;
        }, r -> { });
        first = false;
        hs.beforeTraffic(test, mine);
        Keys k = remote.get(0);
        return new Target(peer, conn.peerQpn, local.mtu(), new Target.Region(k.va(), k.rkey(), regionLength), null,
                PerftestLink.access(test), test.isSend(), null, conn);
    }

    @Override
    public String describe() {
        return "perftest " + test.tool() + " -R server at " + IpText.of(host) + " rdma_cm port " + port;
    }

    @Override
    public void close() {
        try {
            if (hs != null && mine != null) { // an exchange that got as far as the keys: its closing syncs
                hs.socket().timeout(Duration.ofSeconds(2));
                hs.finish(test, mine, null);
            }
        } catch (IOException e) {
            // the server may have given up already; the connections are released either way
        } finally {
            hs = null;
            mine = null;
            release(conn);
            release(exchange);
            conn = null;
            exchange = null;
        }
    }
}
