package io.jroce.cli.inspect;

import io.jroce.wire.IpText;
import io.jroce.cli.Json;
import io.jroce.cli.Json.Unsigned;
import io.jroce.cli.Main;
import io.jroce.wire.Aeth;
import io.jroce.wire.BthView;
import io.jroce.wire.Icrc;
import io.jroce.wire.Opcode;
import io.jroce.wire.Problem;
import io.jroce.wire.RocePacket;
import io.jroce.wire.RoceV2;
import io.jroce.wire.pcap.CaptureReader;
import io.jroce.wire.pcap.PcapFrame;
import io.netty.buffer.ByteBuf;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.math.BigDecimal;
import java.net.InetAddress;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;

/**
 * {@code jroce inspect CAPTURE.pcap}: decodes every RoCEv2 packet (UDP datagram to port 4791) of a capture,
 * one line per packet, and verifies its ICRC exactly, over the IP header as captured. A UDP GSO
 * super-datagram (several RoCE packets of one size in one datagram, captured before the kernel cut it;
 * {@link GsoSplit}) is shown as its packets, one line each, labelled {@code gso=k/n}, each ICRC checked for
 * the IPv4 ID its segment leaves with. Each line starts with the frame number and its time ({@link TimeColumn});
 * {@link PacketFilter} and {@code -c} choose the packets listed.
 */
@Command(name = "inspect",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Decode the RoCEv2 packets (UDP to port 4791) in a pcap or pcapng capture: frame number, time, "
                    + "addresses, BTH, extension headers, payload length, and an exact ICRC check over the captured "
                    + "IP header.",
            "A UDP GSO super-datagram (one datagram holding several RoCE packets of equal size back to back, "
                    + "as captured on a veth or bridge before segmentation) is shown as its packets, labelled gso=k/n; "
                    + "packet k's ICRC is checked for the IPv4 ID captured + k, the ID its datagram gets when cut.",
            "Exit status: 0 if every packet listed is well-formed with a valid ICRC, 1 otherwise, 2 on bad usage "
                    + "or an unreadable file."
        })
