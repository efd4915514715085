package io.jroce.cli.inspect;

import io.jroce.wire.IpText;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.DatasetRenderingOrder;
import org.jfree.chart.plot.SeriesRenderingOrder;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.renderer.xy.XYStepRenderer;
import org.jfree.chart.title.TextTitle;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;
import org.jfree.svg.SVGGraphics2D;
import org.jfree.svg.SVGUtils;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Shape;
import java.awt.geom.Ellipse2D;
import java.awt.geom.Path2D;
import java.awt.geom.Rectangle2D;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Draws {@code jroce inspect --graph}: for one requester of one flow, a PSN-over-time sequence graph in the
 * manner of Wireshark's tcptrace graph (request packets as points, the acknowledged PSN as a step line,
 * retransmissions, out-of-order arrivals and NAKs marked) above a payload-throughput-over-time panel, both on
 * one time axis. Written as PNG (JFreeChart) or SVG (JFreeSVG), chosen by the file name.
 */
final class FlowChart {
    static final int WIDTH = 1200;
    static final int HEIGHT = 800;

    private FlowChart() {
    }

    /** Whether the file name asks for a format we write: .png or .svg, any case. */
    static boolean supported(Path file) {
        String n = file.getFileName() == null ? "" : file.getFileName().toString().toLowerCase(Locale.ROOT);
        return n.endsWith(".png") || n.endsWith(".svg");
    }

    static void write(Path file, Flow flow, int side, FlowTrace trace) throws IOException {
        if (System.getProperty("java.awt.headless") == null) {
            System.setProperty("java.awt.headless", "true"); // no display needed to draw into an image
        }
        JFreeChart chart = chart(flow, side, trace);
        String n = file.getFileName().toString().toLowerCase(Locale.ROOT);
        if (n.endsWith(".svg")) {
            SVGGraphics2D g2 = new SVGGraphics2D(WIDTH, HEIGHT);
            chart.draw(g2, new Rectangle2D.Double(0, 0, WIDTH, HEIGHT));
            SVGUtils.writeToSVG(file.toFile(), g2.getSVGElement());
        } else {
            ChartUtils.saveChartAsPNG(file.toFile(), chart, WIDTH, HEIGHT);
        }
    }

    static JFreeChart chart(Flow flow, int side, FlowTrace trace) {
        // ---- sequence panel: points for packets, a step line for the acknowledged PSN
        XYSeriesCollection points = new XYSeriesCollection();
        XYLineAndShapeRenderer pointRenderer = new XYLineAndShapeRenderer(false, true);
        int i = 0;
        i = addPoints(points, pointRenderer, i, "request packets", trace.data, new Color(0x1f, 0x4e, 0x9e), dot(3));
        i = addPoints(points, pointRenderer, i, "RDMA READ responses", trace.readResponses, new Color(0x17, 0xbe, 0xcf), dot(3));
        i = addPoints(points, pointRenderer, i, "retransmissions", trace.retransmissions, new Color(0xd6, 0x27, 0x28), cross(3));
        i = addPoints(points, pointRenderer, i, "out of order (gap before)", trace.outOfOrder, new Color(0xff, 0x8c, 0x00), diamond(5));
        i = addPoints(points, pointRenderer, i, "sequence/other NAKs", trace.naks, new Color(0x9b, 0x00, 0x9b), triangleDown(6));
        addPoints(points, pointRenderer, i, "RNR NAKs", trace.rnrNaks, new Color(0x00, 0x99, 0x99), square(5));

        NumberAxis psnAxis = new NumberAxis("PSN (from the first request)");
        psnAxis.setAutoRangeIncludesZero(false);
        XYPlot sequence = new XYPlot(points, null, psnAxis, pointRenderer);
        XYSeriesCollection acked = new XYSeriesCollection();
        acked.addSeries(series("acknowledged PSN", trace.acked));
        XYStepRenderer step = new XYStepRenderer();
        step.setSeriesPaint(0, new Color(0x2c, 0xa0, 0x2c));
        step.setSeriesStroke(0, new BasicStroke(1.5f));
        sequence.setDataset(1, acked);
        sequence.setRenderer(1, step);
        // packets first, marks over them, the acknowledged PSN line on top
        sequence.setSeriesRenderingOrder(SeriesRenderingOrder.FORWARD);
        sequence.setDatasetRenderingOrder(DatasetRenderingOrder.FORWARD);
        style(sequence);

        // ---- throughput panel: payload per time bin, as Mbit/s
        XYSeriesCollection rates = new XYSeriesCollection();
        XYSeries sent = new XYSeries("payload sent (Mbit/s)", false, true);
        XYSeries good = new XYSeries("new payload, goodput (Mbit/s)", false, true);
        double binSeconds = trace.binNanos / 1e9;
        for (int b = 0; b < FlowTrace.BINS; b++) {
            double t = (b + 0.5) * binSeconds;
            sent.add(t, trace.sentBytes[b] * 8 / binSeconds / 1e6);
            good.add(t, trace.newBytes[b] * 8 / binSeconds / 1e6);
        }
        rates.addSeries(sent);
        rates.addSeries(good);
        XYLineAndShapeRenderer lines = new XYLineAndShapeRenderer(true, false);
        lines.setSeriesPaint(0, new Color(0x99, 0x99, 0x99));
        lines.setSeriesPaint(1, new Color(0x1f, 0x4e, 0x9e));
        lines.setSeriesStroke(1, new BasicStroke(1.5f));
        XYPlot throughput = new XYPlot(rates, null, new NumberAxis("Mbit/s"), lines);
        style(throughput);

        CombinedDomainXYPlot combined = new CombinedDomainXYPlot(new NumberAxis("time since the flow's first packet (s)"));
        combined.setGap(12);
        combined.add(sequence, 3);
        combined.add(throughput, 1);
        String title = String.format(Locale.ROOT, "flow %d: %s qpn %s -> %s qpn %s", flow.number,
                IpText.of(flow.address[side]), qpn(flow.qpn[side]),
                IpText.of(flow.address[1 - side]), qpn(flow.qpn[1 - side]));
        JFreeChart chart = new JFreeChart(title, new Font(Font.SANS_SERIF, Font.BOLD, 16), combined, true);
        RequesterSide s = flow.sides[side];
        chart.addSubtitle(new TextTitle(String.format(Locale.ROOT,
                "%d requests, %d retransmissions, %d sequence NAKs, %d RNR NAKs, %d out of order%s",
                s.requestPackets, s.retransmissions, s.sequenceNaks, s.rnrNaks, s.outOfOrder,
                trace.data.thinned() ? " (points thinned for drawing)" : ""),
                new Font(Font.SANS_SERIF, Font.PLAIN, 12)));
        chart.setBackgroundPaint(Color.WHITE);
        return chart;
    }

