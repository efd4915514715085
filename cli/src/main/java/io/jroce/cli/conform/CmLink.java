package io.jroce.cli.conform;

import io.jroce.endpoint.Gid;
import io.jroce.endpoint.Mtu;
import io.jroce.wire.IpText;
import io.jroce.wire.mad.CmaHeader;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * An {@code rping -s} server (rdma-core's, or {@code jroce rping -s}): a connection through its connection manager on
 * rdma_cm's TCP port space ({@link CmConnection}), with the REQ rping's client would send except that it asks for
 * responder resources and initiator depth 255 (the cm cases judge how the REP answers that). The server advertises no
 * memory, so the cases that need a region cannot tell; it reads every SEND as its 16-byte buffer advertisement and
 * would end on any other, so the cases that SEND cannot tell either. The QP allows remote write (rdma_cm's QPs do:
 * cm.c cm_init_qp_init_attr), which the probe's zero-length RDMA WRITE needs. {@link #close} sends the DREQ, after
 * which the server ends normally.
 */
final class CmLink implements PeerLink {
    static final String RPING_SENDS = "rping's server reads every SEND as its 16-byte buffer advertisement and ends on any other "
            + "(rping.c server_recv); SENDs are not sent to it";

    private final RawPort raw;
    private final InetAddress host;
    private final InetAddress roce;
    private final int cmPort;
    private final int rocePort;
    private final Duration timeout;
    private final long waitNanos;
    private CmConnection conn;
    private boolean first = true;

    CmLink(RawPort raw, InetAddress host, InetAddress roce, int cmPort, int rocePort, Duration timeout, long waitNanos) {
        this.raw = raw;
        this.host = host;
        this.roce = roce;
        this.cmPort = cmPort;
        this.rocePort = rocePort;
        this.timeout = timeout;
        this.waitNanos = waitNanos;
    }

    @Override
    public Target open(Local local) throws IOException {
        close();
        InetSocketAddress peer = new InetSocketAddress(roce, rocePort);
        Gsi gsi = new Gsi(raw, peer);
        InetAddress ours = raw.local().getAddress();
        CmMads.Req req = new CmMads.Req(ThreadLocalRandom.current().nextLong() & 0x7FFFFFFF00000000L, CmConnection.newCommId(),
                ThreadLocalRandom.current().nextLong(), CmaHeader.serviceId(CmaHeader.PS_TCP, cmPort), local.qpn(), local.psn(),
                Mtu.ofBytes(local.mtu()).ibvEnum(), 255, 255, local.gid(), Gid.of(roce), 32768 + ThreadLocalRandom.current().nextInt(28000),
                ours, host);
        conn = CmConnection.connect(gsi, req, cmPort, timeout.toNanos(), first);
        first = false;
        return new Target(peer, conn.peerQpn, local.mtu(), null, null, 0, false, RPING_SENDS, conn);
    }

    @Override
    public String describe() {
        return "rping server at " + IpText.of(host) + " rdma_cm port " + cmPort;
    }

    @Override
    public void close() {
        if (conn == null || conn.released) return;
        try {
            conn.release(waitNanos);
        } catch (IOException e) {
            // the port is closing: the peer's CM ends the connection on its own timeout
        }
    }
}
