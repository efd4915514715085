package io.jroce.cli.cmtools;

import io.jroce.endpoint.Device;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.cm.CmConnParam;
import io.jroce.endpoint.cm.CmEvent;
import io.jroce.endpoint.cm.CmId;
import io.jroce.endpoint.cm.CmPortSpace;
import io.jroce.wire.IpText;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * What the runs of the connection-manager test tools share: the options, the connections and what failed on them,
 * the frame of both roles (the tool's first line, a {@link CmRun} for the phases, every connection closed, then the
 * C tools' last lines) and the wait for the connections to settle. The phases themselves are the tool's.
 */
abstract class ToolRun<C extends ToolConnection> {
    final Device dev;
    final Mtu mtu;
    final ToolOptions o;
    final int port;
    final InetAddress peer;
    final PrintWriter out;
    final PrintWriter err;
    /** Messages each way per connection. */
    final int messages;
    final Failures failures;
    final List<C> conns = new ArrayList<>();
    final WorkCompletion[] wcs = new WorkCompletion[8];
    private final String name;
    private final NewConnection<C> newConnection;

    /** How a tool makes one of its connections (the connection's constructor). */
    @FunctionalInterface
    interface NewConnection<C> {
        C create(int index, CmId id, Device dev, int count, int size);
    }

    /** {@code name}: the tool's name as its lines start ("cmatose", "udaddy"). */
    ToolRun(String name, NewConnection<C> newConnection, Device dev, Mtu mtu, ToolOptions o, int port, InetAddress peer,
            PrintWriter out, PrintWriter err) {
        this.name = name;
        this.newConnection = newConnection;
        this.dev = dev;
        this.mtu = mtu;
        this.o = o;
        this.port = port;
        this.peer = peer;
        this.out = out;
        this.err = err;
        this.messages = o.messages();
        this.failures = new Failures(name);
        for (int i = 0; i < wcs.length; i++) wcs[i] = new WorkCompletion();
    }

    /** The phases of one role on the run's connection manager. */
    @FunctionalInterface
    interface Phases {
        void run(CmRun run) throws IOException, InterruptedException;
    }

    /** The server's phases. */
    abstract void serve(CmRun run) throws IOException, InterruptedException;

    /** The client's phases. */
    abstract void connect(CmRun run) throws IOException, InterruptedException;

    /** The server's run; its exit status. */
    final int server() throws IOException, InterruptedException {
        return role("server", this::serve);
    }

    /** The client's run; its exit status. */
    final int client() throws IOException, InterruptedException {
        return role("client", this::connect);
    }

    private int role(String role, Phases phases) throws IOException, InterruptedException {
        line(name + ": starting " + role);
        try (CmRun run = new CmRun(dev, mtu)) {
            try {
                phases.run(run);
            } finally {
                closeAll();
            }
        }
        return finish();
    }

    /** A new connection on {@code id}, the next index, its receives posted. */
    final C add(CmId id) {
        C c = newConnection.create(conns.size(), id, dev, messages, (int) o.size);
        conns.add(c);
        c.postRecvs();
        return c;
    }

    /** Client: {@code -c} ids in port space {@code ps}, each with its connection, connecting to the server at once. */
    final void openAll(CmRun run, CmPortSpace ps, CmConnParam param) {
        for (int i = 0; i < o.connections; i++) {
            CmId id = run.newId(ps);
            add(id);
            id.connect(peer, port, param);
        }
    }

    /** A connect phase's line when --timeout ran out: {@code left} connections still unsettled, after {@code wait}. */
    @FunctionalInterface
    interface TimedOut {
        String line(int left, Duration wait);
    }

    /**
     * Takes events until {@code o.connections} of them have settled a connection ({@code settles} true), or until
     * --timeout passes without any event (then {@code timedOut}'s line is a failure).
     */
    final void settle(CmRun run, Predicate<CmEvent> settles, TimedOut timedOut) throws InterruptedException {
        int left = o.connections;
        long last = System.nanoTime();
        Duration wait = o.connectWait();
        while (left > 0) {
            CmEvent e = run.next();
            if (e == null) {
                if (wait != null && System.nanoTime() - last > wait.toNanos()) {
                    failures.add(-1, timedOut.line(left, wait));
                    return;
                }
                continue;
            }
            last = System.nanoTime();
            if (settles.test(e)) left--;
        }
    }

    /** A client's line when {@code left} connects went unanswered for --timeout. */
    final String unanswered(int left, Duration wait) {
        return "no answer from " + IpText.of(peer) + " port " + port + ": " + CmRun.timeoutLine(left, o.connections, "unanswered", wait);
    }

    /** The connection of {@code id}; null if none. */
    final C of(CmId id) {
        for (C c : conns) if (c.id == id) return c;
        return null;
    }

    /** {@code why}, when not null, is a failure of {@code c}. */
    final void fail(C c, String why) {
        if (why != null) failures.add(c.index, why);
    }

    /** A line on stdout, at once (scripts wait for them). */
    final void line(String s) {
        out.println(s);
        out.flush();
    }

    private void closeAll() {
        for (C c : conns) {
            try {
                c.close();
            } catch (RuntimeException ignored) {
                // closing anyway
            }
        }
    }

    /** The C tools' last lines; the failures first, on stderr. */
    private int finish() {
        int status = failures.any() ? 1 : 0;
        failures.print(err, o.connections);
        line("test complete");
        line("return status " + status);
        return status;
    }
}
