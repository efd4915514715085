package io.jroce.cli.inspect;

import io.jroce.wire.IpText;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * {@code jroce inspect --flows / --graph / --flow}: the per-QP-conversation view of a capture. Called by the
 * inspect command with its parsed options; prints to its streams and returns the exit status (0 clean, 1 if a
 * packet was malformed or failed its ICRC or the file could not be read to its end, 2 on bad usage). The
 * inspect command has opened the capture once ({@link CaptureFile}) before calling, so a file that is not a
 * capture never gets here.
 */
public final class FlowInspect {
    private static final int EXIT_FAILURE = 1;
    private static final int EXIT_USAGE = 2;

    private FlowInspect() {
    }

    /**
     * {@code --qpn} and {@code --host} for the flow view: the flows with that QP number, or that address, at
     * either end (null: any). Flows keep their numbers in the whole capture, so {@code --flow N} means the
     * same flow with or without them.
     */
    record Selection(Integer qpn, InetAddress host) {
        boolean selects(Flow f) {
            return (qpn == null || f.qpn[0] == qpn || f.qpn[1] == qpn)
                    && (host == null || host.equals(f.address[0]) || host.equals(f.address[1]));
        }

        boolean isEmpty() {
            return qpn == null && host == null;
        }
    }

    /**
     * @param selection the flows to show, and to choose the one to draw from
     * @param flows     print every flow (or flow {@code flow} only)
     * @param graph     write a chart of one flow to this .png or .svg file, or null
     * @param flow      the flow to show or draw (1-based), or null: all flows, and the largest is drawn
     * @param json      the JSON writer, or null for text output
     * @param name      the command's name for error messages
     */
    static int run(Path capture, int port, Selection selection, boolean flows, Path graph, Integer flow,
                          Function<Object, String> json, PrintWriter out, PrintWriter err, String name) {
        if (graph != null && !FlowChart.supported(graph)) {
            err.println(name + ": --graph " + graph + ": the file name must end in .png or .svg");
            return EXIT_USAGE;
        }
        if (flow != null && flow < 1) {
            err.println(name + ": --flow must be 1 or more, not " + flow);
            return EXIT_USAGE;
        }
        FlowAnalyzer.Result result;
        try {
            result = new FlowAnalyzer(port).analyze(capture, graph == null ? 0 : flow != null ? flow : -1,
                    selection::selects);
        } catch (IOException e) {
            err.println(name + ": " + oneLine(e));
            return EXIT_FAILURE;
        }
        List<Flow> all = result.flows();
        if (flow != null && flow > all.size()) {
            err.println(name + ": no flow " + flow + " (the capture has " + all.size() + ")");
            return EXIT_USAGE;
        }
        if (flow != null && !selection.selects(all.get(flow - 1))) {
            err.println(name + ": flow " + flow + " does not match --qpn/--host");
            return EXIT_USAGE;
        }
        if (flows || graph == null) {
            for (Flow f : all) {
                if ((flow != null && f.number != flow) || !selection.selects(f)) {
                    continue;
                }
                if (json != null) {
                    out.println(json.apply(FlowReport.data(f)));
                } else {
                    FlowReport.text(f).forEach(out::println);
                }
            }
            printSummary(result, port, selection, json, out);
        }
        if (graph != null) {
            if (result.trace == null) {
                err.println(name + ": no RoCEv2 flow in " + capture + (selection.isEmpty() ? "" : " matching --qpn/--host")
                        + " to draw");
                return EXIT_USAGE;
            }
            try {
                FlowChart.write(graph, result.traceFlow, result.traceSide, result.trace);
            } catch (IOException | RuntimeException e) {
                err.println(name + ": " + graph + ": " + oneLine(e));
                return EXIT_FAILURE;
            }
            Flow f = result.traceFlow;
            if (json != null) {
                Map<String, Object> g = new LinkedHashMap<>();
                g.put("graph", graph.toString());
                g.put("flow", f.number);
                g.put("requester", IpText.of(f.address[result.traceSide]));
                out.println(json.apply(g));
            } else {
                out.printf(Locale.ROOT, "flow %d (requests from %s): chart written to %s%n", f.number,
                        IpText.of(f.address[result.traceSide]), graph);
            }
        }
        out.flush();
        return result.clean() ? 0 : EXIT_FAILURE;
    }

    private static void printSummary(FlowAnalyzer.Result r, int port, Selection selection,
                                     Function<Object, String> json, PrintWriter out) {
        if (json != null) {
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("flows", r.flows().size());
            if (!selection.isEmpty()) {
                s.put("flows_selected", r.flows().stream().filter(selection::selects).count());
            }
            s.put("packets", r.packets);
            s.put("unattributed", r.unattributed);
            s.put("frames", r.frames);
            s.put("port", port);
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("summary", s);
            out.println(json.apply(m));
            return;
        }
        if (!selection.isEmpty()) {
            out.printf(Locale.ROOT, "%d of these flows match --qpn/--host%n",
                    r.flows().stream().filter(selection::selects).count());
        }
        out.printf(Locale.ROOT, "%d flow%s, %d RoCEv2 packet%s (UDP port %d) in %d frame%s, %d without a BTH%n",
                r.flows().size(), r.flows().size() == 1 ? "" : "s", r.packets, r.packets == 1 ? "" : "s", port,
                r.frames, r.frames == 1 ? "" : "s", r.unattributed);
    }

    private static String oneLine(Throwable t) {
        String m = t.getMessage();
        if (m == null || m.isBlank()) {
            return t.getClass().getName();
        }
        return m.strip().replaceAll("\\s*\\R\\s*", " ");
    }
}