public final class InspectCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "CAPTURE",
            description = "Capture file, pcap (tcpdump -w) or pcapng (Wireshark, tshark, dumpcap).")
    Path capture;

    @Option(names = "--json", description = "One JSON object per packet and a final summary object.")
    boolean json;

    @Option(names = "--udp-port", paramLabel = "N", defaultValue = "" + RoceV2.UDP_PORT,
            description = "UDP destination port of the RoCEv2 traffic (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = {"-t", "--time"}, paramLabel = "FORMAT", defaultValue = "relative",
            converter = TimeColumn.FormatConverter.class,
            description = "Time column: relative (seconds since the first frame), absolute (UTC date and time), "
                    + "delta (seconds since the previous packet listed) or epoch (seconds since 1970); "
                    + "r, a, d, e for short, as tshark's -t (its ad, u and ud: absolute) (default: ${DEFAULT-VALUE}). "
                    + "--json has all four.")
    TimeColumn.Format time;

    @Option(names = "--qpn", paramLabel = "N", converter = PacketFilter.Qpn.class,
            description = "Only packets to QP N (the BTH destination QP) or, for UD, from it (the DETH source QP); "
                    + "decimal or 0x hex. With --flows: the flows with QP N at either end.")
    Integer qpn;

    @Option(names = "--host", paramLabel = "ADDR", converter = PacketFilter.Host.class,
            description = "Only packets from or to this IPv4 or IPv6 address. With --flows: the flows with ADDR "
                    + "at either end.")
    InetAddress host;

    @Option(names = "--opcode", paramLabel = "NAME[,NAME...]", converter = PacketFilter.Opcodes.class,
            description = "Only packets with one of these opcodes, named as inspect prints them (RC_SEND_ONLY, "
                    + "RC_ACKNOWLEDGE, UD_SEND_ONLY, CNP, ...; any case) or given as codes (0x11).")
    BitSet opcodes;

    @Option(names = {"-c", "--count"}, paramLabel = "N",
            description = "Stop after listing N packets (the ones the filters let through), as tshark's -c.")
    Long count;

    @Option(names = "--flows", description = "Instead of one line per packet, one block (with --json: one object) "
            + "per QP conversation: packets, bytes, goodput, retransmissions, NAKs, RNR waits, ACK round trip.")
    boolean flows;

    @Option(names = "--graph", paramLabel = "FILE.png|FILE.svg",
            description = "Draw one flow's PSN-over-time sequence graph and throughput to a PNG or SVG file.")
    Path graph;

    @Option(names = "--flow", paramLabel = "N",
            description = "The flow (numbered as --flows lists them) to show or draw; default: all, and the "
                    + "largest is drawn.")
    Integer flow;

    private final RocePacket packet = new RocePacket();
    private final BthView rawBth = new BthView();
    private final Icrc icrc = new Icrc();
    private final CmDecode cm = new CmDecode();
    private final GsoSplit gso = new GsoSplit();
    private long gsoDatagrams;
    private long gsoPackets;
    private long lastGsoFrame = -1;
    /** packets per opcode name, in opcode order */
    private final Map<Integer, Integer> byOpcode = new TreeMap<>();
    private long packets;
    private long malformed;
    private long badIcrc;

    private PacketFilter filter;
    private TimeColumn clock;
    private PrintWriter out;

    @Override
    public Integer call() {
        if (port < 0 || port > 0xFFFF) {
            throw new ParameterException(spec.commandLine(), "--udp-port must be 0..65535, not " + port);
        }
        if (count != null && count < 1) {
            throw new ParameterException(spec.commandLine(), "-c must be 1 or more, not " + count);
        }
        boolean flowView = flows || graph != null || flow != null;
        if (flowView && (opcodes != null || count != null || spec.commandLine().getParseResult().hasMatchedOption("-t"))) {
            throw new ParameterException(spec.commandLine(),
                    "--opcode, -c and -t choose and time the packets listed; they do not apply to --flows, --graph or --flow");
        }
        if (graph != null) {
            // a file that cannot be written is a bad argument (exit 2), found before the capture is read
            String why = io.jroce.cli.DeviceOptions.unwritable(graph);
            if (why != null) throw new ParameterException(spec.commandLine(), "--graph: " + why);
        }
        out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        String name = spec.qualifiedName();
        CaptureReader reader = CaptureFile.open(capture, name, err);
        if (reader == null) {
            return Main.EXIT_USAGE;
        }
        if (flowView) {
            try {
                reader.close(); // the flow view reads the file twice, from the start each time
            } catch (IOException ignored) {
                // only read; the flow view reopens it
            }
            FlowInspect.Selection selection = new FlowInspect.Selection(qpn, host);
            return FlowInspect.run(capture, port, selection, flows, graph, flow, json ? Json::toJson : null, out, err, name);
        }
        filter = new PacketFilter(qpn, host, opcodes);
        clock = new TimeColumn(time);
        String readError = null;
        long frames = 0;
        try (reader) {
            for (PcapFrame f; !done() && (f = reader.next()) != null; ) {
                frames = f.frameNumber();
                clock.onFrame(f.epochNanos());
                if (!f.isUdp() || f.dstPort() != port) {
                    continue;
                }
                int segment = superDatagramSegment(f);
                if (segment == 0) {
                    list(f, f.udpPayloadOffset(), f.udpPayloadLength(), -1, 0);
                    continue;
                }
                int len = f.udpPayloadLength();
                int n = (len + segment - 1) / segment;
                for (int k = 0; k < n && !done(); k++) {
                    list(f, f.udpPayloadOffset() + k * segment, Math.min(segment, len - k * segment), k, n);
                }
            }
        } catch (IOException e) {
            readError = Main.describe(e);
        }
        printSummary(out, frames);
        out.flush();
        if (readError != null) {
            err.println(name + ": " + readError);
            return Main.EXIT_FAILURE;
        }
        return malformed == 0 && badIcrc == 0 ? 0 : Main.EXIT_FAILURE;
    }

    /** {@code -c N} packets have been listed. */
    private boolean done() {
        return count != null && packets >= count;
    }

    /** Lists the packet at [off, off+len) of {@code f} if the filters let it through. */
    private void list(PcapFrame f, int off, int len, int segment, int segments) {
        if (!filter.matches(f, f.asByteBuf(), off, len)) {
            return;
        }
        if (segment >= 0) {
            gsoPackets++;
            if (f.frameNumber() != lastGsoFrame) {
                gsoDatagrams++;
                lastGsoFrame = f.frameNumber();
            }
        }
        Map<String, Object> rec = inspect(f, off, len, segment, segments);
        out.println(json ? Json.toJson(rec) : text(rec, clock.text(rec)));
    }

    // ------------------------------------------------------------------------------------------ decoding

    /**
     * The segment size when the frame is a GSO super-datagram, else 0. Only a datagram that is not one valid
     * RoCE packet is examined, so an ordinary capture costs nothing more.
     */
    private int superDatagramSegment(PcapFrame f) {
        boolean complete = !f.isTruncated() && f.ipOffset() + f.ipLength() <= f.capturedLength();
        if (!complete) return 0;
        ByteBuf buf = f.asByteBuf();
        if (packet.decode(buf, f.udpPayloadOffset(), f.udpPayloadLength()) == Problem.NONE && verifyIcrc(buf, f)) return 0;
        return gso.segmentSize(f, buf);
    }

    /**
     * One packet: the frame's whole UDP payload (segment -1), or packet {@code segment} of the
     * {@code segments} in a GSO super-datagram, at [off, off+len).
     */
    private Map<String, Object> inspect(PcapFrame f, int off, int len, int segment, int segments) {
        packets++;
        ByteBuf buf = f.asByteBuf();
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("frame", f.frameNumber());
        clock.put(r, f.epochNanos());
        r.put("src", IpText.of(f.srcAddress()));
        r.put("src_port", f.srcPort());
        r.put("dst", IpText.of(f.dstAddress()));
        r.put("dst_port", f.dstPort());
        if (segment >= 0) {
            // a super-datagram as captured before segmentation: which packet of it, and its datagram's IPv4 ID
            Map<String, Object> g = obj("segment", segment, "segments", segments);
            if (f.ipVersion() == 4) g.put("ip_id", GsoSplit.segmentId(f, segment));
            r.put("gso", g);
        }

        boolean complete = !f.isTruncated() && f.ipOffset() + f.ipLength() <= f.capturedLength();
        Problem problem = complete ? packet.decode(buf, off, len) : null;
        if (problem == Problem.NONE) {
            Opcode op = packet.opcode();
            count(op.code());
            r.put("opcode", op.name());
            putBth(r, packet.bth());
            if (op.hasDeth()) {
                r.put("deth", obj("qkey", Unsigned.u32(packet.deth().qkey()), "src_qp", Unsigned.u24(packet.deth().srcQp())));
            }
            if (op.hasReth()) {
                r.put("reth", obj("va", Unsigned.u64(packet.reth().va()), "rkey", Unsigned.u32(packet.reth().rkey()),
                        "dma_len", packet.reth().dmaLengthUnsigned()));
            }
            if (op.hasAeth()) {
                r.put("aeth", aeth(packet.aeth().syndrome(), packet.aeth().msn()));
            }
            if (op.hasAtomicEth()) {
                r.put("atomic_eth", obj("va", Unsigned.u64(packet.atomicEth().va()),
                        "rkey", Unsigned.u32(packet.atomicEth().rkey()),
                        "swap_add", Unsigned.u64(packet.atomicEth().swapAdd()),
                        "compare", Unsigned.u64(packet.atomicEth().compare())));
            }
            if (op.hasAtomicAckEth()) {
                r.put("atomic_ack_eth", obj("orig", Unsigned.u64(packet.atomicAckEth().originalData())));
            }
            if (op.hasImmDt()) {
                r.put("imm", Unsigned.u32(packet.immDt().imm()));
            }
            if (op.hasIeth()) {
                r.put("ieth", Unsigned.u32(packet.ieth().rkey()));
            }
            r.put("payload_len", packet.payloadLength());
            cm.put(r, packet); // a MAD to QP 1 (GSI): the CM message or the MAD header
        } else {
            // malformed or cut short: show what the raw BTH says, then why
            malformed++;
            if (len >= 1) {
                int code = buf.getUnsignedByte(off);
                count(code);
                r.put("opcode", opcodeName(code));
            } else {
                r.put("opcode", null);
            }
            if (len >= BthView.LENGTH) {
                putBth(r, rawBth.wrap(buf, off));
            }
            r.put("problem", problem != null ? problem.reason() : f.anomaly());
        }
        String verdict;
        if (!complete) {
            verdict = "unchecked";
        } else if (segment >= 0 ? gso.segmentIcrcOk(f, buf, off, len, segment) : verifyIcrc(buf, f)) {
            verdict = "ok";
        } else {
            verdict = "bad";
            badIcrc++;
        }
        r.put("icrc", verdict);
        return r;
    }

    private boolean verifyIcrc(ByteBuf buf, PcapFrame f) {
        try {
            return icrc.verifyIpPacket(buf, f.ipOffset(), f.ipLength());
        } catch (RuntimeException e) {
            return false; // too short to hold an ICRC, or otherwise not checkable
        }
    }

    private void count(int opcode) {
        byOpcode.merge(opcode, 1, Integer::sum);
    }

    static String opcodeName(int code) {
        Opcode op = Opcode.of(code);
        return op != null ? op.name() : String.format("UNKNOWN_0x%02x", code);
    }

    private static void putBth(Map<String, Object> r, BthView bth) {
        r.put("dqpn", Unsigned.u24(bth.destQp()));
        r.put("psn", new Unsigned(bth.psn(), 6));
        r.put("ackreq", bth.ackReq());
        r.put("se", bth.se());
        r.put("migreq", bth.migReq());
        r.put("fecn", bth.fecn());
        r.put("becn", bth.becn());
        r.put("pad", bth.padCount());
        r.put("pkey", Unsigned.u16(bth.pkey()));
    }

    private static Map<String, Object> aeth(int syndrome, int msn) {
        Aeth.Kind kind = Aeth.kind(syndrome);
        int value = Aeth.value(syndrome);
        Map<String, Object> m = obj("kind", kind.name());
        if (kind == Aeth.Kind.NAK) {
            Aeth.NakCode code = Aeth.NakCode.of(value);
            m.put("nak", code != null ? code.name() : "RESERVED_" + value);
        }
        m.put("value", value);
        if (kind == Aeth.Kind.RNR_NAK) {
            m.put("rnr_timer_ms", BigDecimal.valueOf(Aeth.rnrTimerNanos(value)).movePointLeft(6).stripTrailingZeros());
        } else if (kind == Aeth.Kind.ACK && Aeth.creditCount(value) >= 0) {
            m.put("credits", Aeth.creditCount(value));
        }
        m.put("msn", msn);
        return m;
    }

    private static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    // ------------------------------------------------------------------------------------------ output

    /** Keys that the text form shows bare (no "key=") or only when true. */
    private static boolean bare(String key) {
        return key.equals("kind") || key.equals("nak") || key.equals("msg");
    }

    private static boolean onlyWhenTrue(String key) {
        return key.equals("migreq") || key.equals("fecn") || key.equals("becn");
    }

    /**
     * {@code 16    0.000412  192.0.2.10:57236 > 192.0.2.11:4791  RC_RDMA_READ_REQUEST  dqpn=0x0000d2 psn=0x123456 ...}:
     * the frame number, {@code time} (the time column's text), then the record.
     */
    static String text(Map<String, Object> r, String time) {
        StringBuilder sb = new StringBuilder(176);
        sb.append(String.format("%5d  %s  %21s > %-21s  %-33s",
                (Long) r.get("frame"),
                time,
                endpoint((String) r.get("src"), (Integer) r.get("src_port")),
                endpoint((String) r.get("dst"), (Integer) r.get("dst_port")),
                r.get("opcode") == null ? "-" : r.get("opcode")));
        for (Map.Entry<String, Object> e : r.entrySet()) {
            String k = e.getKey();
            if (k.equals("frame") || k.startsWith("time") || k.equals("src") || k.equals("src_port")
                    || k.equals("dst") || k.equals("dst_port") || k.equals("opcode")) {
                continue;
            }
            if (onlyWhenTrue(k) && !Boolean.TRUE.equals(e.getValue())) {
                continue;
            }
            sb.append(' ');
            if (k.equals("problem")) {
                sb.append("MALFORMED: ").append(e.getValue()).append(';');
                continue;
            }
            if (k.equals("gso") && e.getValue() instanceof Map<?, ?> g) {
                sb.append("gso=").append(g.get("segment")).append('/').append(g.get("segments"));
                if (g.get("ip_id") != null) sb.append(" ip_id=").append(g.get("ip_id"));
                continue;
            }
            appendText(sb, k, e.getValue());
        }
        return sb.toString();
    }

    private static void appendText(StringBuilder sb, String key, Object v) {
        if (v instanceof Map<?, ?> m) {
            sb.append(key).append('[');
            boolean first = true;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                String k = (String) e.getKey();
                if (k.endsWith("_name") && m.containsKey(k.substring(0, k.length() - 5))) {
                    continue; // shown with its value
                }
                if (!first) {
                    sb.append(' ');
                }
                first = false;
                Object name = m.get(k + "_name");
                if (name != null) {
                    // an enumerated field: what it means, then the value on the wire
                    sb.append(k).append('=').append(name).append(" (");
                    appendValue(sb, e.getValue());
                    sb.append(')');
                } else {
                    appendText(sb, k, e.getValue());
                }
            }
            sb.append(']');
            return;
        }
        if (!bare(key) && !onlyWhenTrue(key)) {
            sb.append(key).append('=');
        }
        if (onlyWhenTrue(key)) {
            sb.append(key);
        } else {
            appendValue(sb, v);
        }
    }

    private static void appendValue(StringBuilder sb, Object v) {
        if (v instanceof Unsigned u) {
            sb.append(u.hex());
        } else if (v instanceof Boolean b) {
            sb.append(b ? '1' : '0');
        } else if (v instanceof BigDecimal d) {
            sb.append(d.toPlainString());
        } else {
            sb.append(v);
        }
    }

    private static String endpoint(String addr, int port) {
        return (addr.indexOf(':') >= 0 ? "[" + addr + "]" : addr) + ":" + port;
    }

    /** Filters or a count limit were given: the summary counts only the packets listed. */
    private boolean selective() {
        return !filter.isEmpty() || count != null;
    }

    /** The filters and count limit as given, for the JSON summary. */
    private Map<String, Object> selection() {
        Map<String, Object> m = new LinkedHashMap<>();
        if (qpn != null) m.put("qpn", Unsigned.u24(qpn));
        if (host != null) m.put("host", IpText.of(host));
        if (opcodes != null) m.put("opcodes", opcodes.stream().mapToObj(InspectCommand::opcodeName).toList());
        if (count != null) m.put("count", count);
        return m;
    }

    private void printSummary(PrintWriter out, long frames) {
        Map<String, Object> by = new LinkedHashMap<>();
        byOpcode.forEach((code, n) -> by.put(opcodeName(code), n));
        if (json) {
            Map<String, Object> s = obj("packets", packets, "by_opcode", by, "malformed", malformed,
                    "bad_icrc", badIcrc, "frames", frames, "port", port);
            if (selective()) {
                s.put("selected", selection());
            }
            if (gsoDatagrams > 0) {
                s.put("gso_datagrams", gsoDatagrams);
                s.put("gso_packets", gsoPackets);
            }
            out.println(Json.toJson(obj("summary", s)));
            return;
        }
        out.printf("%d RoCEv2 packet%s%s (UDP port %d) in %d frame%s: %d malformed, %d bad ICRC%n",
                packets, packets == 1 ? "" : "s", selective() ? " listed" : "", port, frames, frames == 1 ? "" : "s",
                malformed, badIcrc);
        if (gsoDatagrams > 0) {
            out.printf("%d UDP GSO super-datagram%s (captured before segmentation) held %d of these packets%n",
                    gsoDatagrams, gsoDatagrams == 1 ? "" : "s", gsoPackets);
        }
        by.forEach((op, n) -> out.printf("  %-34s %6d%n", op, (Integer) n));
    }
}
