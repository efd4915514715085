package io.jroce.cli.conform;

import io.jroce.cli.conn.PerftestHandshake;
import io.jroce.cli.conn.PerftestHandshake.Keys;
import io.jroce.cli.conn.PerftestHandshake.Test;
import io.jroce.endpoint.Mtu;
import io.jroce.wire.IpText;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;

/**
 * A perftest server ({@code ib_write_bw}, {@code ib_read_bw}, {@code ib_send_bw}, {@code ib_atomic_bw}, without
 * {@code -R}): we play its client through the exchange ({@link PerftestHandshake}: version, sys data, MTU, keys and
 * the syncs around {@code ctx_connect}), then, instead of the test's traffic, the cases; {@link #close} runs the
 * end-of-test syncs so the server ends normally. The server's buffer grants what its test needs (perftest
 * {@code ctx_init}: REMOTE_WRITE for write, REMOTE_READ for read, REMOTE_ATOMIC for atomic; send posts receives);
 * its length is not exchanged, so {@code regionLength} (0: unknown) comes from the command line.
 */
final class PerftestLink implements PeerLink {
    private final InetAddress host;
    private final int port;
    private final int rocePort;
    private final Duration timeout;
    private final Test test;
    private final long regionLength;
    private PerftestHandshake hs;
    private Keys mine;

    PerftestLink(InetAddress host, int port, int rocePort, Duration timeout, Test test, long regionLength) {
        this.host = host;
        this.port = port;
        this.rocePort = rocePort;
        this.timeout = timeout;
        this.test = test;
        this.regionLength = regionLength;
    }

    @Override
    public Target open(Local local) throws IOException {
        close();
        hs = PerftestHandshake.connect(host, port, null, timeout);
        hs.socket().timeout(timeout);
        mine = preamble(hs, local, host);
        List<Keys> remote = hs.setUp(test, List.of(mine), r -> { });
        hs.beforeTraffic(test, mine);
        Keys k = remote.get(0);
        return new Target(new InetSocketAddress(k.gid().toInetAddress(), rocePort), k.qpn(), local.mtu(),
                new Target.Region(k.va(), k.rkey(), regionLength), null, access(test), test.isSend(), null, null);
    }

    /**
     * perftest's preamble as its client (versions, sys data, the MTU: it must be ours), then our keys: the QP under
     * test, its first PSN and GID, no buffer of ours.
     */
    static Keys preamble(PerftestHandshake hs, Local local, InetAddress host) throws IOException {
        PerftestHandshake.Preamble pre = hs.preamble(PerftestHandshake.DEFAULT_CYCLE_BUFFER, PerftestHandshake.DEFAULT_CACHE_LINE,
                Mtu.ofBytes(local.mtu()));
        if (pre.mtu().bytes() != local.mtu()) {
            throw new IOException("the perftest server at " + IpText.of(host) + " uses path MTU " + pre.mtu().bytes() + ": give conform --mtu "
                    + pre.mtu().bytes());
        }
        return new Keys(0, 16, local.qpn(), local.psn(), 0, 0, local.gid(), 0);
    }

    /** What the server's buffer grants for its test (perftest ctx_init). */
    static int access(Test test) {
        return switch (test) {
            case WRITE_BW, WRITE_LAT -> Target.Access.WRITE;
            case READ_BW, READ_LAT -> Target.Access.READ;
            case ATOMIC_BW, ATOMIC_LAT -> Target.Access.ATOMIC;
            default -> 0;
        };
    }

    @Override
    public String describe() {
        return "perftest " + test.tool() + " server at " + IpText.of(host) + " TCP " + port;
    }

    @Override
    public void close() {
        if (hs == null) return;
        try {
            hs.socket().timeout(Duration.ofSeconds(2));
            hs.finish(test, mine, null);
        } catch (IOException e) {
            // the server may have given up already; the socket closes either way
        } finally {
            hs.close();
            hs = null;
        }
    }
}
