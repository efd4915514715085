package io.jroce.cli.inspect;

import io.jroce.cli.Cli;
import io.jroce.cli.SampleCapture;
import io.jroce.testkit.Json;
import io.jroce.testkit.TestData;
import io.jroce.wire.Icrc;
import io.jroce.wire.pcap.PcapFrame;
import io.jroce.wire.pcap.PcapReader;
import io.jroce.wire.pcap.PcapWriter;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class InspectCommandTest {

    private static final Set<Integer> BAD_ICRC_FRAMES = Set.of(36, 37, 38, 39);

    // ------------------------------------------------------------------------------------------ golden file

    @Test
    void goldenText() {
        Cli.Result r = Cli.run("inspect", TestData.goldenPcap().toString());
        assertEquals(1, r.exit(), "the golden file contains deliberately bad ICRCs");
        assertEquals("", r.err());
        List<String> lines = r.outLines();
        for (int n = 1; n <= 40; n++) {
            String line = lines.get(n - 1);
            assertTrue(line.startsWith(String.format("%5d  ", n)), line);
            assertTrue(line.endsWith(BAD_ICRC_FRAMES.contains(n) ? " icrc=bad" : " icrc=ok"), line);
        }
        assertTrue(lines.get(0).contains("192.0.2.10:57236 > 192.0.2.11:4791"), lines.get(0));
        assertTrue(lines.get(0).contains(" RC_SEND_ONLY "));
        assertTrue(lines.get(0).contains("dqpn=0x0000d2 psn=0x000100 ackreq=1 se=0 pad=0 pkey=0xffff"), lines.get(0));
        assertTrue(lines.get(15).contains("reth[va=0x00007f3a5c001800 rkey=0x0001a2b3 dma_len=600]"), lines.get(15));
        assertTrue(lines.get(22).contains("aeth[NAK PSN_SEQUENCE_ERROR value=0 msn=6]"), lines.get(22));
        assertTrue(lines.get(23).contains("aeth[RNR_NAK value=12 rnr_timer_ms=0.64 msn=6]"), lines.get(23));
        assertTrue(lines.get(39).contains("10.0.17.1:0 > 10.0.18.1:4791"), lines.get(39));
        assertTrue(lines.get(39).contains(" CNP "));
        assertTrue(lines.get(39).contains(" becn "));
        assertEquals("40 RoCEv2 packets (UDP port 4791) in 40 frames: 0 malformed, 4 bad ICRC", lines.get(40));
        assertTrue(lines.stream().anyMatch(l -> l.matches("\\s+RC_SEND_ONLY\\s+9")), r.out());
        assertTrue(lines.stream().anyMatch(l -> l.matches("\\s+CNP\\s+2")), r.out());
    }

    @Test
    void goldenJsonMatchesTheVectorDescriptions() throws Exception {
        Cli.Result r = Cli.run("inspect", "--json", TestData.goldenPcap().toString());
        assertEquals(1, r.exit());
        assertEquals("", r.err());
        List<String> lines = r.outLines();
        assertEquals(41, lines.size());

        @SuppressWarnings("unchecked")
        List<Map<String, Object>> vectors = (List<Map<String, Object>>) Json.object(
                Files.readString(TestData.goldenJson())).get("vectors");
        assertEquals(40, vectors.size());

        for (int n = 1; n <= 40; n++) {
            String line = lines.get(n - 1);
            assertTrue(line.startsWith("{") && line.endsWith("}"), line);
            Map<String, Object> p = Json.object(line);
            Map<String, Object> v = vectors.get(n - 1);
            @SuppressWarnings("unchecked")
            Map<String, Object> bth = (Map<String, Object>) v.get("bth");
            @SuppressWarnings("unchecked")
            Map<String, Object> ipv4 = (Map<String, Object>) v.get("ipv4");
            @SuppressWarnings("unchecked")
            Map<String, Object> udp = (Map<String, Object>) v.get("udp");
            @SuppressWarnings("unchecked")
            Map<String, Object> ext = (Map<String, Object>) v.get("ext");
            String where = "frame " + n + ": " + line;

            assertEquals(n, num(p.get("frame")).intValue(), where);
            assertEquals(ipv4.get("src"), p.get("src"), where);
            assertEquals(ipv4.get("dst"), p.get("dst"), where);
            assertEquals(num(udp.get("src_port")), num(p.get("src_port")), where);
            assertEquals(4791, num(p.get("dst_port")).intValue(), where);
            assertEquals(v.get("opcode_name"), p.get("opcode"), where);
            assertEquals(num(bth.get("dest_qp")), num(p.get("dqpn")), where);
            assertEquals(num(bth.get("psn")), num(p.get("psn")), where);
            assertEquals(num(bth.get("pad")), num(p.get("pad")), where);
            assertEquals(num(bth.get("pkey")), num(p.get("pkey")), where);
            assertEquals(num(bth.get("ackreq")).intValue() == 1, p.get("ackreq"), where);
            assertEquals(num(bth.get("se")).intValue() == 1, p.get("se"), where);
            assertEquals(num(bth.get("becn")).intValue() == 1, p.get("becn"), where);
            assertEquals(num(bth.get("fecn")).intValue() == 1, p.get("fecn"), where);
            if (!"CNP".equals(v.get("opcode_name"))) {
                assertEquals(num(v.get("payload_len")), num(p.get("payload_len")), where);
            }
            assertEquals(BAD_ICRC_FRAMES.contains(n) ? "bad" : "ok", p.get("icrc"), where);
            assertFalse(p.containsKey("problem"), where);

            if (ext.containsKey("reth_va")) {
                Map<String, Object> reth = sub(p, "reth");
                assertEquals(num(ext.get("reth_va")), num(reth.get("va")), where);
                assertEquals(num(ext.get("reth_rkey")), num(reth.get("rkey")), where);
                assertEquals(num(ext.get("reth_len")), num(reth.get("dma_len")), where);
            } else {
                assertFalse(p.containsKey("reth"), where);
            }
            if (ext.containsKey("aeth_syndrome")) {
                Map<String, Object> aeth = sub(p, "aeth");
                int syndrome = num(ext.get("aeth_syndrome")).intValue();
                assertEquals(new String[] {"ACK", "RNR_NAK", "RESERVED", "NAK"}[syndrome >> 5 & 3], aeth.get("kind"), where);
                assertEquals(syndrome & 0x1F, num(aeth.get("value")).intValue(), where);
                assertEquals(num(ext.get("aeth_msn")), num(aeth.get("msn")), where);
            } else {
                assertFalse(p.containsKey("aeth"), where);
            }
            if (ext.containsKey("atomic_va")) {
                Map<String, Object> a = sub(p, "atomic_eth");
                assertEquals(num(ext.get("atomic_va")), num(a.get("va")), where);
                assertEquals(num(ext.get("atomic_rkey")), num(a.get("rkey")), where);
                assertEquals(num(ext.get("swap_add")), num(a.get("swap_add")), where);
                assertEquals(num(ext.get("compare")), num(a.get("compare")), where);
            }
            if (ext.containsKey("atomic_orig")) {
                assertEquals(num(ext.get("atomic_orig")), num(sub(p, "atomic_ack_eth").get("orig")), where);
            }
            if (ext.containsKey("imm")) {
                assertEquals(num(ext.get("imm")), num(p.get("imm")), where);
            }
            if (ext.containsKey("ieth_rkey")) {
                assertEquals(num(ext.get("ieth_rkey")), num(p.get("ieth")), where);
            }
            if (ext.containsKey("deth_qkey")) {
                Map<String, Object> deth = sub(p, "deth");
                assertEquals(num(ext.get("deth_qkey")), num(deth.get("qkey")), where);
                assertEquals(num(ext.get("deth_src_qp")), num(deth.get("src_qp")), where);
            }
        }

        // frame 16 exactly, as a reader of the brief would check it
        Map<String, Object> f16 = Json.object(lines.get(15));
        assertEquals("RC_RDMA_READ_REQUEST", f16.get("opcode"));
        assertEquals(Map.of("va", new BigDecimal(0x7f3a5c001800L), "rkey", new BigDecimal(0x1a2b3), "dma_len", new BigDecimal(600)),
                sub(f16, "reth"));
        // NAK / RNR NAK details
        Map<String, Object> nak = sub(Json.object(lines.get(22)), "aeth");
        assertEquals("PSN_SEQUENCE_ERROR", nak.get("nak"));
        Map<String, Object> rnr = sub(Json.object(lines.get(23)), "aeth");
        assertEquals(new BigDecimal("0.64"), rnr.get("rnr_timer_ms"));
        // 64-bit values beyond Long.MAX_VALUE would still be unsigned decimals
        assertEquals(new BigDecimal("2459565876494606882"), num(sub(Json.object(lines.get(29)), "atomic_ack_eth").get("orig")));

        Map<String, Object> summary = sub(Json.object(lines.get(40)), "summary");
        assertEquals(40, num(summary.get("packets")).intValue());
        assertEquals(0, num(summary.get("malformed")).intValue());
        assertEquals(4, num(summary.get("bad_icrc")).intValue());
        Map<String, Object> by = sub(summary, "by_opcode");
        assertEquals(9, num(by.get("RC_SEND_ONLY")).intValue());
        assertEquals(8, num(by.get("RC_ACKNOWLEDGE")).intValue());
        assertEquals(2, num(by.get("CNP")).intValue());
        assertEquals(40, by.values().stream().mapToInt(o -> num(o).intValue()).sum());
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> sub(Map<String, Object> m, String key) {
        Object o = m.get(key);
        assertTrue(o instanceof Map, key + " missing in " + m);
        return (Map<String, Object>) o;
    }

    /** JSON number, or a "0x..." string as in rocev2-golden.json. */
    private static BigDecimal num(Object o) {
        if (o instanceof BigDecimal d) {
            return d;
        }
        if (o instanceof String s && s.startsWith("0x")) {
            return new BigDecimal(new BigInteger(s.substring(2), 16));
        }
        throw new AssertionError("not a number: " + o);
    }

    // ------------------------------------------------------------------------------------------ other captures

    @Test
    void sampleCaptureIsClean() {
        Cli.Result r = Cli.run("inspect", SampleCapture.committedFile().toString());
        assertEquals(0, r.exit(), r.out() + r.err());
        assertEquals("", r.err());
        assertTrue(r.out().contains("10 RoCEv2 packets (UDP port 4791) in 10 frames: 0 malformed, 0 bad ICRC"), r.out());
        for (String op : new String[] {"RC_SEND_ONLY", "RC_RDMA_WRITE_FIRST", "RC_RDMA_WRITE_MIDDLE", "RC_RDMA_WRITE_LAST",
            "RC_RDMA_READ_REQUEST", "RC_RDMA_READ_RESPONSE_ONLY", "RC_FETCH_ADD", "RC_ATOMIC_ACKNOWLEDGE", "RC_ACKNOWLEDGE"}) {
            assertTrue(r.out().contains(" " + op + " "), op);
        }
        Cli.Result j = Cli.run("inspect", "--json", SampleCapture.committedFile().toString());
        assertEquals(0, j.exit());
        j.outLines().forEach(Json::parse);
    }

    @Test
    void rxeCapturesAreClean() throws Exception {
        List<Path> files;
        try (Stream<Path> s = Files.list(TestData.file("rxe"))) {
            files = s.filter(p -> p.toString().endsWith(".pcap")).sorted().toList();
        }
        assertFalse(files.isEmpty());
        for (Path f : files) {
            Cli.Result r = Cli.run("inspect", "--json", f.toString());
            assertEquals(0, r.exit(), f + ": " + r.err());
            Map<String, Object> summary = sub(Json.object(r.outLines().get(r.outLines().size() - 1)), "summary");
            assertEquals(20, num(summary.get("packets")).intValue(), f.toString());
            assertEquals(0, num(summary.get("bad_icrc")).intValue(), f.toString());
        }
    }

    // ------------------------------------------------------------------------------------------ port filter

    /** Golden frame 1 re-sent to {@code dport}, with its ICRC recomputed for that port. */
    private static ByteBuf sendOnlyPayload(int dport) throws Exception {
        PcapFrame f;
        try (PcapReader r = new PcapReader(TestData.goldenPcap())) {
            f = r.next();
        }
        ByteBuf p = Unpooled.wrappedBuffer(Arrays.copyOfRange(f.data(), f.udpPayloadOffset(),
                f.udpPayloadOffset() + f.udpPayloadLength()));
        new Icrc().writeIpv4(0xC000020A, 0xC000020B, 7, Icrc.IPV4_DF, 50000, dport, p, 0, p.readableBytes());
        return p;
    }

    @Test
    void portOptionSelectsTheTraffic(@TempDir Path tmp) throws Exception {
        Path file = tmp.resolve("ports.pcap");
        try (PcapWriter w = new PcapWriter(file)) {
            ByteBuf a = sendOnlyPayload(4791);
            ByteBuf b = sendOnlyPayload(7000);
            w.writeUdpIpv4(1_000, 0xC000020A, 50000, 0xC000020B, 4791, 7, Icrc.IPV4_DF, a, 0, a.readableBytes());
            w.writeUdpIpv4(2_000, 0xC000020A, 50000, 0xC000020B, 7000, 7, Icrc.IPV4_DF, b, 0, b.readableBytes());
            w.writeUdpIpv4(3_000, 0xC000020A, 50000, 0xC000020B, 7000, 7, Icrc.IPV4_DF, b, 0, b.readableBytes());
        }
        Cli.Result def = Cli.run("inspect", "--json", file.toString());
        assertEquals(0, def.exit());
        assertEquals(2, def.outLines().size());
        assertEquals(1, num(Json.object(def.outLines().get(0)).get("frame")).intValue());

        Cli.Result other = Cli.run("inspect", "--json", "--udp-port", "7000", file.toString());
        assertEquals(0, other.exit(), other.out());
        assertEquals(3, other.outLines().size());
        Map<String, Object> p = Json.object(other.outLines().get(0));
        assertEquals(2, num(p.get("frame")).intValue());
        assertEquals(7000, num(p.get("dst_port")).intValue());
        assertEquals("ok", p.get("icrc"));
        Map<String, Object> s = sub(Json.object(other.outLines().get(2)), "summary");
        assertEquals(2, num(s.get("packets")).intValue());
        assertEquals(3, num(s.get("frames")).intValue());

        Cli.Result none = Cli.run("inspect", "--udp-port", "9", file.toString());
        assertEquals(0, none.exit());
        assertEquals("0 RoCEv2 packets (UDP port 9) in 3 frames: 0 malformed, 0 bad ICRC", none.outLines().get(0));
    }

    // ------------------------------------------------------------------------------------------ malformed input

    @Test
    void malformedAndTruncatedPacketsAreReported(@TempDir Path tmp) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        Icrc icrc = new Icrc();
        try (PcapWriter w = new PcapWriter(bytes)) {
            // 1: reserved opcode 0x15 with a correct ICRC
            ByteBuf unknown = sendOnlyPayload(4791);
            unknown.setByte(0, 0x15);
            icrc.writeIpv4(0xC000020A, 0xC000020B, 7, Icrc.IPV4_DF, 50000, 4791, unknown, 0, unknown.readableBytes());
            w.writeUdpIpv4(1_000, 0xC000020A, 50000, 0xC000020B, 4791, 7, Icrc.IPV4_DF, unknown, 0, unknown.readableBytes());
            // 2: 8 bytes: shorter than a BTH
            ByteBuf tiny = Unpooled.wrappedBuffer(new byte[] {4, 0, -1, -1, 0, 0, 0, 1});
            w.writeUdpIpv4(2_000, 0xC000020A, 50000, 0xC000020B, 4791, 7, Icrc.IPV4_DF, tiny, 0, 8);
            // 3: the good packet, to be cut by the "snap length" below
            ByteBuf good = sendOnlyPayload(4791);
            w.writeUdpIpv4(3_000, 0xC000020A, 50000, 0xC000020B, 4791, 7, Icrc.IPV4_DF, good, 0, good.readableBytes());
        }
        // cut frame 3 to 50 captured bytes (incl_len 50, orig_len unchanged)
        byte[] file = bytes.toByteArray();
        int rec3 = 24 + 16 + (14 + 28 + 32) + 16 + (14 + 28 + 8);
        ByteBuffer hdr = ByteBuffer.wrap(file, rec3, 16).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(74, hdr.getInt(rec3 + 12));
        hdr.putInt(rec3 + 8, 50);
        Path p = tmp.resolve("bad.pcap");
        Files.write(p, Arrays.copyOf(file, rec3 + 16 + 50));

        Cli.Result r = Cli.run("inspect", "--json", p.toString());
        assertEquals(1, r.exit(), r.out());
        List<String> lines = r.outLines();
        assertEquals(4, lines.size(), r.out());
        Map<String, Object> u = Json.object(lines.get(0));
        assertEquals("UNKNOWN_0x15", u.get("opcode"));
        assertEquals("reserved or unsupported BTH opcode", u.get("problem"));
        assertEquals("ok", u.get("icrc"));
        assertEquals(new BigDecimal(0xd2), num(u.get("dqpn")), "raw BTH fields are still shown");
        Map<String, Object> t = Json.object(lines.get(1));
        assertTrue(((String) t.get("problem")).contains("shorter"), t.toString());
        assertNull(t.get("dqpn"));
        Map<String, Object> c = Json.object(lines.get(2));
        assertEquals("RC_SEND_ONLY", c.get("opcode"));
        assertEquals("unchecked", c.get("icrc"));
        assertTrue(((String) c.get("problem")).startsWith("truncated capture (50 of 74 bytes)"), c.toString());
        Map<String, Object> s = sub(Json.object(lines.get(3)), "summary");
        assertEquals(3, num(s.get("packets")).intValue());
        assertEquals(3, num(s.get("malformed")).intValue());
        assertEquals(1, num(s.get("bad_icrc")).intValue(), "the 8-byte datagram cannot carry a valid ICRC");
        assertEquals(1, num(sub(s, "by_opcode").get("UNKNOWN_0x15")).intValue());

        Cli.Result text = Cli.run("inspect", p.toString());
        assertEquals(1, text.exit());
        assertTrue(text.outLines().get(0).contains("UNKNOWN_0x15"), text.out());
        assertTrue(text.outLines().get(0).contains("MALFORMED: reserved or unsupported BTH opcode;"), text.out());
        assertTrue(text.outLines().get(2).endsWith("icrc=unchecked"), text.out());
    }

    @Test
    void ipv6InRawIpCapture(@TempDir Path tmp) throws Exception {
        byte[] src = io.netty.util.NetUtil.createByteArrayFromIpAddressString("2001:db8::1");
        byte[] dst = io.netty.util.NetUtil.createByteArrayFromIpAddressString("2001:db8::2");
        ByteBuf roce = sendOnlyPayload(4791);
        int n = roce.readableBytes();
        new Icrc().writeIpv6(src, dst, 50000, 4791, roce, 0, n);
        ByteBuffer ip = ByteBuffer.allocate(40 + 8 + n);
        ip.putInt(0x60000000).putShort((short) (8 + n)).put((byte) 17).put((byte) 64).put(src).put(dst);
        ip.putShort((short) 50000).putShort((short) 4791).putShort((short) (8 + n)).putShort((short) 0);
        roce.getBytes(0, ip.array(), 48, n);
        ByteBuffer f = ByteBuffer.allocate(24 + 16 + ip.capacity()).order(ByteOrder.LITTLE_ENDIAN);
        f.putInt(0xA1B2C3D4).putShort((short) 2).putShort((short) 4).putInt(0).putInt(0).putInt(65535).putInt(101);
        f.putInt(0).putInt(0).putInt(ip.capacity()).putInt(ip.capacity()).put(ip.array());
        Path p = tmp.resolve("v6.pcap");
        Files.write(p, f.array());
        Cli.Result r = Cli.run("inspect", p.toString());
        assertEquals(0, r.exit(), r.out());
        assertTrue(r.outLines().get(0).contains("[2001:db8::1]:50000 > [2001:db8::2]:4791"), r.out());
        assertTrue(r.outLines().get(0).endsWith("icrc=ok"), r.out());
    }

    // ------------------------------------------------------------------------------------------ usage errors

    private static void assertUsageError(Cli.Result r, String fragment) {
        assertEquals(2, r.exit(), r.out() + r.err());
        assertEquals("", r.out());
        assertEquals(1, r.errLines().size(), r.err());
        assertTrue(r.err().contains(fragment), r.err());
        assertFalse(r.err().contains("\tat "), "no stack trace");
    }

    @Test
    void missingFileIsAUsageError(@TempDir Path tmp) {
        Path missing = tmp.resolve("nope.pcap");
        assertUsageError(Cli.run("inspect", missing.toString()), "jroce inspect: " + missing + ": no such file");
    }

    @Test
    void nonPcapFileIsAUsageError(@TempDir Path tmp) throws Exception {
        Path text = tmp.resolve("notes.txt");
        Files.writeString(text, "these are not packets\n");
        assertUsageError(Cli.run("inspect", text.toString()), "not a pcap file");
        Path empty = tmp.resolve("empty.pcap");
        Files.write(empty, new byte[0]);
        assertUsageError(Cli.run("inspect", empty.toString()), "not a pcap file (empty)");
        Path ng = tmp.resolve("x.pcapng");
        Files.write(ng, new byte[] {0x0A, 0x0D, 0x0D, 0x0A, 0x1C, 0, 0, 0, 0x4D, 0x3C, 0x2B, 0x1A});
        assertUsageError(Cli.run("inspect", ng.toString()), "x.pcapng: file ends inside the Section Header block");
        assertUsageError(Cli.run("inspect", tmp.toString()), "is a directory");
    }

    @Test
    void unsupportedLinkTypeIsAUsageError(@TempDir Path tmp) throws Exception {
        ByteBuffer f = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN);
        f.putInt(0xA1B2C3D4).putShort((short) 2).putShort((short) 4).putInt(0).putInt(0).putInt(65535).putInt(147);
        Path p = tmp.resolve("user0.pcap");
        Files.write(p, f.array());
        assertUsageError(Cli.run("inspect", p.toString()), "link type LINKTYPE_147 not supported");
    }

    @Test
    void badArgumentsAreOneLineUsageErrors() {
        assertUsageError(Cli.run("inspect"), "jroce inspect: Missing required parameter: 'CAPTURE'");
        assertUsageError(Cli.run("inspect", "--bogus", "x.pcap"), "Unknown option: '--bogus'");
        assertUsageError(Cli.run("inspect", "--udp-port", "70000", "x.pcap"), "--udp-port must be 0..65535");
        assertUsageError(Cli.run("inspect", "--udp-port", "abc", "x.pcap"), "'abc'");
        assertUsageError(Cli.run("inspect", "a.pcap", "b.pcap"), "Unmatched argument");
    }

    @Test
    void truncatedFileIsAFailureAfterTheSummary(@TempDir Path tmp) throws Exception {
        byte[] golden = Files.readAllBytes(TestData.goldenPcap());
        Path cut = tmp.resolve("cut.pcap");
        Files.write(cut, Arrays.copyOf(golden, golden.length - 30));
        Cli.Result r = Cli.run("inspect", cut.toString());
        assertEquals(1, r.exit());
        assertTrue(r.out().contains("39 RoCEv2 packets (UDP port 4791) in 39 frames"), r.out());
        assertEquals(1, r.errLines().size(), r.err());
        assertTrue(r.err().startsWith("jroce inspect: " + cut + ": truncated record data of frame 40"), r.err());
    }

    @Test
    void helpListsTheOptions() {
        Cli.Result r = Cli.run("inspect", "--help");
        assertEquals(0, r.exit());
        for (String s : new String[] {"CAPTURE", "--json", "--udp-port", "4791"}) {
            assertTrue(r.out().contains(s), s + " in " + r.out());
        }
    }

    /** Golden frames in JSON again, compared line by line with the text output (same packets, same order). */
    @Test
    void textAndJsonAgree() {
        List<String> text = Cli.run("inspect", TestData.goldenPcap().toString()).outLines();
        List<String> json = Cli.run("inspect", "--json", TestData.goldenPcap().toString()).outLines();
        Set<String> opcodes = new TreeSet<>();
        List<String> mismatches = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            Map<String, Object> p = Json.object(json.get(i));
            opcodes.add((String) p.get("opcode"));
            if (!text.get(i).contains(" " + p.get("opcode") + " ")
                    || !text.get(i).contains(String.format("psn=0x%06x", num(p.get("psn")).intValue()))) {
                mismatches.add(text.get(i));
            }
        }
        assertEquals(List.of(), mismatches);
        assertEquals(24, opcodes.size());
    }
}