    private static int addPoints(XYSeriesCollection c, XYLineAndShapeRenderer r, int index, String name,
                                 FlowTrace.Series s, Color color, Shape shape) {
        if (s.n == 0 && index > 0) {
            return index; // no empty legend entries, except for the data series
        }
        c.addSeries(series(name, s));
        r.setSeriesPaint(index, color);
        r.setSeriesShape(index, shape);
        return index + 1;
    }

    private static XYSeries series(String name, FlowTrace.Series s) {
        XYSeries x = new XYSeries(name, false, true);
        for (int i = 0; i < s.n; i++) {
            x.add(s.x[i], s.y[i], false);
        }
        return x;
    }

    private static void style(XYPlot p) {
        p.setBackgroundPaint(Color.WHITE);
        p.setDomainGridlinePaint(new Color(0xdd, 0xdd, 0xdd));
        p.setRangeGridlinePaint(new Color(0xdd, 0xdd, 0xdd));
        p.setDomainGridlinesVisible(true);
        p.setRangeGridlinesVisible(true);
    }

    private static String qpn(int q) {
        return q < 0 ? "?" : String.format(Locale.ROOT, "0x%06x", q);
    }

    private static Shape dot(double d) {
        return new Ellipse2D.Double(-d / 2, -d / 2, d, d);
    }

    private static Shape square(double d) {
        return new Rectangle2D.Double(-d / 2, -d / 2, d, d);
    }

    private static Shape diamond(double d) {
        Path2D p = new Path2D.Double();
        p.moveTo(0, -d);
        p.lineTo(d, 0);
        p.lineTo(0, d);
        p.lineTo(-d, 0);
        p.closePath();
        return p;
    }

    private static Shape triangleDown(double d) {
        Path2D p = new Path2D.Double();
        p.moveTo(-d, -d);
        p.lineTo(d, -d);
        p.lineTo(0, d);
        p.closePath();
        return p;
    }

    private static Shape cross(double d) {
        return new BasicStroke(1.5f).createStrokedShape(xPath(d));
    }

    private static Path2D xPath(double d) {
        Path2D p = new Path2D.Double();
        p.moveTo(-d, -d);
        p.lineTo(d, d);
        p.moveTo(-d, d);
        p.lineTo(d, -d);
        return p;
    }
}
