package io.jroce.cli.inspect;

import io.jroce.wire.IpText;
import io.jroce.wire.Opcode;
import io.jroce.wire.Operation;
import org.HdrHistogram.IntCountsHistogram;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/** The per-flow report of {@code jroce inspect --flows}: as data (for JSON) and as a text block. */
final class FlowReport {

    private FlowReport() {
    }

    // ------------------------------------------------------------------------------------------ data

    /** The flow as JSON-ready data: maps, lists, strings, Long/Integer, BigDecimal, Boolean and null. */
    static Map<String, Object> data(Flow f) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("flow", f.number);
        m.put("a", endpoint(f, 0));
        m.put("b", endpoint(f, 1));
        m.put("first_frame", f.firstFrame);
        m.put("last_frame", f.lastFrame);
        m.put("start", seconds(f.firstNanos));
        m.put("duration_s", seconds(f.durationNanos()));
        m.put("packets", f.packets);
        m.put("bytes", f.bytes);
        Map<String, Object> by = new LinkedHashMap<>();
        f.byOpcode.forEach((code, n) -> by.put(opcodeName(code), n));
        m.put("by_opcode", by);
        RequesterSide[] active = active(f);
        m.put("messages", messages(active));
        long payload = sum(active, s -> s.newPayloadBytes);
        m.put("payload_bytes", payload);
        m.put("goodput_bps", goodput(payload, f.durationNanos()));
        putSequence(m, active);
        m.put("icrc_failures", f.icrcFailures);
        m.put("malformed", f.malformed);
        m.put("cnps", f.cnps);
        m.put("ud_packets", f.unreliable);
        List<Object> requesters = new ArrayList<>();
        for (RequesterSide s : active) {
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("from", s.endpoint == 0 ? "a" : "b");
            r.put("request_packets", s.requestPackets);
            r.put("response_packets", s.responsePackets);
            r.put("messages", messages(new RequesterSide[] {s}));
            r.put("payload_bytes", s.newPayloadBytes);
            putSequence(r, new RequesterSide[] {s});
            requesters.add(r);
        }
        m.put("requesters", requesters);
        return m;
    }

    private interface Counter {
        long of(RequesterSide s);
    }

    private static long sum(RequesterSide[] sides, Counter c) {
        long n = 0;
        for (RequesterSide s : sides) {
            n += c.of(s);
        }
        return n;
    }

    /** The sides that sent requests (or got responses, should the requests be missing from the capture). */
    private static RequesterSide[] active(Flow f) {
        List<RequesterSide> l = new ArrayList<>(2);
        for (RequesterSide s : f.sides) {
            if (s.requestPackets > 0 || s.responsePackets > 0) {
                l.add(s);
            }
        }
        return l.toArray(new RequesterSide[0]);
    }

    private static Map<String, Object> endpoint(Flow f, int i) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("addr", IpText.of(f.address[i]));
        m.put("qpn", f.qpn[i] < 0 ? null : f.qpn[i]);
        return m;
    }

    private static Map<String, Object> messages(RequesterSide[] sides) {
        Map<Operation, Long> merged = new TreeMap<>();
        for (RequesterSide s : sides) {
            s.messages.forEach((op, n) -> merged.merge(op, n, Long::sum));
        }
        Map<String, Object> m = new LinkedHashMap<>();
        merged.forEach((op, n) -> m.put(op.name(), n));
        return m;
    }

    private static void putSequence(Map<String, Object> m, RequesterSide[] sides) {
        m.put("retransmissions", sum(sides, s -> s.retransmissions));
        m.put("duplicates", sum(sides, s -> s.duplicates));
        m.put("out_of_order", sum(sides, s -> s.outOfOrder));
        m.put("sequence_naks", sum(sides, s -> s.sequenceNaks));
        Map<String, Long> other = new TreeMap<>();
        for (RequesterSide s : sides) {
            s.otherNaks.forEach((k, n) -> other.merge(k, n, Long::sum));
        }
        m.put("other_naks", new LinkedHashMap<String, Object>(other));
        m.put("rnr_naks", sum(sides, s -> s.rnrNaks));
        long waits = sum(sides, s -> s.rnrWaits);
        long max = 0;
        for (RequesterSide s : sides) {
            max = Math.max(max, s.rnrWaitMaxNanos);
        }
        Map<String, Object> rnr = new LinkedHashMap<>();
        rnr.put("count", waits);
        rnr.put("total_ms", millis(sum(sides, s -> s.rnrWaitTotalNanos)));
        rnr.put("max_ms", millis(max));
        m.put("rnr_wait", rnr);
        m.put("duplicate_acks", sum(sides, s -> s.duplicateAcks));
        IntCountsHistogram h = new IntCountsHistogram(2);
        for (RequesterSide s : sides) {
            h.add(s.rtt);
        }
        Map<String, Object> rtt = new LinkedHashMap<>();
        long n = h.getTotalCount();
        rtt.put("samples", n);
        rtt.put("median_us", n == 0 ? null : micros(h.getValueAtPercentile(50)));
        rtt.put("p99_us", n == 0 ? null : micros(h.getValueAtPercentile(99)));
        rtt.put("min_us", n == 0 ? null : micros(h.getMinValue()));
        rtt.put("max_us", n == 0 ? null : micros(h.getMaxValue()));
        m.put("ack_rtt", rtt);
    }

    static String opcodeName(int code) {
        Opcode op = Opcode.of(code);
        return op != null ? op.name() : String.format(Locale.ROOT, "UNKNOWN_0x%02x", code);
    }

    private static BigDecimal seconds(long nanos) {
        return BigDecimal.valueOf(nanos, 9);
    }

    private static BigDecimal millis(long nanos) {
        return BigDecimal.valueOf(nanos, 6).setScale(3, RoundingMode.HALF_UP);
    }

    private static BigDecimal micros(long nanos) {
        return BigDecimal.valueOf(nanos, 3).setScale(1, RoundingMode.HALF_UP);
    }

    /** Payload bits per second, or null for a flow without duration. */
    private static BigDecimal goodput(long bytes, long nanos) {
        if (nanos <= 0) {
            return null;
        }
        return BigDecimal.valueOf(bytes * 8).multiply(BigDecimal.valueOf(1_000_000_000L))
                .divide(BigDecimal.valueOf(nanos), 0, RoundingMode.HALF_UP);
    }

    // ------------------------------------------------------------------------------------------ text

    /** The flow as a block of text lines, from {@link #data}. */
    @SuppressWarnings("unchecked")
    static List<String> text(Flow f) {
        Map<String, Object> d = data(f);
        List<String> out = new ArrayList<>();
        out.add(String.format(Locale.ROOT, "flow %d: %s <-> %s", f.number, endpointText(f, 0), endpointText(f, 1)));
        out.add(String.format(Locale.ROOT, "  frames %d..%d, %s s, %d packets, %d bytes, payload %d bytes, goodput %s",
                f.firstFrame, f.lastFrame, ((BigDecimal) d.get("duration_s")).toPlainString(), f.packets, f.bytes,
                (Long) d.get("payload_bytes"), rate((BigDecimal) d.get("goodput_bps"))));
        out.add("  opcodes: " + joinCounts((Map<String, Object>) d.get("by_opcode")));
        for (Object o : (List<Object>) d.get("requesters")) {
            Map<String, Object> r = (Map<String, Object>) o;
            int from = "a".equals(r.get("from")) ? 0 : 1;
            out.add(String.format(Locale.ROOT, "  requests %s -> %s: %d packets, %d responses, messages %s",
                    IpText.of(f.address[from]), IpText.of(f.address[1 - from]),
                    (Long) r.get("request_packets"), (Long) r.get("response_packets"),
                    joinCounts((Map<String, Object>) r.get("messages"))));
            Map<String, Object> rnr = (Map<String, Object>) r.get("rnr_wait");
            Map<String, Object> other = (Map<String, Object>) r.get("other_naks");
            out.add(String.format(Locale.ROOT, "    retransmissions %d, duplicates %d, out of order %d, sequence NAKs %d, "
                            + "RNR NAKs %d (%d waits, total %s ms, max %s ms), other NAKs %s, duplicate ACKs %d",
                    (Long) r.get("retransmissions"), (Long) r.get("duplicates"), (Long) r.get("out_of_order"),
                    (Long) r.get("sequence_naks"), (Long) r.get("rnr_naks"), (Long) rnr.get("count"),
                    ((BigDecimal) rnr.get("total_ms")).toPlainString(), ((BigDecimal) rnr.get("max_ms")).toPlainString(),
                    other.isEmpty() ? "0" : joinCounts(other), (Long) r.get("duplicate_acks")));
            Map<String, Object> rtt = (Map<String, Object>) r.get("ack_rtt");
            long n = (Long) rtt.get("samples");
            out.add(n == 0 ? "    ACK round trip: no samples"
                    : String.format(Locale.ROOT, "    ACK round trip: median %s us, p99 %s us (%d samples, min %s, max %s us)",
                            plain(rtt.get("median_us")), plain(rtt.get("p99_us")), n, plain(rtt.get("min_us")),
                            plain(rtt.get("max_us"))));
        }
        out.add(String.format(Locale.ROOT, "  ICRC failures %d, malformed %d, CNPs %d", f.icrcFailures, f.malformed, f.cnps));
        return out;
    }

    private static String endpointText(Flow f, int i) {
        return IpText.of(f.address[i]) + " qpn " + (f.qpn[i] < 0 ? "?" : String.format(Locale.ROOT, "0x%06x", f.qpn[i]));
    }

    private static String plain(Object v) {
        return ((BigDecimal) v).toPlainString();
    }

    private static String joinCounts(Map<String, Object> m) {
        if (m.isEmpty()) {
            return "-";
        }
        StringBuilder sb = new StringBuilder();
        m.forEach((k, v) -> sb.append(sb.length() == 0 ? "" : ", ").append(k).append(' ').append(v));
        return sb.toString();
    }

    private static String rate(BigDecimal bps) {
        if (bps == null) {
            return "-";
        }
        double v = bps.doubleValue();
        if (v >= 1e9) {
            return String.format(Locale.ROOT, "%.2f Gbit/s", v / 1e9);
        }
        if (v >= 1e6) {
            return String.format(Locale.ROOT, "%.2f Mbit/s", v / 1e6);
        }
        return String.format(Locale.ROOT, "%.2f kbit/s", v / 1e3);
    }
}
