package io.jroce.cli.perf;

import io.jroce.cli.conn.PeerTimeout;
import io.jroce.cli.conn.CmAgents;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.QpAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.cm.CmAgent;
import io.jroce.endpoint.cm.CmConnParam;
import io.jroce.endpoint.cm.CmCounters;
import io.jroce.endpoint.cm.CmEvent;
import io.jroce.endpoint.cm.CmEventChannel;
import io.jroce.endpoint.cm.CmEventType;
import io.jroce.endpoint.cm.CmId;

import java.io.IOException;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * perftest -R's connection-manager steps over jroce's connection manager (perftest_communication.c
 * {@code rdma_client_connect}, {@code rdma_server_connect}, {@code create_rdma_cm_connection},
 * {@code rdma_cm_disconnect_nodes}): RC in the TCP port space, responder resources and initiator depth = out_reads
 * (READ and atomic tests) or 0, retry and RNR retry 7, no private data. The client retries a test connection
 * rejected because the server is not listening yet (REJ 8) every 100 ms, as {@code rdma_cm_client_connection}
 * does, but until --timeout rather than 10 times: the server listens again only after the sync that precedes
 * it, and a loaded machine (or a JVM warming up) takes longer than perftest's second. The server differs from
 * perftest's in one way that no client can tell apart from a fast server: perftest destroys its listener once the
 * exchange connection is up and listens again after the sync, so a client whose test REQ comes before that gets
 * REJ 8 (cm.c {@code cm_req_handler}), and perftest releases whose client does not retry then fail. This server
 * keeps one listener from the exchange connection until every test connection is ESTABLISHED, so a test REQ that
 * comes early waits as a CONNECT_REQUEST instead. It waits for every accepted connection to be ESTABLISHED, takes
 * test connections only from the exchange connection's peer, and fails when the exchange connection ends meanwhile.
 */
final class CmPerfCm implements PerfCm {
    private static final long RETRY_DELAY_MS = 100;
    /**
     * Requests the listener holds untaken: a client connects its test QPs one after another, each once the one
     * before is ESTABLISHED, so at most one waits for the server to reach its test phase.
     */
    private static final int BACKLOG = 64;
    private static final Duration SLICE = Duration.ofMillis(100);
    private static final Duration DISCONNECT_WAIT = Duration.ofSeconds(3);
    /** Events that end a connection (or its attempt). */
    private static final Set<CmEventType> ENDS = EnumSet.of(CmEventType.REJECTED, CmEventType.UNREACHABLE,
            CmEventType.CONNECT_ERROR, CmEventType.DISCONNECTED);

    private final CmAgent agent;
    private final CmEventChannel channel = new CmEventChannel();
    private final InetAddress host;
    private final int port;
    private final Duration timeout;
    /** How long a server waits for the client's exchange connection; null: until interrupted. */
    private Duration clientWait;
    private final int extensions;
    private final List<CmId> connections = new ArrayList<>();
    private final List<CmId> all = new ArrayList<>();
    private final Map<CmId, Set<CmEventType>> seen = new HashMap<>();
    private CmId exchange;
    /** The server's listener, from the exchange connection's request until the test connections are up. */
    private CmId listen;

    /** {@code host} null: the server side, listening on {@code port}. */
    CmPerfCm(Device dev, Mtu mtu, InetAddress host, int port, Duration timeout) throws IOException {
        this(dev, mtu, host, port, timeout, 0);
    }

    /**
     * With {@code extensions} ({@code JroceExtensions}) offered in each REQ (client) or allowed in each REP (server),
     * in the private data that perftest leaves empty: a jroce peer that offers or allows them too agrees on what both
     * name, any other peer on none.
     */
    CmPerfCm(Device dev, Mtu mtu, InetAddress host, int port, Duration timeout, int extensions) throws IOException {
        this.agent = CmAgents.open(dev, mtu);
        this.host = host;
        this.port = port;
        this.timeout = timeout;
        this.clientWait = timeout;
        this.extensions = extensions;
    }

    /** A server waits up to {@code wait} for its client's exchange connection (null: until interrupted, as perftest). */
    CmPerfCm waitingForClient(Duration wait) {
        this.clientWait = wait;
        return this;
    }

    @Override
    public void connectExchange(QueuePair qp, int outReads) throws IOException {
        exchange = host != null ? connect(qp, outReads, false) : accept(List.of(qp), outReads, clientWait).get(0);
    }

    @Override
    public void connectTests(List<QueuePair> qps, int outReads) throws IOException {
        if (host == null) {
            connections.addAll(accept(qps, outReads, timeout));
            return;
        }
        for (QueuePair qp : qps) connections.add(connect(qp, outReads, true));
    }

