package io.jroce.cli.inspect;

import io.jroce.wire.IpText;
import io.jroce.wire.pcap.CaptureReader;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * {@code jroce inspect --flows / --graph / --flow}: the per-QP-conversation view of a capture. Called by the
 * inspect command with its parsed options; prints to its streams and returns the exit status (0 clean, 1 if a
 * packet was malformed or failed its ICRC or the file could not be read to its end, 2 on bad usage or a file
 * that is not a capture).
 */
public final class FlowInspect {
    private static final int EXIT_FAILURE = 1;
    private static final int EXIT_USAGE = 2;

    private FlowInspect() {
    }

    /**
     * @param flows     print every flow (or flow {@code flow} only)
     * @param graph     write a chart of one flow to this .png or .svg file, or null
     * @param flow      the flow to show or draw (1-based), or null: all flows, and the largest is drawn
     * @param json      the JSON writer, or null for text output
     * @param name      the command's name for error messages
     */
    public static int run(Path capture, int port, boolean flows, Path graph, Integer flow,
                          Function<Object, String> json, PrintWriter out, PrintWriter err, String name) {
        if (graph != null && !FlowChart.supported(graph)) {
            err.println(name + ": --graph " + graph + ": the file name must end in .png or .svg");
            return EXIT_USAGE;
        }
        if (flow != null && flow < 1) {
            err.println(name + ": --flow must be 1 or more, not " + flow);
            return EXIT_USAGE;
        }
        // a file that does not open as a capture is a usage error, as for the packet listing
        try (CaptureReader probe = CaptureReader.open(capture)) {
            probe.format();
        } catch (NoSuchFileException e) {
            err.println(name + ": " + capture + ": no such file");
            return EXIT_USAGE;
        } catch (AccessDeniedException e) {
            err.println(name + ": " + capture + ": permission denied");
            return EXIT_USAGE;
        } catch (IOException e) {
            err.println(name + ": " + oneLine(e));
            return EXIT_USAGE;
        }
        FlowAnalyzer.Result result;
        try {
            result = new FlowAnalyzer(port).analyze(capture, graph == null ? 0 : flow != null ? flow : -1);
        } catch (IOException e) {
            err.println(name + ": " + oneLine(e));
            return EXIT_FAILURE;
        }
        List<Flow> all = result.flows();
        if (flow != null && flow > all.size()) {
            err.println(name + ": no flow " + flow + " (the capture has " + all.size() + ")");
            return EXIT_USAGE;
        }
        if (flows || graph == null) {
            for (Flow f : all) {
                if (flow != null && f.number != flow) {
                    continue;
                }
                if (json != null) {
                    out.println(json.apply(FlowReport.data(f)));
                } else {
                    FlowReport.text(f).forEach(out::println);
                }
            }
            printSummary(result, port, json, out);
        }
        if (graph != null) {
            if (result.trace == null) {
                err.println(name + ": no RoCEv2 flow in " + capture + " to draw");
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

    private static void printSummary(FlowAnalyzer.Result r, int port, Function<Object, String> json, PrintWriter out) {
        if (json != null) {
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("flows", r.flows().size());
            s.put("packets", r.packets);
            s.put("unattributed", r.unattributed);
            s.put("frames", r.frames);
            s.put("port", port);
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("summary", s);
            out.println(json.apply(m));
            return;
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
