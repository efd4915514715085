package io.jroce.cli.conform;

import io.jroce.cli.conn.JroceHandshake;
import io.jroce.cli.conn.PeerInfo;
import io.jroce.cli.conn.RemoteRegion;
import io.jroce.wire.IpText;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;

/**
 * A jroce node that listens ({@code listen qp=... publish=...} in {@code jroce node}): the jroce handshake, one
 * {@link PeerInfo} each way. The peer publishes its regions by name; the tester uses {@code region} (default: the
 * first published) and, for the access-not-granted case, {@code readOnlyRegion} when named. What the regions grant
 * is not in the exchange, so every access is assumed and the answers are judged.
 */
final class JroceLink implements PeerLink {
    private final InetAddress host;
    private final int port;
    private final int rocePort;
    private final Duration timeout;
    private final String region;
    private final String readOnlyRegion;

    JroceLink(InetAddress host, int port, int rocePort, Duration timeout, String region, String readOnlyRegion) {
        this.host = host;
        this.port = port;
        this.rocePort = rocePort;
        this.timeout = timeout;
        this.region = region;
        this.readOnlyRegion = readOnlyRegion;
    }

    @Override
    public Target open(Local local) throws IOException {
        PeerInfo mine = new PeerInfo(0, local.qpn(), local.psn(), local.gid(), local.mtu(), 16, List.of());
        PeerInfo peer = JroceHandshake.connect(host, port, mine, timeout);
        if (peer.mtu() != 0 && peer.mtu() != local.mtu()) {
            throw new IOException("the jroce peer at " + IpText.of(host) + " uses path MTU " + peer.mtu() + ", we use " + local.mtu()
                    + ": give conform --mtu " + peer.mtu());
        }
        List<RemoteRegion> published = peer.published();
        RemoteRegion r = region == null ? published.stream().filter(x -> !x.name().equals(readOnlyRegion)).findFirst().orElse(null)
                : peer.region(region).orElseThrow(() -> new IOException("the jroce peer published no region called '" + region
                + "' (it published: " + names(published) + ")"));
        RemoteRegion ro = readOnlyRegion == null ? null : peer.region(readOnlyRegion).orElseThrow(() -> new IOException(
                "the jroce peer published no region called '" + readOnlyRegion + "' (it published: " + names(published) + ")"));
        return new Target(new InetSocketAddress(peer.gid().toInetAddress(), rocePort), peer.qpn(), local.mtu(),
                r == null ? null : new Target.Region(r.va(), r.rkey(), r.length()),
                ro == null ? null : new Target.Region(ro.va(), ro.rkey(), ro.length()), Target.Access.ALL, true, null, null);
    }

    private static String names(List<RemoteRegion> rs) {
        return rs.isEmpty() ? "none" : String.join(", ", rs.stream().map(RemoteRegion::name).toList());
    }

    @Override
    public String describe() {
        return "jroce node at " + IpText.of(host) + " TCP " + port;
    }

    @Override
    public void close() {
        // the jroce handshake closes its connection when it is done
    }
}
