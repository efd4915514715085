package io.jroce.cli.perf;

import io.jroce.endpoint.QueuePair;

import java.io.IOException;
import java.util.List;

/**
 * perftest {@code -R}'s connection-manager steps, as {@link PerfRun} needs them: the exchange QP's connection
 * ({@code rdma_client_connect} / {@code rdma_server_connect}), then one connection per test QP to the same port
 * ({@code create_rdma_cm_connection}), and the end ({@code rdma_cm_disconnect_nodes}). The command uses the
 * connection manager (CmPerfCm); tests may stand in for it.
 */
public interface PerfCm extends AutoCloseable {
    /**
     * Connects (client) or accepts one request for (server) {@code qp}, already in INIT with its receive posted,
     * advertising {@code outReads} as responder resources and initiator depth (perftest: out_reads for READ
     * and atomic tests, else 0); returns once the connection is established.
     */
    void connectExchange(QueuePair qp, int outReads) throws IOException;

    /** The same for each test QP (in INIT), in order, on the same port. */
    void connectTests(List<QueuePair> qps, int outReads) throws IOException;

    /** The end of the run: the client disconnects every connection; the server waits a moment for that. */
    void finish();

    /** Releases the ids (a connection still up gets a DREQ). */
    @Override
    void close();
}
