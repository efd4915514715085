package io.jroce.cli.node;

import io.jroce.wire.IpText;
import io.jroce.cli.conn.PeerInfo;
import io.jroce.cli.conn.RemoteRegion;
import io.jroce.cli.node.SessionSyntax.Statement;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.VerbsException;
import io.jroce.endpoint.fault.Direction;
import io.jroce.endpoint.fault.FaultInjector;
import io.jroce.endpoint.fault.FaultPlan;

import java.io.PrintWriter;
import java.net.InetAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Runs checked session statements against one device: the objects they create by name, and the bookkeeping
 * for counters and machine-readable result lines. Each statement runs as its {@link SessionCommand} says;
 * {@link Values} resolves its arguments, {@link Completions} keeps what the CQs returned. A failed
 * expectation or a refused verb throws {@link Failure}; {@code exit} throws {@link Exit}.
 */
final class Session {
    /** A failed expectation, comparison or verb: the session ends with status 1. */
    static final class Failure extends Exception {
        private static final long serialVersionUID = 1L;

        Failure(String message) {
            super(message);
        }

        Failure(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** {@code exit [CODE]}. */
    static final class Exit extends Exception {
        private static final long serialVersionUID = 1L;
        final int code;

        Exit(int code) {
            super("exit " + code, null, false, false);
            this.code = code;
        }
    }

    /** What the node tells the session about itself. */
    record Settings(InetAddress bind, int tcpPort, InetAddress peer, Mtu mtu, boolean results, Path baseDir) {
    }

    /** A queue pair of the session, with what its connection told about the peer. */
    static final class Qp {
        final QueuePair qp;
        final int access;
        PeerInfo peer;
        Mtu mtu;
        /** Set when the connection manager connected the QP ({@code listen cm} / {@code connect cm}). */
        io.jroce.endpoint.cm.CmId cmId;
        io.jroce.endpoint.cm.CmEventChannel cmEvents;
        /** A UD QP's peer as {@code connect cm} resolved it over SIDR: where its sends go unless they name one. */
        io.jroce.endpoint.cm.CmUdParam udPeer;
        /**
         * The receives posted while the QP was never connected (RESET or INIT): nothing can have completed them, so
         * they are exactly what a REJ to {@code connect cm} flushes, and what its retry posts again.
         */
        final List<io.jroce.endpoint.ReceiveWorkRequest> unconnectedRecvs = new ArrayList<>();

        Qp(QueuePair qp, int access) {
            this.qp = qp;
            this.access = access;
        }
    }

    // what the commands work with
    final Device device;
    final FaultInjector chaos;
    final Settings settings;
    final PrintWriter out;
    final ProtectionDomain pd;
    final Named<MemoryRegion> regions = new Named<>("memory region");
    final Named<CompletionQueue> cqs = new Named<>("completion queue");
    final Named<Qp> qps = new Named<>("queue pair");
    final Values values = new Values(this);
    final Completions completions;
    private final List<String> history = new ArrayList<>();
    private int expectations;
    private int compares;
    private int failures;
    private boolean chaosUsed;

    Session(Device device, FaultInjector chaos, Settings settings, PrintWriter out) {
        this.device = device;
        this.chaos = chaos;
        this.settings = settings;
        this.out = out;
        this.pd = device.allocPd();
        this.completions = new Completions(settings.results(), out);
    }

    List<String> history() {
        return history;
    }

    int expectationsMet() {
        return expectations;
    }

    int comparesMet() {
        return compares;
    }

    int failures() {
        return failures;
    }

    /** Counts a failure seen by the caller (interactive sessions go on after one). */
    void noteFailure() {
        failures++;
    }

    void expectationMet() {
        expectations++;
    }

    void compareMet() {
        compares++;
    }

    void run(Statement s) throws Failure, Exit, InterruptedException {
        try {
            SessionCommand command = SessionLanguage.command(s.verb());
            if (command == null) throw new Failure("unknown command " + s.verb());
            command.run(this, s);
        } catch (VerbsException | IllegalArgumentException | IllegalStateException e) {
            throw new Failure(s.verb() + ": " + oneLine(e.getMessage()), e);
        } finally {
            out.flush();
        }
    }

    // ------------------------------------------------------------------------------------------------
    // objects by name

    /** A new CQ, with its backlog. */
    void addCq(String name, CompletionQueue cq) {
        cqs.put(name, cq);
        completions.add(cq);
    }

    /** The CQ named by {@code cq=}. */
    CompletionQueue cq(Statement s) throws Failure {
        return cqs.require(values.name(s, "cq"));
    }

    /** The QP named by {@code qp=}. */
    private io.jroce.endpoint.cm.CmAgent cm;

    /** The device's connection manager on QP 1, opened by the first {@code listen cm} or {@code connect cm}. */
    io.jroce.endpoint.cm.CmAgent cm() {
        if (cm == null) {
            cm = io.jroce.cli.ExitCleanup.register(io.jroce.endpoint.cm.CmAgent.open(device, io.jroce.endpoint.cm.CmConfig.defaults().mtu(settings.mtu())));
        }
        return cm;
    }

    /**
     * Closes the connection manager if a command opened it, before the device closes: what is still connected gets
     * its DREQ and a DREQ not yet answered its DREP, as when a verbs program exits ({@link io.jroce.endpoint.cm.CmAgent#close}).
     */
    void closeCm() {
        if (cm != null) cm.close();
    }

    Qp qp(Statement s) throws Failure {
        return qps.require(values.name(s, "qp"));
    }

    /** This session's names of one kind, in the order they were made: what the prompt completes. */
    Collection<String> names(SessionCompleter.Kind kind) {
        return switch (kind) {
            case REGION -> regions.names();
            case CQ -> cqs.names();
            case QP -> qps.names();
            case REMOTE -> {
                Set<String> published = new LinkedHashSet<>();
                for (Qp q : qps.all()) {
                    if (q.peer != null) for (RemoteRegion r : q.peer.published()) published.add(r.name());
                }
                yield published;
            }
        };
    }

    /** Why a wait may have found nothing: the QPs' states and the retry counters. */
    String stalledHint() {
        List<String> states = new ArrayList<>();
        for (Map.Entry<String, Qp> e : qps.entries()) {
            QueuePair qp = e.getValue().qp;
            String reason = qp.errorReason();
            states.add(e.getKey() + " " + qp.state() + (reason == null ? "" : " (" + reason + ")"));
        }
        return states.isEmpty() ? "" : "; qp " + String.join(", ", states) + " (is the peer's session at the matching step?)";
    }

    // ------------------------------------------------------------------------------------------------
    // state and counters

    /** Prints counters: {@code nonzero} (default), {@code all}, {@code device}, {@code qp} or {@code chaos}. */
    void counters(String which) {
        boolean all = which.equals("all");
        if (all || which.equals("nonzero") || which.equals("device")) {
            out.println("counters device " + IpText.of(device.address()) + ": " + format(device.counters().asMap(), all));
        }
        if (all || which.equals("nonzero") || which.equals("qp")) {
            for (Map.Entry<String, Qp> e : qps.entries()) {
                out.printf("counters qp %s 0x%06x: %s%n", e.getKey(), e.getValue().qp.qpNum(), format(e.getValue().qp.counters().asMap(), all));
            }
        }
        if (chaos != null && (all || which.equals("chaos") || (which.equals("nonzero") && chaosActive()))) {
            out.println("counters chaos: " + format(chaos.counters(), all || which.equals("chaos")));
        }
        out.flush();
    }

    private boolean chaosActive() {
        for (Direction d : Direction.values()) {
            if (!chaos.plan(d).equals(FaultPlan.none()) || chaos.arrived(d) != chaos.passed(d)) return true;
        }
        return false;
    }

    private static String format(Map<String, Long> m, boolean zeros) {
        StringBuilder sb = new StringBuilder();
        int skipped = 0;
        for (Map.Entry<String, Long> e : m.entrySet()) {
            if (!zeros && e.getValue() == 0) {
                skipped++;
                continue;
            }
            if (sb.length() > 0) sb.append(' ');
            sb.append(e.getKey()).append('=').append(e.getValue());
        }
        if (sb.length() == 0) return "all 0";
        return skipped > 0 ? sb + " (others 0)" : sb.toString();
    }

    void stats() {
        if (qps.isEmpty()) out.println("stats: no queue pairs");
        for (Map.Entry<String, Qp> e : qps.entries()) out.println("stats " + e.getKey() + ": " + e.getValue().qp.describe());
        out.flush();
    }

    static String human(Duration d) {
        long ms = d.toMillis();
        if (ms % 1000 == 0) return ms / 1000 + " s";
        return ms + " ms";
    }

    static String oneLine(String msg) {
        return msg == null ? "" : msg.strip().replaceAll("\\s*\\R\\s*", " ");
    }

    void markChaosUsed() {
        chaosUsed = true;
    }

    /** Whether the 'chaos' command turned fault injection on at some point. */
    boolean chaosUsed() {
        return chaosUsed;
    }

    /** Whether any QP got connected to a peer. */
    boolean hadPeer() {
        for (Qp q : qps.all()) if (q.peer != null) return true;
        return false;
    }

    /**
     * Keeps the device answering until no datagram has arrived for {@code quiet} (at most {@code max}): the
     * peer may still be retransmitting a request whose ACK was lost, and that ACK must come from a live QP,
     * not from a closed port. The other side of the last-ACK problem every RC application has at exit.
     */
    void linger(Duration quiet, Duration max) throws InterruptedException {
        long start = System.nanoTime();
        long lastIn = device.counters().packetsIn;
        long quietSince = start;
        while (System.nanoTime() - start < max.toNanos()) {
            Thread.sleep(Math.max(1, Math.min(20, quiet.toMillis() / 4)));
            long in = device.counters().packetsIn;
            long now = System.nanoTime();
            if (in != lastIn) {
                lastIn = in;
                quietSince = now;
            } else if (now - quietSince >= quiet.toNanos()) {
                return;
            }
        }
    }

    /** Deregisters nothing and destroys nothing: closing the device releases everything at once. */
    void printSummary() {
        if (settings.results()) {
            out.printf("result summary expects=%d compares=%d failures=%d%n", expectations, compares, failures);
        }
    }
}
