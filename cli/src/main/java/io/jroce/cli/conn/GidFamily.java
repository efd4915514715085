package io.jroce.cli.conn;

import io.jroce.endpoint.Gid;

import java.io.IOException;

/**
 * Both ends of a RoCEv2 connection use one IP version: an IPv4-mapped GID ({@code ::ffff:a.b.c.d}) talks to
 * another, an IPv6 GID to another IPv6 GID. A device has one socket of one family; rdma_rxe and perftest refuse
 * mixed GID types too (perftest: "Found Incompatibility issue with GID types").
 */
public final class GidFamily {
    private GidFamily() {
    }

    /**
     * @param indexOption the peer tool's GID index option to suggest ({@code -g}, {@code -x}), or null for a
     *                    jroce peer
     * @throws IOException naming both GIDs when their IP versions differ
     */
    public static void requireSame(Gid mine, Gid theirs, String indexOption) throws IOException {
        if (mine.isIpv4Mapped() == theirs.isIpv4Mapped()) return;
        String want = mine.isIpv4Mapped() ? "IPv4 (::ffff:a.b.c.d)" : "IPv6";
        throw new IOException("the peer's GID " + theirs + " is " + (theirs.isIpv4Mapped() ? "IPv4" : "IPv6") + " but ours, "
                + mine + ", is " + (mine.isIpv4Mapped() ? "IPv4" : "IPv6")
                + (indexOption == null ? ": bind both nodes to addresses of the same IP version"
                        : ": run the peer with " + indexOption + " <index of its " + want + " RoCEv2 GID>"));
    }
}
