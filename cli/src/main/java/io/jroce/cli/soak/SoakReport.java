package io.jroce.cli.soak;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The soak's table (a row per interval, both processes side by side) and its verdict. Message and byte
 * columns count what was verified during the interval; retransmissions ({@link SoakSample}) are each device's over the
 * interval (client/server); RSS and heap after a full collection are each process's at the row's end;
 * failures and QPs in error are totals since the start.
 *
 * <p>Memory is judged from the first row at or after two minutes (the JVMs have warmed up by then) to the last:
 * each process's RSS and heap after GC may grow by at most {@code maxGrowth} percent (the heap by at least
 * {@link #HEAP_SLACK} bytes, the granularity of a small live set). A run with no row after minute 2 is not judged
 * on memory, and says so.
 */
final class SoakReport {
    static final long MIB = 1 << 20;
    static final long HEAP_SLACK = 4 * MIB;
    static final Duration WARM_UP = Duration.ofMinutes(2);

    private final PrintWriter out;
    private final Duration interval;
    private final double maxGrowth;
    private final List<Long> times = new ArrayList<>();
    private final List<SoakSample> client = new ArrayList<>();
    private final List<SoakSample> server = new ArrayList<>();
    private SoakSample lastClient;
    private SoakSample lastServer;

    SoakReport(PrintWriter out, Duration interval, double maxGrowth, SoakSample clientStart, SoakSample serverStart) {
        this.out = out;
        this.interval = interval;
        this.maxGrowth = maxGrowth;
        this.lastClient = clientStart;
        this.lastServer = serverStart;
    }

    void header() {
        String unit = interval.equals(Duration.ofMinutes(1)) ? "minute" : "row";
        out.printf(Locale.ROOT, "%6s %9s %9s %9s %9s %9s %9s %8s %13s %15s %15s %8s %6s%n", unit, "SEND", "SEND MiB", "WRITE",
                "WRITE MiB", "READ", "READ MiB", "ATOMIC", "retx c/s", "RSS MiB c/s", "heap MiB c/s", "failures", "QPerr");
        out.flush();
    }

    /** A row: the figures of both processes at the end of interval {@code n} (1, 2, ...). */
    void row(int n, SoakSample c, SoakSample s) {
        times.add(n * interval.toMillis());
        client.add(c);
        server.add(s);
        SoakSample pc = lastClient;
        SoakSample ps = lastServer;
        long send = s.messages(SoakOp.SEND) - ps.messages(SoakOp.SEND) + c.messages(SoakOp.REPLY) - pc.messages(SoakOp.REPLY);
        long sendBytes = s.bytes(SoakOp.SEND) - ps.bytes(SoakOp.SEND) + c.bytes(SoakOp.REPLY) - pc.bytes(SoakOp.REPLY);
        out.printf(Locale.ROOT, "%6d %9d %9.1f %9d %9.1f %9d %9.1f %8d %13s %15s %15s %8d %6d%n", n, send, mib(sendBytes),
                s.messages(SoakOp.WRITE) - ps.messages(SoakOp.WRITE), mib(s.bytes(SoakOp.WRITE) - ps.bytes(SoakOp.WRITE)),
                c.messages(SoakOp.READ) - pc.messages(SoakOp.READ), mib(c.bytes(SoakOp.READ) - pc.bytes(SoakOp.READ)),
                c.messages(SoakOp.ATOMIC) - pc.messages(SoakOp.ATOMIC),
                (c.retransmits() - pc.retransmits()) + "/" + (s.retransmits() - ps.retransmits()),
                memory(c.rssBytes()) + "/" + memory(s.rssBytes()), memory(c.heapAfterGcBytes()) + "/" + memory(s.heapAfterGcBytes()),
                c.failures() + s.failures(), c.qpsInError() + s.qpsInError());
        out.flush();
        lastClient = c;
        lastServer = s;
    }

    /** The memory problems of both processes, empty when flat; {@code judged} gets whether there was anything to judge. */
    List<String> memoryProblems(StringBuilder judged) {
        List<String> problems = new ArrayList<>();
        int base = baseline();
        if (base < 0) {
            judged.append("memory not judged: no row after minute ").append(WARM_UP.toMinutes());
            return problems;
        }
        int last = times.size() - 1;
        judged.append(String.format(Locale.ROOT, "memory from %s to %s", at(base), at(last)));
        for (String side : List.of("client", "server")) {
            List<SoakSample> l = side.equals("client") ? client : server;
            growth(problems, judged, side + " RSS", l.get(base).rssBytes(), l.get(last).rssBytes(), 0);
            growth(problems, judged, side + " heap after GC", l.get(base).heapAfterGcBytes(), l.get(last).heapAfterGcBytes(), HEAP_SLACK);
        }
        return problems;
    }

    /** The first row at or after {@link #WARM_UP} with a later row to compare it with, or -1. */
    int baseline() {
        for (int i = 0; i < times.size() - 1; i++) if (times.get(i) >= WARM_UP.toMillis()) return i;
        return -1;
    }

    private void growth(List<String> problems, StringBuilder judged, String what, long from, long to, long slack) {
        if (from <= 0 || to <= 0) {
            judged.append("; ").append(what).append(" unknown");
            return;
        }
        double pct = 100.0 * (to - from) / from;
        judged.append(String.format(Locale.ROOT, "; %s %s -> %s MiB (%+.1f %%)", what, memory(from), memory(to), pct));
        if (pct > maxGrowth && to - from > slack) {
            problems.add(String.format(Locale.ROOT, "%s grew %.1f %% (%s -> %s MiB), more than %s %%", what, pct, memory(from), memory(to),
                    trim(maxGrowth)));
        }
    }

    private String at(int row) {
        long ms = times.get(row);
        return ms % 60_000 == 0 ? "minute " + ms / 60_000 : String.format(Locale.ROOT, "%.1f s", ms / 1000.0);
    }

    static double mib(long bytes) {
        return bytes / (double) MIB;
    }

    static String memory(long bytes) {
        return bytes < 0 ? "n/a" : String.format(Locale.ROOT, "%.1f", mib(bytes));
    }

    static String trim(double v) {
        return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
    }
}
