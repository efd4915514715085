package io.jroce.cli.rping;

import io.jroce.endpoint.Device;
import io.jroce.endpoint.Mtu;
import io.jroce.cli.conn.CmAgents;
import io.jroce.endpoint.cm.CmAgent;
import io.jroce.endpoint.cm.CmEvent;
import io.jroce.endpoint.cm.CmEventChannel;
import io.jroce.endpoint.cm.CmEventType;
import io.jroce.endpoint.cm.CmId;

import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * rping's connection-manager side: one event channel, the listener or the active id, and (once the connection is
 * up) a thread that watches for DISCONNECTED, as rping's {@code cm_thread} does, printing rping's lines on stderr.
 */
final class CmSide implements AutoCloseable {
    private static final Duration SLICE = Duration.ofMillis(100);
    /** How long {@link #disconnect} waits for the DISCONNECTED event (the DREQ's DREP) before it closes anyway. */
    private static final Duration DISCONNECT_WAIT = Duration.ofSeconds(5);
    /**
     * How long {@link #close} lets released connections finish their timewait (the local ACK timeout: about 2 s
     * with rdma_rxe's values) before the agent closes.
     */
    private static final Duration RELEASE_WAIT = Duration.ofSeconds(5);

    private final CmAgent agent;
    private final CmEventChannel channel;
    private final PrintWriter out;
    private final PrintWriter err;
    private final boolean debug;
    private final List<CmId> ids = new ArrayList<>();
    /** Counted down by the watcher on DISCONNECTED. */
    private final CountDownLatch disconnected = new CountDownLatch(1);
    private volatile boolean closing;
    private Thread watcher;

    private CmSide(CmAgent agent, CmEventChannel channel, PrintWriter out, PrintWriter err, boolean debug) {
        this.out = out;
        this.agent = agent;
        this.channel = channel;
        this.err = err;
        this.debug = debug;
    }

    static CmSide open(Device dev, Mtu mtu, PrintWriter out, PrintWriter err, boolean debug) throws IOException {
        return new CmSide(CmAgents.open(dev, mtu), new CmEventChannel(), out, err, debug);
    }

    CmId newId() {
        CmId id = CmId.create(agent, channel);
        ids.add(id);
        return id;
    }

    /** rping_bind_server and the wait for CONNECT_REQUEST: the new id of the first request. */
    CmId awaitRequest(int port, Duration timeout) throws IOException, InterruptedException {
        CmId listen = newId();
        listen.bind(port);
        if (debug) out.println("rdma_bind_addr successful");
        listen.listen(3);
        if (debug) {
            out.println("rdma_listen"); // rping's debug line; scripts wait for it before starting a client
            out.flush();
        }
        long deadline = timeout == null ? Long.MAX_VALUE : System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            CmEvent e = channel.getEvent(SLICE);
            if (e == null) continue;
            log(e);
            if (e.type() == CmEventType.CONNECT_REQUEST) {
                ids.add(e.id());
                return e.id();
            }
        }
        throw new io.jroce.cli.conn.PeerTimeout("no connection request on port " + port + " within --timeout "
                + io.jroce.cli.Converters.seconds(timeout));
    }

    /**
     * Waits for {@code id}'s ESTABLISHED (then starts watching for DISCONNECTED and returns true) or for the event
     * that ends the attempt (rping's line "cma event ..., error N" on stderr; false).
     */
    boolean awaitEstablished(CmId id, Duration timeout, String role) throws InterruptedException {
        long deadline = timeout == null ? Long.MAX_VALUE : System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            CmEvent e = channel.getEvent(SLICE);
            if (e == null) continue;
            log(e);
            if (e.id() != id) continue;
            switch (e.type()) {
                case ESTABLISHED -> {
                    watch(role);
                    return true;
                }
                case REJECTED, UNREACHABLE, CONNECT_ERROR -> {
                    err.println(RpingCommand.errorLine(e));
                    err.flush();
                    return false;
                }
                case DISCONNECTED -> {
                    err.println(role + " DISCONNECT EVENT...");
                    return false;
                }
                default -> {
                }
            }
        }
        err.println("no ESTABLISHED within --timeout " + io.jroce.cli.Converters.seconds(timeout));
        return false;
    }

    /** Whether the peer (or our own {@link #disconnect}) ended the connection. */
    boolean disconnected() {
        return disconnected.getCount() == 0;
    }

    /** rdma_disconnect, then waits briefly for DISCONNECTED. */
    void disconnect(CmId id) throws InterruptedException {
        try {
            id.disconnect();
        } catch (IllegalStateException e) {
            return; // already disconnected or never connected
        }
        disconnected.await(DISCONNECT_WAIT.toNanos(), TimeUnit.NANOSECONDS);
    }

    private void watch(String role) {
        watcher = new Thread(() -> {
            try {
                while (!closing) {
                    CmEvent e = channel.getEvent(SLICE);
                    if (e == null) continue;
                    log(e);
                    if (e.type() == CmEventType.DISCONNECTED) {
                        err.println(role + " DISCONNECT EVENT...");
                        err.flush();
                        disconnected.countDown();
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "rping-cm");
        watcher.setDaemon(true);
        watcher.start();
    }

    private void log(CmEvent e) {
        if (debug) {
            err.println("cma_event type " + CmAgents.eventName(e.type()) + " " + e.id());
            err.flush();
        }
    }

    @Override
    public void close() throws InterruptedException {
        closing = true;
        if (watcher != null) watcher.join(1000);
        // the kernel's CM outlives rping: a peer's DREQ repeated in timewait still gets its DREP after rping exits
        CmAgents.close(agent, channel, ids, RELEASE_WAIT);
    }
}
