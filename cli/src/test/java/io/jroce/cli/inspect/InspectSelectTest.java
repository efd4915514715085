package io.jroce.cli.inspect;

import io.jroce.cli.Cli;
import io.jroce.testkit.Json;
import io.jroce.testkit.TestData;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The time column, the packet filters and the count limit of {@code jroce inspect}, on the golden vectors:
 * what each option selects is computed from testdata/rocev2-golden.json (the vectors' own description), and
 * the times from the pcap record headers, read here byte by byte.
 */
class InspectSelectTest {

    private static final String GOLDEN = TestData.goldenPcap().toString();

    /** Each golden frame's timestamp in nanoseconds since the epoch, from the classic pcap record headers. */
    private static List<Long> recordStamps() throws Exception {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(TestData.goldenPcap())).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(0xA1B2C3D4, b.getInt(0), "microsecond pcap");
        List<Long> out = new ArrayList<>();
        for (int at = 24; at < b.limit(); ) {
            long sec = b.getInt(at) & 0xFFFFFFFFL;
            long usec = b.getInt(at + 4) & 0xFFFFFFFFL;
            out.add(sec * 1_000_000_000L + usec * 1000);
            at += 16 + b.getInt(at + 8);
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> vectors() throws Exception {
        return (List<Map<String, Object>>) Json.object(Files.readString(TestData.goldenJson())).get("vectors");
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> sub(Map<String, Object> m, String key) {
        return (Map<String, Object>) m.get(key);
    }

    private static long num(Object o) {
        if (o instanceof String s && s.startsWith("0x")) {
            return Long.parseLong(s.substring(2), 16);
        }
        return ((Number) o).longValue();
    }

    /** The frame numbers (1-based) of the golden vectors that {@code which} accepts. */
    private static List<Long> framesWhere(Predicate<Map<String, Object>> which) throws Exception {
        List<Map<String, Object>> v = vectors();
        List<Long> out = new ArrayList<>();
        for (int i = 0; i < v.size(); i++) {
            if (which.test(v.get(i))) {
                out.add((long) i + 1);
            }
        }
        return out;
    }

    /** The frame numbers of the golden packets inspect lists with these options. */
    private static List<Long> listed(String... options) {
        return listedIn(GOLDEN, options);
    }

    /** The frame numbers of the packets inspect lists with these options (JSON lines, the summary left out). */
    private static List<Long> listedIn(String capture, String... options) {
        List<String> args = new ArrayList<>(List.of("inspect", "--json"));
        args.addAll(List.of(options));
        args.add(capture);
        Cli.Result r = Cli.run(args.toArray(String[]::new));
        assertEquals("", r.err());
        List<Long> frames = new ArrayList<>();
        for (String line : r.outLines()) {
            Map<String, Object> m = Json.object(line);
            if (m.containsKey("frame")) {
                frames.add(num(m.get("frame")));
            }
        }
        return frames;
    }

    private static Map<String, Object> summary(Cli.Result r) {
        List<String> l = r.outLines();
        return sub(Json.object(l.get(l.size() - 1)), "summary");
    }

    // ------------------------------------------------------------------------------------------ time

    @Test
    void jsonCarriesEveryTimeOfEachPacket() throws Exception {
        List<Long> stamps = recordStamps();
        Cli.Result r = Cli.run("inspect", "--json", GOLDEN);
        List<String> lines = r.outLines();
        assertEquals(41, lines.size());
        for (int i = 0; i < 40; i++) {
            Map<String, Object> p = Json.object(lines.get(i));
            long t = stamps.get(i);
            String where = "frame " + (i + 1);
            assertEquals(BigDecimal.valueOf(t, 9), p.get("time_epoch"), where);
            assertEquals(BigDecimal.valueOf(t - stamps.get(0), 9), p.get("time_relative"), where);
            assertEquals(BigDecimal.valueOf(i == 0 ? 0 : t - stamps.get(i - 1), 9), p.get("time_delta"), where);
            assertEquals(Instant.ofEpochSecond(t / 1_000_000_000L, t % 1_000_000_000L).toString(), p.get("time"), where);
        }
        assertTrue(stamps.get(39) > stamps.get(0), "the golden frames are spread in time");
    }

    @Test
    void textTimeColumnInEachFormat() throws Exception {
        List<Long> stamps = recordStamps();
        DateTimeFormatter utc = DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss.SSSSSS", Locale.ROOT)
                .withZone(ZoneOffset.UTC);
        for (String[] form : new String[][] {{}, {"-t", "r"}, {"--time", "relative"}, {"-t", "a"}, {"-t", "absolute"},
                {"-t", "d"}, {"-t", "e"}, {"--time", "EPOCH"}, {"-t", "ad"}, {"-t", "ud"}, {"-t", "u"}}) {
            List<String> args = new ArrayList<>(List.of("inspect"));
            args.addAll(List.of(form));
            args.add(GOLDEN);
            Cli.Result r = Cli.run(args.toArray(String[]::new));
            assertEquals(1, r.exit(), "the golden file holds bad ICRCs");
            char kind = form.length == 0 ? 'r' : Character.toLowerCase(form[1].charAt(0));
            for (int i = 0; i < 40; i++) {
                long t = stamps.get(i);
                String expected = switch (kind) {
                    case 'r' -> micros(t - stamps.get(0));
                    case 'd' -> micros(i == 0 ? 0 : t - stamps.get(i - 1));
                    case 'e' -> micros(t);
                    default -> utc.format(Instant.ofEpochSecond(t / 1_000_000_000L, t % 1_000_000_000L));
                };
                String line = r.outLines().get(i);
                assertTrue(line.startsWith(String.format("%5d  %10s  ", i + 1, expected)),
                        String.join(" ", form) + ": " + line);
            }
        }
    }

    private static String micros(long nanos) {
        return BigDecimal.valueOf(nanos / 1000, 6).toPlainString();
    }

    // ------------------------------------------------------------------------------------------ filters

    @Test
    void qpnSelectsTheDestinationOrTheUdSource() throws Exception {
        assertEquals(framesWhere(v -> num(sub(v, "bth").get("dest_qp")) == 0xd2), listed("--qpn", "0xd2"));
        assertEquals(listed("--qpn", "0xd2"), listed("--qpn", "210"));
        assertEquals(framesWhere(v -> num(sub(v, "bth").get("dest_qp")) == 0x11), listed("--qpn", "0x11"));
        // testdata/cm/cm-messages.pcap (its README table): frames 1-7 are CM MADs from QP 1 to QP 1, frame 8 a UD
        // SEND from QP 0x11 (its DETH) to QP 0x55: listed for either QP
        String cm = TestData.file("cm/cm-messages.pcap").toString();
        assertEquals(List.of(8L), listedIn(cm, "--qpn", "0x11"));
        assertEquals(List.of(8L), listedIn(cm, "--qpn", "0x55"));
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L, 7L), listedIn(cm, "--qpn", "1"));
    }

    @Test
    void hostSelectsSourceOrDestination() throws Exception {
        for (String host : List.of("192.0.2.10", "10.0.17.1", "10.0.18.1")) {
            List<Long> expected = framesWhere(v -> host.equals(sub(v, "ipv4").get("src")) || host.equals(sub(v, "ipv4").get("dst")));
            assertTrue(!expected.isEmpty(), host);
            assertEquals(expected, listed("--host", host), host);
        }
        assertEquals(List.of(), listed("--host", "2001:db8::1"));
    }

    @Test
    void opcodeTakesNamesAsPrintedAndCodes() throws Exception {
        List<Long> acksAndCnps = framesWhere(v -> v.get("opcode_name").equals("RC_ACKNOWLEDGE") || v.get("opcode_name").equals("CNP"));
        assertTrue(acksAndCnps.size() > 2);
        assertEquals(acksAndCnps, listed("--opcode", "RC_ACKNOWLEDGE,CNP"));
        assertEquals(acksAndCnps, listed("--opcode", "rc_acknowledge, 0x81"));
        assertEquals(framesWhere(v -> v.get("opcode_name").equals("RC_SEND_ONLY")), listed("--opcode", "RC_SEND_ONLY"));
    }

    @Test
    void filtersCombineAndTheSummaryCountsWhatIsListed() throws Exception {
        List<Long> expected = framesWhere(v -> v.get("opcode_name").equals("RC_ACKNOWLEDGE")
                && "192.0.2.11".equals(sub(v, "ipv4").get("src")) && num(sub(v, "bth").get("dest_qp")) == 0x11);
        assertTrue(!expected.isEmpty());
        assertEquals(expected, listed("--opcode", "RC_ACKNOWLEDGE", "--host", "192.0.2.11", "--qpn", "0x11"));

        Cli.Result r = Cli.run("inspect", "--opcode", "RC_ACKNOWLEDGE", GOLDEN);
        long acks = framesWhere(v -> v.get("opcode_name").equals("RC_ACKNOWLEDGE")).size();
        long bad = framesWhere(v -> v.get("opcode_name").equals("RC_ACKNOWLEDGE") && Boolean.FALSE.equals(v.get("icrc_valid"))).size();
        assertEquals(1, bad, "one of the golden ACKs carries a wrong ICRC");
        assertEquals(1, r.exit(), "the exit status follows the packets listed");
        assertTrue(r.out().contains("\n" + acks + " RoCEv2 packets listed (UDP port 4791) in 40 frames: 0 malformed, 1 bad ICRC\n"),
                r.out());
        assertEquals(0, Cli.run("inspect", "--opcode", "RC_RDMA_READ_REQUEST,CNP", GOLDEN).exit(),
                "no bad ICRC among these");
        Map<String, Object> s = summary(Cli.run("inspect", "--json", "--opcode", "RC_ACKNOWLEDGE", "--qpn", "17", GOLDEN));
        assertEquals(Map.of("qpn", BigDecimal.valueOf(17), "opcodes", List.of("RC_ACKNOWLEDGE")), s.get("selected"));
    }

    @Test
    void countStopsAfterNPacketsListed() throws Exception {
        assertEquals(List.of(1L, 2L, 3L), listed("-c", "3"));
        List<Long> acks = framesWhere(v -> v.get("opcode_name").equals("RC_ACKNOWLEDGE"));
        assertEquals(acks.subList(0, 2), listed("--count", "2", "--opcode", "RC_ACKNOWLEDGE"));
        Cli.Result r = Cli.run("inspect", "--json", "-c", "2", "--opcode", "RC_ACKNOWLEDGE", GOLDEN);
        Map<String, Object> s = summary(r);
        assertEquals(2, num(s.get("packets")));
        assertEquals(acks.get(1).longValue(), num(s.get("frames")), "reading stops at the last packet listed");
        assertEquals(40, listed("-c", "48").size(), "a count beyond the capture lists it all");
    }

    @Test
    void flowViewSelectsFlowsByQpnAndHost() {
        Cli.Result all = Cli.run("inspect", "--flows", GOLDEN);
        long flows = all.outLines().stream().filter(l -> l.startsWith("flow ")).count();
        assertTrue(flows >= 3, all.out());
        Cli.Result r = Cli.run("inspect", "--flows", "--qpn", "0xd2", GOLDEN);
        List<String> heads = r.outLines().stream().filter(l -> l.startsWith("flow ")).toList();
        assertEquals(List.of("flow 1: 192.0.2.10 qpn 0x000011 <-> 192.0.2.11 qpn 0x0000d2"), heads, r.out());
        assertTrue(r.out().contains("\n1 of these flows match --qpn/--host\n" + flows + " flows, 40 RoCEv2 packets"), r.out());
        Cli.Result h = Cli.run("inspect", "--flows", "--json", "--host", "10.0.18.1", GOLDEN);
        List<String> l = h.outLines();
        assertEquals(2, l.size(), h.out());
        assertEquals("10.0.18.1", sub(Json.object(l.get(0)), "b").get("addr"));
        assertEquals(1, num(summary(h).get("flows_selected")));
    }

    // ------------------------------------------------------------------------------------------ bad values

    private static void usageError(String message, String... args) {
        Cli.Result r = Cli.run(args);
        assertEquals(2, r.exit(), r.out() + r.err());
        assertEquals("", r.out());
        assertEquals(1, r.errLines().size(), r.err());
        assertTrue(r.err().contains(message), r.err());
    }

    @Test
    void badValuesAreOneLineUsageErrors() {
        usageError("'0x1000000' is not a QP number", "inspect", "--qpn", "0x1000000", GOLDEN);
        usageError("'x' is not a QP number", "inspect", "--qpn", "x", GOLDEN);
        usageError("'host.example' is not an IPv4 address", "inspect", "--host", "host.example", GOLDEN);
        usageError("'RC_SEND_SOMETIMES' is not an opcode", "inspect", "--opcode", "RC_SEND_ONLY,RC_SEND_SOMETIMES", GOLDEN);
        usageError("'' is not an opcode", "inspect", "--opcode", "RC_SEND_ONLY,", GOLDEN);
        usageError("'0x100' is not an opcode", "inspect", "--opcode", "0x100", GOLDEN);
        usageError("'q' is not a time format", "inspect", "-t", "q", GOLDEN);
        usageError("-c must be 1 or more, not 0", "inspect", "-c", "0", GOLDEN);
        usageError("do not apply to --flows", "inspect", "--flows", "-c", "3", GOLDEN);
        usageError("do not apply to --flows", "inspect", "--flows", "--opcode", "CNP", GOLDEN);
        usageError("do not apply to --flows", "inspect", "--flows", "--time", "a", GOLDEN);
        usageError("Unknown options: '--port'", "inspect", "--port", "4791", GOLDEN);
    }
}
