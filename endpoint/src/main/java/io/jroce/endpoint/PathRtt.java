package io.jroce.endpoint;

import java.net.InetAddress;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The smallest round trip any congestion-controlled QP of one event loop has measured to one peer address: the
 * base of every such QP's delay target ({@link CongestionControl}). QPs to the same address cross the same path, but
 * a QP that took its first samples behind a standing queue (it joined while others filled it) never sees its own
 * minimum fall to the path's, so its target stays above the queue it keeps; sharing the minimum gives it the base
 * its neighbours measured. Event loop only.
 */
final class PathRtt {
    long minNanos = Long.MAX_VALUE;

    /** One entry per peer address, the least recently used dropped past {@link #MAX_PEERS}: a QP keeps its own. */
    static final class Table {
        static final int MAX_PEERS = 4096;
        private final Map<InetAddress, PathRtt> byPeer = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<InetAddress, PathRtt> eldest) {
                return size() > MAX_PEERS;
            }
        };

        /** The entry for {@code peer} (a new one for a QP without a destination yet). */
        PathRtt of(InetAddress peer) {
            return peer == null ? new PathRtt() : byPeer.computeIfAbsent(peer, k -> new PathRtt());
        }
    }
}
