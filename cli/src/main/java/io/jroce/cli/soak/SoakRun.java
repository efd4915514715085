package io.jroce.cli.soak;

import io.jroce.cli.conn.OobListener;
import io.jroce.cli.conn.OobSocket;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.JroceExtensions;
import io.jroce.endpoint.Mtu;
import io.jroce.wire.IpText;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * One side of a soak on an open device: {@link #client} drives the run and prints the table and the verdict,
 * {@link #server} answers. Both return the exit code: 0 when nothing was lost, duplicated or corrupted, no QP
 * went to error and (client) memory stayed within its bound; 1 otherwise.
 */
final class SoakRun {
    /** Largest reply: the server's SENDs back are short, as acknowledgements of an application protocol are. */
    static final int MAX_REPLY = 4096;

    /**
     * What the command decided. {@code host} is the server (client side) or null (server side); {@code clientWait}
     * how long a server waits for its client (null: until interrupted).
     */
    record Settings(InetAddress host, int port, int qps, Duration duration, Duration interval, int maxLen, int depth, long seed,
                    int extensions, double maxGrowth, int qpTimeout, Duration timeout, Duration clientWait, Mtu mtu) {
        int maxReply() {
            return Math.min(maxLen, MAX_REPLY);
        }
    }

    private SoakRun() {
    }

    // ------------------------------------------------------------------------------------------ client

    static int client(Device dev, Settings s, PrintWriter out, PrintWriter err) throws IOException, InterruptedException {
        SoakLayout layout = new SoakLayout(s.depth(), s.maxLen(), s.maxReply());
        SoakCounters counters = new SoakCounters(err, "client");
        SoakQps q = new SoakQps(dev, s.qps(), layout, SoakClient.sendWr(s.depth()), s.depth());
        SoakClient driver = null;
        Thread thread = null;
        try (SoakLink link = new SoakLink(OobSocket.connect(s.host(), s.port(), null, s.timeout()))) {
            link.sendHello(new SoakLink.Hello(s.qps(), s.depth(), s.maxLen(), s.maxReply(), s.seed(), s.extensions(), s.mtu().bytes(),
                    s.interval().toMillis(), dev.address(), q.qpns(), q.psn));
            SoakLink.Keys k = link.readKeys();
            if (k.qpn().length != s.qps()) throw new IOException("the server set up " + k.qpn().length + " QPs, we asked for " + s.qps());
            Mtu mtu = Mtu.ofBytes(k.mtu());
            driver = new SoakClient(q, new SoakPattern(s.seed(), layout.maxLen()), counters, k.va(), k.rkey());
            driver.postReceives();
            q.connect(k.address(), k.qpn(), k.psn(), mtu, s.qpTimeout(), s.extensions());
            out.printf(Locale.ROOT, "jroce soak: client %s, server %s: %d RC QPs, %d rounds in flight per QP, messages 1 B..%s (replies "
                            + "..%s), MTU %d, jroce extensions %s, seed 0x%x; %s, a row every %s%n", IpText.of(dev.address()),
                    IpText.of(k.address()), s.qps(), s.depth(), size(s.maxLen()), size(s.maxReply()), mtu.bytes(),
                    JroceExtensions.toString(s.extensions()), s.seed(), human(s.duration()), human(s.interval()));
            out.println("jroce soak: a round on each QP: RDMA WRITE, SEND and FETCH_AND_ADD from the client, a SEND back, an RDMA READ; "
                    + "every byte checked where it lands against a pattern of seed, QP, operation and round");
            out.println("jroce soak: per row: messages and MiB verified during the row (SEND both ways), retransmissions of each "
                    + "device (Go-Back-N rewinds and ACK timeouts, tail-loss probes, selective resends; client/server), RSS and heap "
                    + "after a full GC of each process, failures and QPs in error so far");
            SoakSample c0 = SoakSample.take(dev, q.qps, counters);
            link.requestSample();
            SoakReport report = new SoakReport(out, s.interval(), s.maxGrowth(), c0, link.readSample());
            report.header();
            thread = new Thread(driver, "soak-client");
            thread.setDaemon(true);
            long start = System.nanoTime();
            thread.start();
            long rows = s.duration().toMillis() / s.interval().toMillis();
            for (int n = 1; n <= rows; n++) {
                awaitUntil(thread, start + n * s.interval().toNanos());
                link.requestSample();
                SoakSample server = link.readSample();
                report.row(n, SoakSample.take(dev, q.qps, counters), server);
            }
            awaitUntil(thread, start + s.duration().toNanos());
            driver.stop();
            thread.join(s.timeout().toMillis());
            List<String> problems = new ArrayList<>();
            if (thread.isAlive()) {
                driver.abandon();
                thread.join();
                problems.add(driver.unfinished() + " rounds still in flight " + human(s.timeout()) + " after the traffic stopped (lost)");
            }
            long elapsed = System.nanoTime() - start;
            SoakSample c = SoakSample.take(dev, q.qps, counters);
            long[] rounds = driver.completed();
            link.sendStop(rounds);
            SoakLink.Final f = link.readFinal();
            SoakSample sv = f.sample();
            if (c.failures() + sv.failures() > 0) problems.add((c.failures() + sv.failures()) + " verification failures");
            if (c.errorCompletions() + sv.errorCompletions() > 0 || c.qpsInError() + sv.qpsInError() > 0) {
                problems.add((c.qpsInError() + sv.qpsInError()) + " QPs in error (" + (c.errorCompletions() + sv.errorCompletions())
                        + " completions with an error)");
            }
            for (String p : f.problems()) problems.add("server: " + p);
            long total = 0;
            for (long r : rounds) total += r;
            if (total == 0) problems.add("no round completed");
            StringBuilder memory = new StringBuilder();
            problems.addAll(report.memoryProblems(memory));
            out.printf(Locale.ROOT, "jroce soak: %s after %.1f s: %d rounds on %d QPs; SEND %d (%.1f MiB), WRITE %d (%.1f MiB), READ %d "
                            + "(%.1f MiB), ATOMIC %d; retransmissions %d/%d; failures %d; QPs in error %d; %s%n",
                    problems.isEmpty() ? "PASS" : "FAIL", elapsed / 1e9, total, s.qps(),
                    sv.messages(SoakOp.SEND) + c.messages(SoakOp.REPLY), SoakReport.mib(sv.bytes(SoakOp.SEND) + c.bytes(SoakOp.REPLY)),
                    sv.messages(SoakOp.WRITE), SoakReport.mib(sv.bytes(SoakOp.WRITE)), c.messages(SoakOp.READ),
                    SoakReport.mib(c.bytes(SoakOp.READ)), c.messages(SoakOp.ATOMIC), c.retransmits(), sv.retransmits(),
                    c.failures() + sv.failures(), c.qpsInError() + sv.qpsInError(), memory);
            for (String p : problems) out.println("jroce soak: problem: " + p);
            out.flush();
            return problems.isEmpty() ? 0 : 1;
        } finally {
            if (driver != null) driver.abandon();
            if (thread != null) thread.join(5000);
            // the QPs stay until the device closes, so that --counters still reports them
        }
    }

    /** Waits until {@code deadline} (System.nanoTime), or until the driver ends, which it does only when stopped. */
    private static void awaitUntil(Thread driver, long deadline) throws InterruptedException {
        long left;
        while ((left = deadline - System.nanoTime()) > 0 && driver.isAlive()) {
            driver.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
        }
    }

    // ------------------------------------------------------------------------------------------ server

    static int server(Device dev, InetAddress local, Settings s, PrintWriter out, PrintWriter err) throws IOException, InterruptedException {
        OobListener.Accepted<byte[]> a = OobListener.acceptWaiting(local, s.port(), s.clientWait(), s.timeout(), "jroce soak exchange",
                SoakLink::greeting);
        SoakServer driver = null;
        Thread thread = null;
        SoakQps q = null;
        try (SoakLink link = new SoakLink(a.socket())) {
            SoakLink.Hello h = link.readHello(a.greeting());
            String bad = SoakCommand.checkShape(h.qps(), h.depth(), h.maxLen());
            if (bad != null || h.maxReply() < 8 || h.maxReply() > h.maxLen() || h.maxReply() % 8 != 0) {
                throw new IOException("the soak client asked for an impossible run: " + (bad != null ? bad : "replies up to " + h.maxReply()));
            }
            SoakLayout layout = new SoakLayout(h.depth(), h.maxLen(), h.maxReply());
            SoakCounters counters = new SoakCounters(err, "server");
            q = new SoakQps(dev, h.qps(), layout, SoakServer.sendWr(h.depth()), h.depth());
            driver = new SoakServer(q, new SoakPattern(h.seed(), layout.maxLen()), counters);
            driver.postReceives();
            Mtu mtu = Mtu.ofBytes(Math.min(h.mtu(), s.mtu().bytes()));
            q.connect(h.address(), h.qpn(), h.psn(), mtu, s.qpTimeout(), h.extensions());
            long[] va = new long[h.qps()];
            int[] rkey = new int[h.qps()];
            for (int i = 0; i < h.qps(); i++) {
                va[i] = q.mrs.get(i).address();
                rkey[i] = q.mrs.get(i).rkey();
            }
            link.sendKeys(new SoakLink.Keys(dev.address(), mtu.bytes(), q.qpns(), q.psn, va, rkey));
            out.printf(Locale.ROOT, "jroce soak: server %s, client %s: %d RC QPs, MTU %d, seed 0x%x%n", IpText.of(dev.address()),
                    IpText.of(h.address()), h.qps(), mtu.bytes(), h.seed());
            out.flush();
            thread = new Thread(driver, "soak-server");
            thread.setDaemon(true);
            thread.start();
            link.socket().timeout(Duration.ofMillis(2 * Math.max(h.intervalMillis(), 1)).plus(s.timeout()));
            List<long[]> stop = new ArrayList<>();
            while (link.nextRequest(stop) == SoakLink.SAMPLE_REQUEST) link.sendSample(SoakSample.take(dev, q.qps, counters));
            driver.stop();
            thread.join(s.timeout().toMillis());
            List<String> problems = new ArrayList<>();
            if (thread.isAlive()) {
                driver.abandon();
                thread.join();
            }
            problems.addAll(driver.audit(stop.get(0)));
            SoakSample sample = SoakSample.take(dev, q.qps, counters);
            link.sendFinal(new SoakLink.Final(sample, problems));
            if (sample.failures() > 0) problems.add(sample.failures() + " verification failures");
            if (sample.errorCompletions() > 0) problems.add(sample.errorCompletions() + " completions with an error");
            out.printf(Locale.ROOT, "jroce soak: server %s: SEND %d, WRITE %d verified; retransmissions %d; failures %d%n",
                    problems.isEmpty() ? "PASS" : "FAIL", sample.messages(SoakOp.SEND), sample.messages(SoakOp.WRITE), sample.retransmits(),
                    sample.failures());
            for (String p : problems) out.println("jroce soak: server problem: " + p);
            out.flush();
            return problems.isEmpty() ? 0 : 1;
        } finally {
            if (driver != null) driver.abandon();
            if (thread != null) thread.join(5000);
        }
    }

    static String size(long bytes) {
        if (bytes >= (1 << 20) && bytes % (1 << 20) == 0) return bytes / (1 << 20) + " MiB";
        if (bytes >= 1024 && bytes % 1024 == 0) return bytes / 1024 + " KiB";
        return bytes + " B";
    }

    static String human(Duration d) {
        long ms = d.toMillis();
        if (ms % 60_000 == 0) return ms / 60_000 + " min";
        if (ms % 1000 == 0) return ms / 1000 + " s";
        return ms + " ms";
    }
}
