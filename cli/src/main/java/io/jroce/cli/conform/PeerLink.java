package io.jroce.cli.conform;

import io.jroce.endpoint.Gid;

import java.io.Closeable;
import java.io.IOException;

/**
 * How the tester gets a QP on the peer: the out-of-band exchange the peer speaks (a perftest server, an
 * ibv_rc_pingpong server, a jroce node). {@link #open} runs one exchange and returns the peer's QP; calling it
 * again gets a fresh QP when the peer accepts another client (a server restarted by a hook, a jroce node
 * listening again).
 */
interface PeerLink extends Closeable {
    /** What we announce: our GID, our QPN, the first PSN we send, our path MTU. */
    record Local(Gid gid, int qpn, int psn, int mtu) {
    }

    Target open(Local local) throws IOException;

    /** "perftest ib_write_bw server at 10.0.0.2:18515". */
    String describe();

    /** Ends the current exchange politely where the protocol has an end (perftest's closing syncs). */
    @Override
    void close();
}
