package io.jroce.cli.cmtools;

import io.jroce.cli.Converters;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.cm.CmConnParam;
import io.jroce.endpoint.cm.CmEvent;
import io.jroce.endpoint.cm.CmEventType;
import io.jroce.endpoint.cm.CmId;
import io.jroce.endpoint.cm.CmPortSpace;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;

/**
 * The phases of rdma-core's {@code ucmatose} (librdmacm/examples/cmatose.c) over jroce's connection manager, both
 * roles. Server: listen, accept {@code -c} connections (receives posted first, librdmacm's default accept values),
 * then on every connection send {@code -C} messages and wait for their completions, receive as many, disconnect
 * first and wait for every DISCONNECTED. Client: open {@code -c} connections at once (receives posted first;
 * responder resources and initiator depth 1, retry count 5, RNR retry count 0 as cmatose.c asks), receive
 * {@code -C} messages on each, send as many back, then answer the server's disconnect. The lines on stdout are
 * cmatose's; what failed goes to stderr, one line per cause.
 */
final class UcmatoseRun extends ToolRun<RcConnection> {
    UcmatoseRun(Device dev, Mtu mtu, ToolOptions o, int port, InetAddress peer, PrintWriter out, PrintWriter err) {
        super("cmatose", RcConnection::new, dev, mtu, o, port, peer, out, err);
    }

    /** cmatose.c's connect parameters: responder resources and initiator depth 1, retry count 5, the rest 0. */
    static CmConnParam connParam() {
        return CmConnParam.defaults().responderResources(1).initiatorDepth(1).retryCount(5).rnrRetryCount(0);
    }

    @Override
    void serve(CmRun run) throws IOException, InterruptedException {
        CmId listen = run.newId(CmPortSpace.TCP);
        listen.bind(port);
        listen.listen(0); // as cmatose.c: the kernel's default backlog
        acceptAll(run);
        if (!failures.any() && messages > 0) {
            line("initiating data transfers");
            for (RcConnection c : conns) if (c.connected) c.postSends();
            line("completing sends");
            for (RcConnection c : conns) if (c.connected && !failures.any()) fail(c, c.awaitSends(wcs, o.idle()));
            if (!failures.any()) {
                line("receiving data transfers");
                for (RcConnection c : conns) if (c.connected && !failures.any()) fail(c, c.awaitRecvs(wcs, o.idle()));
            }
            if (!failures.any()) line("data transfers complete");
        }
        line("cmatose: disconnecting");
        for (RcConnection c : conns) {
            if (c.connected && !c.disconnected) disconnect(c);
        }
        awaitDisconnects(run, false);
        if (!failures.any()) line("disconnected");
    }

    @Override
    void connect(CmRun run) throws IOException, InterruptedException {
        line("cmatose: connecting");
        openAll(run, CmPortSpace.TCP, connParam());
        connectAll(run);
        if (!failures.any() && messages > 0) {
            line("receiving data transfers");
            for (RcConnection c : conns) if (!failures.any()) fail(c, c.awaitRecvs(wcs, o.idle()));
            if (!failures.any()) {
                line("sending replies");
                for (RcConnection c : conns) c.postSends();
                line("data transfers complete");
            }
        }
        if (failures.any()) {
            // cmatose.c would wait for the server's disconnect; a failed run ends its connections itself
            for (RcConnection c : conns) if (c.connected && !c.disconnected) disconnect(c);
        }
        awaitDisconnects(run, true);
    }

    /** Server: CONNECT_REQUESTs until {@code -c} connections are up or have failed. */
    private void acceptAll(CmRun run) throws InterruptedException {
        settle(run, e -> {
            if (e.type() != CmEventType.CONNECT_REQUEST) return settled(e);
            CmId id = run.track(e.id());
            if (conns.size() == o.connections) {
                err.println("cmatose: failing connection request");
                id.reject(null);
                return false;
            }
            add(id);
            id.accept(CmConnParam.defaults()); // rdma_accept(id, NULL)
            return false;
        }, (left, wait) -> {
            int up = (int) conns.stream().filter(c -> c.connected).count();
            return CmRun.timeoutLine(o.connections - up, o.connections, "not established", wait);
        });
    }

    /** Client: events until every connection is up or has failed. */
    private void connectAll(CmRun run) throws InterruptedException {
        settle(run, this::settled, this::unanswered);
    }

    /** An event that settles a connection's set-up (up or failed): true the first time for that connection. */
    private boolean settled(CmEvent e) {
        RcConnection c = of(e.id());
        if (c == null) return false;
        switch (e.type()) {
            case ESTABLISHED -> {
                if (c.connected) return false;
                c.connected = true;
                return true;
            }
            case DISCONNECTED -> {
                c.disconnected = true;
                disconnect(c); // answers the DREQ
                if (c.connected) return false;
                failures.add(c.index, CmRun.errorLine(e, peer, port));
                return true;
            }
            case REJECTED, UNREACHABLE, CONNECT_ERROR -> {
                failures.add(c.index, CmRun.errorLine(e, peer, port));
                return !c.connected;
            }
            default -> {
                return false; // nothing that decides the set-up (TIMEWAIT_EXIT, ...)
            }
        }
    }

    /**
     * Waits for DISCONNECTED on every connection that was up. A client answers each (rdma_disconnect sends the DREP)
     * and meanwhile takes its sends' completions: each must succeed, or be flushed by the server's disconnect (a
     * server disconnects once it has every reply, so a send whose ACK the DREQ overtook still arrived).
     */
    private void awaitDisconnects(CmRun run, boolean client) throws InterruptedException {
        long last = System.nanoTime();
        int progress = -1;
        while (true) {
            int p = 0;
            boolean done = true;
            for (RcConnection c : conns) {
                if (!c.connected) continue;
                if (client && messages > 0 && !failures.any()) fail(c, c.pollSends(wcs));
                p += (c.disconnected ? 1 : 0) + c.sendsDone + c.sendsFlushed;
                if (!c.disconnected || (client && !failures.any() && messages > 0 && !c.sendsAccounted())) done = false;
            }
            if (done) return;
            if (p != progress) {
                progress = p;
                last = System.nanoTime();
            } else if (System.nanoTime() - last > o.idle().toNanos()) {
                long waiting = conns.stream().filter(c -> c.connected && !c.disconnected).count();
                if (waiting > 0) {
                    failures.add(-1, "no DISCONNECTED on " + waiting + " connection" + (waiting == 1 ? "" : "s") + " for "
                            + Converters.seconds(o.idle()) + (client ? " (the server did not disconnect)" : " (the client did not answer the DREQ)"));
                } else {
                    failures.add(-1, "sends not completed for " + Converters.seconds(o.idle()));
                }
                return;
            }
            CmEvent e = run.next();
            if (e == null) continue;
            RcConnection c = of(e.id());
            switch (e.type()) {
                case DISCONNECTED -> {
                    if (c != null && !c.disconnected) {
                        c.disconnected = true;
                        disconnect(c);
                    }
                }
                case CONNECT_REQUEST -> {
                    err.println("cmatose: failing connection request");
                    run.track(e.id()).reject(null);
                }
                default -> {
                }
            }
        }
    }

    private static void disconnect(RcConnection c) {
        try {
            c.id.disconnect();
        } catch (IllegalStateException ignored) {
            // already released
        }
    }
}
