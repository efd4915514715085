package io.jroce.endpoint;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Netty's object recycler on the data path. Every packet passes through objects Netty recycles per thread: the
 * pooled buffer object, the allocator's thread-cache entry, the outbound buffer's entry. Netty 4.2.18's recycler
 * (io.netty.util.Recycler, LocalPool) keeps a batch of {@code io.netty.recycler.chunkSize} (default 32) objects
 * its owner thread released; past that, releases go to a chunked MPSC queue whose chunks are allocated anew as it
 * cycles. A {@code sendmmsg} of 64 or more datagrams releases that many of each at once, so at the default the
 * sender's event loop allocated about 12 bytes per packet in queue chunks (JFR, 1 MiB RDMA WRITE stream). A batch
 * of {@link #CHUNK} holds every burst a flush makes. Set when the first device opens, unless the user chose a size
 * ({@code -Dio.netty.recycler.chunkSize=...}); Netty reads it once, when its recycler class is first used, so a
 * program that used Netty's pooled buffers before opening a device keeps the default (set the property then).
 *
 * <p>The recycler pools objects only on threads that clean up Netty's fast thread-locals: Netty's own event loop
 * threads ({@code FastThreadLocalThread}), or a thread running inside
 * {@code FastThreadLocalThread.runWithFastThreadLocal}. On any other thread Netty 4.2.18 makes every pooled
 * object anew (about 150 bytes per packet); see {@link AgentMode#INVOKED}.
 */
final class RecyclerTuning {
    private static final Logger log = LoggerFactory.getLogger(RecyclerTuning.class);
    static final String CHUNK_PROPERTY = "io.netty.recycler.chunkSize";
    /** Above the largest burst of releases one flush makes (a {@code sendmmsg} takes at most 1024 datagrams). */
    static final int CHUNK = 1024;

    private RecyclerTuning() {
    }

    /** Sets the recycler's batch to {@link #CHUNK} unless the property is set; idempotent. */
    static void batchUnlessChosen() {
        if (System.getProperty(CHUNK_PROPERTY) != null) return;
        System.setProperty(CHUNK_PROPERTY, Integer.toString(CHUNK));
        log.debug("Netty recycler batch {} (set -D{} to choose another)", CHUNK, CHUNK_PROPERTY);
    }
}
