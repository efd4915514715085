package io.jroce.cli.conform;

import io.jroce.endpoint.Gid;
import io.jroce.wire.mad.CmaHeader;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * What the peers reached through their connection manager share ({@link CmLink}, {@link PerftestCmLink}): the raw
 * port the MADs and packets go out of, the peer's host and RoCE addresses, its rdma_cm port (TCP port space), the
 * REQ as rdma_cm's active side builds it, and the release of a connection at the end.
 */
abstract class CmPeerLink implements PeerLink {
    final RawPort raw;
    final InetAddress host;
    final InetAddress roce;
    /** The peer's rdma_cm port. */
    final int port;
    final int rocePort;
    final Duration timeout;
    /** How long a DREQ waits for its DREP. */
    final long waitNanos;
    /** The first connection holds its RTU back (the cm.rtu.lost case). */
    boolean first = true;

    CmPeerLink(RawPort raw, InetAddress host, InetAddress roce, int port, int rocePort, Duration timeout, long waitNanos) {
        this.raw = raw;
        this.host = host;
        this.roce = roce;
        this.port = port;
        this.rocePort = rocePort;
        this.timeout = timeout;
        this.waitNanos = waitNanos;
    }

    /** The peer's RoCE address (UDP 4791 or --roce-port). */
    final InetSocketAddress peer() {
        return new InetSocketAddress(roce, rocePort);
    }

    /**
     * A REQ for one of our QPs to the peer's port in rdma_cm's TCP port space, with fresh IDs and a random source
     * port in the rdma_cm header; {@code resources} as both responder resources and initiator depth.
     */
    final CmMads.Req req(Local local, int qpn, int psn, int mtuEnum, int resources) {
        return new CmMads.Req(ThreadLocalRandom.current().nextLong() & 0x7FFFFFFF00000000L, CmConnection.newCommId(),
                ThreadLocalRandom.current().nextLong(), CmaHeader.serviceId(CmaHeader.PS_TCP, port), qpn, psn, mtuEnum, resources, resources,
                local.gid(), Gid.of(roce), 32768 + ThreadLocalRandom.current().nextInt(28000), raw.local().getAddress(), host);
    }

    /** Sends the DREQ of {@code c} unless it is released already; a closing port is not an error here. */
    final void release(CmConnection c) {
        if (c == null || c.released) return;
        try {
            c.release(waitNanos);
        } catch (IOException e) {
            // the port is closing: the peer's CM ends the connection on its own timeout
        }
    }
}
