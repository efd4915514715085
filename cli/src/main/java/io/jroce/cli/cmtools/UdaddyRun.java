package io.jroce.cli.cmtools;

import io.jroce.endpoint.Device;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.cm.CmConnParam;
import io.jroce.endpoint.cm.CmEvent;
import io.jroce.endpoint.cm.CmEventType;
import io.jroce.endpoint.cm.CmId;
import io.jroce.endpoint.cm.CmPortSpace;
import io.jroce.wire.IpText;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The phases of rdma-core's {@code udaddy} (librdmacm/examples/udaddy.c) over jroce's connection manager, both roles,
 * in rdma_cm's UDP port space. Server: listen, answer {@code -c} SIDR_REQs (each with a UD QP of its own, receives
 * posted first), receive {@code -C} messages on each, and reply as many to the sender: the address handle from the
 * first message's GRH, the QPN from its immediate data, our own Q_Key. Client: resolve {@code -c} UD QPs of the
 * server with SIDR_REQ at once (receives posted first), send {@code -C} SEND_WITH_IMMs to each (the immediate data
 * our QPN) and receive as many replies. The lines on stdout are udaddy's; what failed goes to stderr.
 */
final class UdaddyRun {
    private final Device dev;
    private final Mtu mtu;
    private final ToolOptions o;
    private final int port;
    private final InetAddress peer;
    private final PrintWriter out;
    private final PrintWriter err;
    private final int messages;
    private final Failures failures = new Failures("udaddy");
    private final List<UdConnection> conns = new ArrayList<>();
    private final WorkCompletion[] wcs = new WorkCompletion[8];

    UdaddyRun(Device dev, Mtu mtu, ToolOptions o, int port, InetAddress peer, PrintWriter out, PrintWriter err) {
        this.dev = dev;
        this.mtu = mtu;
        this.o = o;
        this.port = port;
        this.peer = peer;
        this.out = out;
        this.err = err;
        this.messages = o.messages();
        for (int i = 0; i < wcs.length; i++) wcs[i] = new WorkCompletion();
    }

    int server() throws IOException, InterruptedException {
        line("udaddy: starting server");
        try (CmRun run = new CmRun(dev, mtu)) {
            try {
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
            } finally {
                closeAll();
            }
        }
        return finish();
    }

    int client() throws IOException, InterruptedException {
        line("udaddy: starting client");
        try (CmRun run = new CmRun(dev, mtu)) {
            try {
                line("udaddy: connecting");
                for (int i = 0; i < o.connections; i++) {
                    CmId id = run.newId(CmPortSpace.UDP);
                    UdConnection c = new UdConnection(i, id, dev, messages, (int) o.size);
                    conns.add(c);
                    c.postRecvs();
                    id.connect(peer, port, CmConnParam.defaults()); // the SIDR_REQ, without private data
                }
                resolveAll(run);
                if (!failures.any() && messages > 0) {
                    line("initiating data transfers");
                    for (UdConnection c : conns) c.postSends();
                    line("receiving data transfers");
                    for (UdConnection c : conns) if (!failures.any()) fail(c, c.await(wcs, messages, messages, false, o.idle()));
                    if (!failures.any()) line("data transfers complete");
                }
            } finally {
                closeAll();
            }
        }
        return finish();
    }

    /** Server: SIDR_REQs (CONNECT_REQUEST) until {@code -c} are answered; udaddy's server counts them up at accept. */
    private void acceptAll(CmRun run) throws InterruptedException {
        long last = System.nanoTime();
        Duration wait = o.connectWait();
        while (conns.size() < o.connections) {
            CmEvent e = run.next();
            if (e == null) {
                if (wait != null && System.nanoTime() - last > wait.toNanos()) {
                    failures.add(-1, CmRun.timeoutLine(o.connections - conns.size(), o.connections, "not requested", wait));
                    return;
                }
                continue;
            }
            last = System.nanoTime();
            if (e.type() != CmEventType.CONNECT_REQUEST) continue;
            CmId id = run.track(e.id());
            UdConnection c = new UdConnection(conns.size(), id, dev, messages, (int) o.size);
            conns.add(c);
            c.postRecvs();
            id.accept(CmConnParam.defaults()); // the SIDR_REP: our QPN and Q_Key
            c.connected = true;
        }
    }

    /** Client: the SIDR_REPs (ESTABLISHED with the server's QP, or UNREACHABLE / REJECTED). */
    private void resolveAll(CmRun run) throws InterruptedException {
        int left = o.connections;
        long last = System.nanoTime();
        Duration wait = o.connectWait();
        while (left > 0) {
            CmEvent e = run.next();
            if (e == null) {
                if (wait != null && System.nanoTime() - last > wait.toNanos()) {
                    failures.add(-1, "no answer from " + IpText.of(peer) + " port " + port + ": "
                            + CmRun.timeoutLine(left, o.connections, "unanswered", wait));
                    return;
                }
                continue;
            }
            last = System.nanoTime();
            UdConnection c = of(e.id());
            if (c == null || c.settled) continue;
            switch (e.type()) {
                case ESTABLISHED -> {
                    c.sendTo(e.ud());
                    c.connected = true;
                    c.settled = true;
                    left--;
                }
                case UNREACHABLE, REJECTED, CONNECT_ERROR -> {
                    failures.add(c.index, CmRun.errorLine(e, peer, port));
                    c.settled = true;
                    left--;
                }
                default -> {
                }
            }
        }
    }

    private UdConnection of(CmId id) {
        for (UdConnection c : conns) if (c.id == id) return c;
        return null;
    }

    private void fail(UdConnection c, String why) {
        if (why != null) failures.add(c.index, why);
    }

    private void line(String s) {
        out.println(s);
        out.flush();
    }

    private void closeAll() {
        for (UdConnection c : conns) {
            try {
                c.close();
            } catch (RuntimeException ignored) {
                // closing anyway
            }
        }
    }

    /** udaddy.c's last lines; the failures first, on stderr. */
    private int finish() {
        int status = failures.any() ? 1 : 0;
        failures.print(err, o.connections);
        line("test complete");
        line("return status " + status);
        return status;
    }
}
