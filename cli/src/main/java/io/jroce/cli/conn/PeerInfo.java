package io.jroce.cli.conn;

import io.jroce.endpoint.Gid;
import io.jroce.endpoint.RcConnect;
import io.jroce.wire.RoceV2;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * What one side of an RC connection tells the other out of band: enough to move a queue pair to RTR/RTS
 * and to aim RDMA operations at the peer's memory.
 *
 * @param lid      the local identifier; always 0 on RoCE (16 bits)
 * @param qpn      the queue pair number (24 bits)
 * @param psn      the first packet sequence number this side will send (24 bits); the peer uses it as rq_psn
 * @param gid      the GID; for RoCEv2 over IPv4 the IPv4-mapped address {@code ::ffff:a.b.c.d}, which is
 *                 where the peer sends its packets
 * @param mtu      the path MTU in bytes this side wants (256..4096), or 0 when the exchange does not carry it
 *                 (ibv_rc_pingpong)
 * @param outReads how many RDMA READ/atomic requests this side accepts at once (its max_dest_rd_atomic);
 *                 the peer may use it as its max_rd_atomic. 0 when the exchange does not carry it
 * @param regions  memory regions the peer may access remotely (possibly empty, never null)
 */
public record PeerInfo(int lid, int qpn, int psn, Gid gid, int mtu, int outReads, List<RemoteRegion> regions) {

    public PeerInfo {
        Objects.requireNonNull(gid, "gid");
        if ((lid & ~0xFFFF) != 0) throw new IllegalArgumentException("LID must be 16 bits: 0x" + Integer.toHexString(lid));
        if ((qpn & ~0xFFFFFF) != 0) throw new IllegalArgumentException("QPN must be 24 bits: 0x" + Integer.toHexString(qpn));
        if ((psn & ~0xFFFFFF) != 0) throw new IllegalArgumentException("PSN must be 24 bits: 0x" + Integer.toHexString(psn));
        if (mtu != 0 && mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096) {
            throw new IllegalArgumentException("MTU must be 0 (unknown) or 256, 512, 1024, 2048, 4096, not " + mtu);
        }
        if (outReads < 0) throw new IllegalArgumentException("out_reads must not be negative: " + outReads);
        regions = List.copyOf(Objects.requireNonNull(regions, "regions"));
    }

    /** LID 0, no MTU, no out_reads, no regions: what ibv_rc_pingpong exchanges. */
    public PeerInfo(int qpn, int psn, Gid gid) {
        this(0, qpn, psn, gid, 0, 0, List.of());
    }

    /**
     * The name of the pseudo-region that carries the {@code JroceExtensions} flags a jroce peer offers (in its
     * {@code va}). A region, not a new field, so that a jroce release without extensions still parses the message
     * (it sees one more region, which nothing names) and both sides fall back to plain IBA. The leading NUL keeps
     * it apart from every region a session can name.
     */
    public static final String EXTENSIONS_REGION = "\0jroce-extensions";

    /**
     * The pseudo-region that carries the size of the sender's device's socket receive buffer in bytes (in its
     * {@code va}), so that the peer keeps no more in flight towards it than it holds. As {@link #EXTENSIONS_REGION}.
     */
    public static final String RECEIVE_BUFFER_REGION = "\0jroce-receive-buffer";

    /** The peer device's receive buffer in bytes (0: not told, e.g. an older jroce release). */
    public int receiveBuffer() {
        return region(RECEIVE_BUFFER_REGION).map(r -> (int) Math.min(Integer.MAX_VALUE, Math.max(0, r.va()))).orElse(0);
    }

    /** The same information telling the peer this device's receive buffer of {@code bytes}; 0 tells nothing. */
    public PeerInfo withReceiveBuffer(int bytes) {
        List<RemoteRegion> rs = new java.util.ArrayList<>(regions.stream().filter(r -> !r.name().equals(RECEIVE_BUFFER_REGION)).toList());
        if (bytes > 0) rs.add(new RemoteRegion(RECEIVE_BUFFER_REGION, bytes, 0, 0));
        return withRegions(rs);
    }

    /** The extensions the peer offers (0: none, e.g. an older jroce release). */
    public int extensions() {
        return region(EXTENSIONS_REGION).map(r -> (int) r.va()).orElse(0);
    }

    /** The same information offering {@code flags} ({@code JroceExtensions}); 0 offers none. */
    public PeerInfo withExtensions(int flags) {
        List<RemoteRegion> rs = new java.util.ArrayList<>(regions.stream().filter(r -> !r.name().equals(EXTENSIONS_REGION)).toList());
        if (flags != 0) rs.add(new RemoteRegion(EXTENSIONS_REGION, flags, 0, 0));
        return withRegions(rs);
    }

    /** The regions without the pseudo-regions (names that start with NUL): what the application published. */
    public List<RemoteRegion> published() {
        return published(regions);
    }

    /** {@code regions} without the pseudo-regions (names that start with NUL), wherever they travelled. */
    public static List<RemoteRegion> published(List<RemoteRegion> regions) {
        return regions.stream().filter(r -> !r.name().startsWith("\0")).toList();
    }

    /** The region called {@code name}, if the peer published one. */
    public Optional<RemoteRegion> region(String name) {
        return regions.stream().filter(r -> r.name().equals(name)).findFirst();
    }

    /** The same information with other regions. */
    public PeerInfo withRegions(List<RemoteRegion> newRegions) {
        return new PeerInfo(lid, qpn, psn, gid, mtu, outReads, newRegions);
    }

    /** Where to connect an RC QP: the GID's IPv4 address, {@code udpPort}, this QPN and PSN. */
    public RcConnect.Peer rcPeer(int udpPort) {
        return new RcConnect.Peer(gid.toInetAddress(), udpPort, qpn, psn);
    }

    /** {@link #rcPeer(int)} on the RoCEv2 port 4791. */
    public RcConnect.Peer rcPeer() {
        return rcPeer(RoceV2.UDP_PORT);
    }

    /** "QPN 0x000011 PSN 0x3a5c01 GID ::ffff:192.0.2.10". */
    public String brief() {
        return String.format("QPN 0x%06x PSN 0x%06x GID %s", qpn, psn, gid);
    }
}
