package io.jroce.cli.conform;

import io.jroce.cli.conn.PeerInfo;
import io.jroce.cli.conn.RcPingpongHandshake;
import io.jroce.wire.IpText;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * An {@code ibv_rc_pingpong} server (run it with {@code -g} on RoCE): its exchange carries only LID, QPN, PSN and
 * GID, so no region is known (the RDMA cases cannot tell) and its receives are posted (SEND cases judge). The
 * server starts its own SENDs to us once connected; the tester does not answer them, they are filtered out.
 */
final class PingpongLink implements PeerLink {
    private final InetAddress host;
    private final int port;
    private final int rocePort;
    private final Duration timeout;

    PingpongLink(InetAddress host, int port, int rocePort, Duration timeout) {
        this.host = host;
        this.port = port;
        this.rocePort = rocePort;
        this.timeout = timeout;
    }

    @Override
    public Target open(Local local) throws IOException {
        PeerInfo peer = RcPingpongHandshake.client(host, port, null, new PeerInfo(local.qpn(), local.psn(), local.gid()), timeout);
        RcPingpongHandshake.requireRoutable(peer, local.gid());
        return new Target(new InetSocketAddress(peer.gid().toInetAddress(), rocePort), peer.qpn(), local.mtu(), null, null, 0, true, null, null);
    }

    @Override
    public String describe() {
        return "ibv_rc_pingpong server at " + IpText.of(host) + " TCP " + port;
    }

    @Override
    public void close() {
        // the exchange closed its socket after "done"
    }
}
