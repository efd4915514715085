package io.jroce.cli.inspect;

import io.jroce.cli.Cli;

import io.jroce.testkit.Json;
import io.jroce.testkit.TestData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Document;

import javax.imageio.ImageIO;
import javax.xml.parsers.DocumentBuilderFactory;
import java.awt.image.BufferedImage;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code jroce inspect --graph}: a PNG or SVG sequence graph of one flow. */
class InspectGraphTest {
    private static final String LOSSY = TestData.file("jroce/jroce-write-lossy.pcap").toString();

    @Test
    void pngOfALossyFlow(@TempDir Path tmp) throws Exception {
        Path png = tmp.resolve("flow.png");
        Cli.Result r = Cli.run("inspect", "--graph", png.toString(), LOSSY);
        assertEquals(0, r.exit(), r.err());
        assertEquals("flow 1 (requests from 127.0.0.2): chart written to " + png, r.out().strip());
        BufferedImage img = ImageIO.read(png.toFile());
        assertNotNull(img, "ImageIO reads the PNG back");
        assertEquals(1200, img.getWidth());
        assertEquals(800, img.getHeight());
        // the points and the marks are drawn: pixels in the request-packet blue and the retransmission red
        assertTrue(pixels(img, 0x1f4e9e) > 50, "request packets drawn");
        assertTrue(pixels(img, 0xd62728) > 50, "retransmissions drawn");
    }

    @Test
    void readResponsesAreDrawn(@TempDir Path tmp) throws Exception {
        Path png = tmp.resolve("read.png");
        Cli.Result r = Cli.run("inspect", "--graph", png.toString(), TestData.file("jroce/jroce-read-lossy.pcap").toString());
        assertEquals(0, r.exit(), r.err());
        BufferedImage img = ImageIO.read(png.toFile());
        assertTrue(pixels(img, 0x17becf) > 50, "READ responses drawn");
        Path write = tmp.resolve("write.png");
        assertEquals(0, Cli.run("inspect", "--graph", write.toString(), LOSSY).exit());
        assertEquals(0, pixels(ImageIO.read(write.toFile()), 0x17becf), "no READ responses in a write flow");
    }

    private static int pixels(BufferedImage img, int rgb) {
        int n = 0;
        for (int y = 0; y < img.getHeight(); y++) {
            for (int x = 0; x < img.getWidth(); x++) {
                if ((img.getRGB(x, y) & 0xFFFFFF) == rgb) {
                    n++;
                }
            }
        }
        return n;
    }

    @Test
    void svgIsXmlWithAnSvgRoot(@TempDir Path tmp) throws Exception {
        Path svg = tmp.resolve("flow.SVG");
        Cli.Result r = Cli.run("inspect", "--json", "--graph", svg.toString(), "--flow", "1", LOSSY);
        assertEquals(0, r.exit(), r.err());
        Map<String, Object> out = Json.object(r.out().strip());
        assertEquals(svg.toString(), out.get("graph"));
        assertEquals(BigDecimal.ONE, out.get("flow"));
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setNamespaceAware(true);
        // JFreeSVG writes the SVG 1.1 DOCTYPE: parse offline, without fetching its DTD
        f.setFeature("http://apache.org/xml/features/nonvalidating/load-external-dtd", false);
        Document doc = f.newDocumentBuilder().parse(svg.toFile());
        assertEquals("svg", doc.getDocumentElement().getLocalName());
        assertEquals("http://www.w3.org/2000/svg", doc.getDocumentElement().getNamespaceURI());
        String text = Files.readString(svg);
        assertTrue(text.contains("flow 1: 127.0.0.2 qpn 0x000011 -&gt; 127.0.0.1 qpn 0x000011")
                || text.contains("flow 1: 127.0.0.2 qpn 0x000011 -> 127.0.0.1 qpn 0x000011"), "the title is there");
    }

    @Test
    void graphAndFlowsTogether(@TempDir Path tmp) {
        Path png = tmp.resolve("g.png");
        Cli.Result r = Cli.run("inspect", "--flows", "--graph", png.toString(), TestData.file("rxe/rc_pingpong.pcap").toString());
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.outLines().get(0).startsWith("flow 1: 10.77.0.12 qpn 0x000021 <-> 10.77.0.11 qpn 0x000023"), r.out());
        assertTrue(Files.isRegularFile(png));
    }

    @Test
    void badGraphRequestsAreUsageErrors(@TempDir Path tmp) {
        Path gif = tmp.resolve("flow.gif");
        Cli.Result r = Cli.run("inspect", "--graph", gif.toString(), LOSSY);
        assertEquals(2, r.exit());
        assertEquals("jroce inspect: --graph " + gif + ": the file name must end in .png or .svg", r.err().strip());
        assertFalse(Files.exists(gif));
        Cli.Result none = Cli.run("inspect", "--graph", tmp.resolve("x.png").toString(), "--flow", "2", LOSSY);
        assertEquals(2, none.exit());
        assertEquals("jroce inspect: no flow 2 (the capture has 1)", none.err().strip());
        Cli.Result zero = Cli.run("inspect", "--graph", tmp.resolve("x.png").toString(), "--flow", "0", LOSSY);
        assertEquals(2, zero.exit());
        Cli.Result empty = Cli.run("inspect", "--graph", tmp.resolve("y.png").toString(),
                TestData.file("rxe/rc_pingpong.pcap").toString(), "--udp-port", "4792");
        assertEquals(2, empty.exit());
        assertTrue(empty.err().contains("no RoCEv2 flow"), empty.err());
    }
}
