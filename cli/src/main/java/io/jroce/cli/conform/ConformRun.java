package io.jroce.cli.conform;

import io.jroce.endpoint.Gid;
import io.jroce.wire.Psn;

import java.io.IOException;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Runs the cases against one peer: gets a QP through the link, runs the cases that leave the QP usable on it
 * (checking after each that it still answers at the expected PSN, {@link Probe#resync}), then each case that may
 * leave it in error on a fresh QP when reconnecting is allowed. Without a fresh QP only the first such case runs;
 * the rest cannot tell. A peer that stops answering ends the run: the remaining cases cannot tell, and the
 * message says so. Pacing: one case at a time, each waiting for its answers, so at most a few packets are in
 * flight and the rate is bounded by the peer's own answers and the per-case timeout.
 */
final class ConformRun {
    private final PeerLink link;
    private final RawPort port;
    private final Gid gid;
    private final int mtu;
    private final long timeoutNanos;
    private final long readyNanos;
    private final boolean reconnect;
    private final HookCommand hook;
    private final PrintWriter log;
    /** Where RoCE packets may go: HOST and --peer-gid, nothing the peer merely announces. */
    final java.util.Set<java.net.InetAddress> allowed = new java.util.HashSet<>();
    private int nextQpn;
    private Probe probe;
    String stopped;

    ConformRun(PeerLink link, RawPort port, Gid gid, int mtu, long timeoutNanos, long readyNanos, boolean reconnect, HookCommand hook,
               PrintWriter log) {
        this.readyNanos = readyNanos;
        this.link = link;
        this.port = port;
        this.gid = gid;
        this.mtu = mtu;
        this.timeoutNanos = timeoutNanos;
        this.reconnect = reconnect;
        this.hook = hook;
        this.log = log;
        this.nextQpn = 0xC0000 | ThreadLocalRandom.current().nextInt(0x10000);
    }

    List<Case.Result> run(List<Case> cases) throws IOException {
        List<Case.Result> out = new ArrayList<>();
        open(false);
        boolean qpMayBeInError = false;
        String errorCase = null;
        for (Case c : cases) {
            if (stopped != null) {
                out.add(new Case.Result(c, null, Case.Verdict.CANNOT_TELL, stopped));
                continue;
            }
            if (c.releases()) {
                // a release works whatever state the QP is in, and leaves no QP to probe afterwards
                out.add(c.judge(runBody(c)));
                continue;
            }
            if (c.fatal() && qpMayBeInError) {
                if (!reconnect) {
                    out.add(new Case.Result(c, null, Case.Verdict.CANNOT_TELL, "the QP may be in the error state after " + errorCase
                            + "; rerun with --reconnect against a peer that offers a fresh QP"));
                    continue;
                }
                try {
                    open(true);
                } catch (IOException e) {
                    stopped = "no fresh QP from the peer: " + e.getMessage();
                    out.add(new Case.Result(c, null, Case.Verdict.CANNOT_TELL, stopped));
                    continue;
                }
            }
            Case.Outcome o = runBody(c);
            Case.Result r = c.judge(o);
            if (c.fatal()) {
                qpMayBeInError = true;
                errorCase = c.id();
            } else if (!probe.resync()) {
                String why = "the peer stopped answering at the expected PSN after " + c.id();
                // silence from a peer that no longer answers at all tells nothing about the case
                if (o.observed() != null && o.observed().startsWith("none")) {
                    r = new Case.Result(c, o.observed(), Case.Verdict.CANNOT_TELL, why);
                }
                if (reconnect) {
                    try {
                        open(true);
                    } catch (IOException e) {
                        stopped = why + ", and gave no fresh QP: " + e.getMessage();
                    }
                } else {
                    stopped = why;
                }
            }
            out.add(r);
        }
        link.close();
        return out;
    }

    private Case.Outcome runBody(Case c) throws IOException {
        try {
            return c.body().run(probe);
        } catch (RuntimeException e) {
            // a fault of the tester, not of the peer: shown, and the run goes on
            return Case.Outcome.cannotTell("the tester failed: " + io.jroce.cli.Main.describe(e));
        }
    }

    private static String where(Target t) {
        return "UDP " + io.jroce.wire.IpText.of(t.roce().getAddress()) + " port " + t.roce().getPort();
    }

    private void open(boolean again) throws IOException {
        if (again) {
            link.close();
            if (hook != null) hook.run();
        }
        PeerLink.Local local = new PeerLink.Local(gid, nextQpn++ & Psn.MASK, ThreadLocalRandom.current().nextInt(1 << 24), mtu);
        Target t = link.open(local);
        if (t.cm() != null) {
            // through the connection manager the PSN the peer expects from us is its REP's Starting PSN (the active
            // side's sq_psn, cm.c cm_init_qp_rts_attr); our REQ's is the one it sends from
            local = new PeerLink.Local(local.gid(), local.qpn(), t.cm().peerStartingPsn(), local.mtu());
        }
        if (!allowed.contains(t.roce().getAddress())) {
            throw new IOException("the peer announced GID " + io.jroce.wire.IpText.of(t.roce().getAddress()) + ", not an address given on "
                    + "the command line: conform sends only to HOST and --peer-gid; add --peer-gid "
                    + io.jroce.wire.IpText.of(t.roce().getAddress()) + " if that is the peer's RoCE address");
        }
        probe = new Probe(port, t, local, timeoutNanos);
        // the peer may move its QP to RTR only after its side of the exchange (a jroce node does), so the first
        // packets can arrive before the QP takes them: ping until it answers at the first PSN
        // (a peer just started may also take a while for its first packets): ping until it answers, within the
        // connect timeout
        long deadline = System.nanoTime() + readyNanos;
        boolean ready = false;
        int pings = 0;
        while (!ready && (pings < 2 || System.nanoTime() < deadline)) {
            ready = probe.resync();
            pings++;
        }
        if (!ready) throw new IOException("the peer's QP 0x" + Integer.toHexString(t.qpn()) + " at " + where(t)
                + " did not answer " + pings + " zero-length requests: check that RoCE packets can reach it (--bind, --roce-port, firewall)");
        if (log != null) {
            log.printf("# %s: peer QPN 0x%06x at %s, our QPN 0x%06x, first PSN 0x%06x, MTU %d%s%n", link.describe(), t.qpn(),
                    where(t), local.qpn(), local.psn(), mtu, again ? " (fresh QP)" : "");
            log.flush();
        }
    }
}
