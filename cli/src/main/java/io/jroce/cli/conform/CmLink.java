package io.jroce.cli.conform;

import io.jroce.endpoint.Mtu;
import io.jroce.wire.IpText;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * An {@code rping -s} server (rdma-core's, or {@code jroce rping -s}): a connection through its connection manager on
 * rdma_cm's TCP port space ({@link CmConnection}), with the REQ rping's client would send except that it asks for
 * responder resources and initiator depth 255 (the cm cases judge how the REP answers that). The server advertises no
 * memory, so the cases that need a region cannot tell; it reads every SEND as its 16-byte buffer advertisement and
 * would end on any other, so the cases that SEND cannot tell either. The QP allows remote write (rdma_cm's QPs do:
 * cm.c cm_init_qp_init_attr), which the probe's zero-length RDMA WRITE needs. {@link #close} sends the DREQ, after
 * which the server ends normally.
 */
final class CmLink extends CmPeerLink {
    static final String RPING_SENDS = "rping's server reads every SEND as its 16-byte buffer advertisement and ends on any other "
            + "(rping.c server_recv); SENDs are not sent to it";

    private CmConnection conn;

    CmLink(RawPort raw, InetAddress host, InetAddress roce, int cmPort, int rocePort, Duration timeout, long waitNanos) {
        super(raw, host, roce, cmPort, rocePort, timeout, waitNanos);
    }

    @Override
    public Target open(Local local) throws IOException {
        close();
        InetSocketAddress peer = peer();
        Gsi gsi = new Gsi(raw, peer);
        CmMads.Req req = req(local, local.qpn(), local.psn(), Mtu.ofBytes(local.mtu()).ibvEnum(), 255);
        conn = CmConnection.connect(gsi, req, port, timeout.toNanos(), first);
        first = false;
        return new Target(peer, conn.peerQpn, local.mtu(), null, null, 0, false, RPING_SENDS, conn);
    }

    @Override
    public String describe() {
        return "rping server at " + IpText.of(host) + " rdma_cm port " + port;
    }

    @Override
    public void close() {
        release(conn);
    }
}