    private CmId connect(QueuePair qp, int outReads, boolean retryRejects) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            CmId id = newId();
            if (qp.state() != QpState.RESET && qp.state() != QpState.INIT) qp.modify(new QpAttr().state(QpState.RESET));
            id.useQp(qp);
            id.connect(host, port, param(outReads));
            CmEvent e = await(id, EnumSet.of(CmEventType.ESTABLISHED));
            if (e.type() == CmEventType.ESTABLISHED) return id;
            if (!retryRejects || e.type() != CmEventType.REJECTED || e.status() != 8 || System.nanoTime() > deadline) {
                throw new IOException("rdma_cm connect" + (retryRejects ? " of a test QP" : "") + " to " + host.getHostAddress() + " port " + port + ": RDMA_CM_EVENT_" + e.type()
                        + (e.status() != 0 ? ", error " + e.status() : "") + (e.type() == CmEventType.REJECTED && e.status() == 8
                        ? " (nobody listens on that port: start the server first)" : ""));
            }
            id.close();
            sleep(RETRY_DELAY_MS);
        }
    }

    /**
     * Listens on the port (the first call; later calls keep that listener), accepts one request per QP in order and
     * returns once every accepted connection is ESTABLISHED; after the test QPs' it stops listening (perftest's
     * {@code rdma_server_connect}). A request that comes after the exchange connection and before this is called
     * for the test QPs waits on the channel. For the test QPs ({@code exchange} connected) only the exchange connection's peer is taken: a request from
     * another address, or one more than the QPs, is rejected (REJ 28); and if the exchange connection ends while
     * waiting (the client gave up), so does this, rather than taking the next client's exchange request as a test
     * connection of the one that left.
     */
    private List<CmId> accept(List<QueuePair> qps, int outReads, Duration wait) throws IOException {
        List<CmId> out = new ArrayList<>();
        Set<CmId> established = new HashSet<>();
        long deadline = System.nanoTime() + (wait != null ? wait : Duration.ofDays(36_500)).toNanos(); // null: a century
        boolean tests = exchange != null;
        try {
            if (listen == null) {
                listen = newId();
                listen.bind(port);
                listen.listen(BACKLOG);
            }
            while (established.size() < qps.size()) {
                CmEvent e = next(deadline, "CONNECT_REQUEST/ESTABLISHED");
                if (e.type() == CmEventType.CONNECT_REQUEST) {
                    if (e.listenId() != listen) continue; // an earlier listener's: the agent rejected it when it closed
                    CmId child = e.id();
                    all.add(child);
                    if (out.size() == qps.size()
                            || exchange != null && !child.remoteAddress().equals(exchange.remoteAddress())) {
                        child.reject(null);
                        continue;
                    }
                    child.useQp(qps.get(out.size()));
                    child.accept(param(outReads));
                    out.add(child);
                } else if (out.contains(e.id())) {
                    if (e.type() == CmEventType.ESTABLISHED) {
                        established.add(e.id());
                    } else if (ENDS.contains(e.type())) {
                        throw new IOException("rdma_cm connection " + (out.indexOf(e.id()) + 1) + " of " + qps.size()
                                + " on port " + port + ": RDMA_CM_EVENT_" + e.type() + (e.status() != 0 ? ", error " + e.status() : ""));
                    }
                }
            }
        } finally {
            if (tests) {
                listen.close();
                listen = null;
            }
        }
        return out;
    }

    private CmConnParam param(int outReads) {
        return CmConnParam.defaults().responderResources(outReads).initiatorDepth(outReads).retryCount(7).rnrRetryCount(7)
                .extensions(extensions);
    }

    private CmId newId() {
        CmId id = CmId.create(agent, channel);
        all.add(id);
        return id;
    }

    /**
     * The next event of {@code id} of one of {@code wanted}, or the first event that ends it; every event taken is
     * remembered for {@link #finish}. Fails after the timeout, or when the exchange connection ends meanwhile.
     */
    private CmEvent await(CmId id, Set<CmEventType> wanted) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            CmEvent e = next(deadline, wanted.toString());
            if (e.id() != id) continue;
            if (wanted.contains(e.type()) || ENDS.contains(e.type())) return e;
        }
    }

    /**
     * The next event on the channel (any id), remembered for {@link #finish}. The end of the exchange connection
     * (the peer left, or its DREQ came) fails the wait: what follows would belong to nobody.
     */
    private CmEvent next(long deadline, String waitingFor) throws IOException {
        while (System.nanoTime() < deadline) {
            CmEvent e;
            try {
                e = channel.getEvent(SLICE);
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted");
            }
            if (e == null) continue;
            seen.computeIfAbsent(e.id(), k -> EnumSet.noneOf(CmEventType.class)).add(e.type());
            if (exchange != null && e.id() == exchange && ENDS.contains(e.type())) {
                throw new IOException("the rdma_cm exchange connection ended (RDMA_CM_EVENT_" + e.type() + ") while waiting for "
                        + "the test connections" + (host != null ? "" : ": the client left"));
            }
            return e;
        }
        throw new PeerTimeout("no rdma_cm " + waitingFor + " within " + timeout.toSeconds() + " s"
                + (host != null ? " from " + host.getHostAddress() + " port " + port : " on port " + port));
    }

    /** The connection manager's counters (tests). */
    CmCounters counters() {
        return agent.counters();
    }

    @Override
    public void finish() {
        long deadline = System.nanoTime() + DISCONNECT_WAIT.toNanos();
        if (host != null) {
            // rdma_cm_disconnect_nodes: the client disconnects each test connection and waits for DISCONNECTED
            for (CmId id : connections) disconnectQuietly(id);
        }
        while (System.nanoTime() < deadline && !allDisconnected()) {
            try {
                CmEvent e = channel.getEvent(SLICE);
                if (e != null) seen.computeIfAbsent(e.id(), k -> EnumSet.noneOf(CmEventType.class)).add(e.type());
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        if (host != null && exchange != null) disconnectQuietly(exchange);
    }

    private boolean allDisconnected() {
        for (CmId id : connections) {
            Set<CmEventType> s = seen.get(id);
            if (s == null || !s.contains(CmEventType.DISCONNECTED)) return false;
        }
        return true;
    }

    private static void disconnectQuietly(CmId id) {
        try {
            id.disconnect();
        } catch (IllegalStateException ignored) {
            // the peer was first
        }
    }

    private static void sleep(long ms) throws IOException {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted");
        }
    }

    @Override
    public void close() {
        for (int i = all.size() - 1; i >= 0; i--) {
            try {
                all.get(i).close();
            } catch (RuntimeException ignored) {
                // closing anyway
            }
        }
        channel.close();
        agent.close();
    }
}
