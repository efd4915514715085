package io.jroce.cli.cmtools;

import io.jroce.endpoint.Device;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.cm.CmConnParam;
import io.jroce.endpoint.cm.CmEventType;
import io.jroce.endpoint.cm.CmId;
import io.jroce.endpoint.cm.CmPortSpace;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;

/**
 * The phases of rdma-core's {@code udaddy} (librdmacm/examples/udaddy.c) over jroce's connection manager, both roles,
 * in rdma_cm's UDP port space. Server: listen, answer {@code -c} SIDR_REQs (each with a UD QP of its own, receives
 * posted first), receive {@code -C} messages on each, and reply as many to the sender: the address handle from the
 * first message's GRH, the QPN from its immediate data, our own Q_Key. Client: resolve {@code -c} UD QPs of the
 * server with SIDR_REQ at once (receives posted first), send {@code -C} SEND_WITH_IMMs to each (the immediate data
 * our QPN) and receive as many replies. The lines on stdout are udaddy's; what failed goes to stderr.
 */
final class UdaddyRun extends ToolRun<UdConnection> {
    UdaddyRun(Device dev, Mtu mtu, ToolOptions o, int port, InetAddress peer, PrintWriter out, PrintWriter err) {
        super("udaddy", UdConnection::new, dev, mtu, o, port, peer, out, err);
    }

    @Override
    void serve(CmRun run) throws IOException, InterruptedException {
        CmId listen = run.newId(CmPortSpace.UDP);
        listen.bind(port);
        listen.listen(0);
        acceptAll(run);
        if (!failures.any() && messages > 0) {
            line("receiving data transfers");
            for (UdConnection c : conns) if (!failures.any()) fail(c, c.await(wcs, messages, 0, true, o.idle()));
            if (!failures.any()) {
                line("sending replies");
                for (UdConnection c : conns) c.postSends();
                for (UdConnection c : conns) if (!failures.any()) fail(c, c.await(wcs, messages, messages, false, o.idle()));
            }
            if (!failures.any()) line("data transfers complete");
        }
    }

    @Override
    void connect(CmRun run) throws IOException, InterruptedException {
        line("udaddy: connecting");
        openAll(run, CmPortSpace.UDP, CmConnParam.defaults()); // the SIDR_REQs, without private data
        resolveAll(run);
        if (!failures.any() && messages > 0) {
            line("initiating data transfers");
            for (UdConnection c : conns) c.postSends();
            line("receiving data transfers");
            for (UdConnection c : conns) if (!failures.any()) fail(c, c.await(wcs, messages, messages, false, o.idle()));
            if (!failures.any()) line("data transfers complete");
        }
    }

    /** Server: SIDR_REQs (CONNECT_REQUEST) until {@code -c} are answered; udaddy's server counts them up at accept. */
    private void acceptAll(CmRun run) throws InterruptedException {
        settle(run, e -> {
            if (e.type() != CmEventType.CONNECT_REQUEST) return false;
            CmId id = run.track(e.id());
            UdConnection c = add(id);
            id.accept(CmConnParam.defaults()); // the SIDR_REP: our QPN and Q_Key
            c.connected = true;
            return true;
        }, (left, wait) -> CmRun.timeoutLine(left, o.connections, "not requested", wait));
    }

    /** Client: the SIDR_REPs (ESTABLISHED with the server's QP, or UNREACHABLE / REJECTED). */
    private void resolveAll(CmRun run) throws InterruptedException {
        settle(run, e -> {
            UdConnection c = of(e.id());
            if (c == null || c.settled) return false;
            switch (e.type()) {
                case ESTABLISHED -> {
                    c.sendTo(e.ud());
                    c.connected = true;
                }
                case UNREACHABLE, REJECTED, CONNECT_ERROR -> failures.add(c.index, CmRun.errorLine(e, peer, port));
                default -> {
                    return false;
                }
            }
            c.settled = true;
            return true;
        }, this::unanswered);
    }
}
