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
import io.jroce.wire.pcap.LinkType;
import io.jroce.wire.pcap.PcapFrame;
import io.jroce.wire.pcap.PcapReader;
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
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;

/**
 * {@code jroce inspect CAPTURE.pcap}: decodes every RoCEv2 packet (UDP datagram to port 4791) of a capture,
 * one line per packet, and verifies its ICRC exactly, over the IP header as captured. A UDP GSO
 * super-datagram (several RoCE packets of one size in one datagram, captured before the kernel cut it;
 * {@link GsoSplit}) is shown as its packets, one line each, labelled {@code gso=k/n}, each ICRC checked for
 * the IPv4 ID its segment leaves with.
 */
@Command(name = "inspect",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Decode the RoCEv2 packets (UDP to port 4791) in a pcap or pcapng capture: BTH, extension headers, "
                    + "payload length, and an exact ICRC check over the captured IP header.",
            "A UDP GSO super-datagram (one datagram holding several RoCE packets of equal size back to back, "
                    + "as captured on a veth or bridge before segmentation) is shown as its packets, labelled gso=k/n; "
                    + "packet k's ICRC is checked for the IPv4 ID captured + k, the ID its datagram gets when cut.",
            "Exit status: 0 if every packet is well-formed with a valid ICRC, 1 otherwise, 2 on bad usage "
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

    @Option(names = "--port", paramLabel = "N", defaultValue = "" + RoceV2.UDP_PORT,
            description = "UDP destination port of the RoCEv2 traffic (default: ${DEFAULT-VALUE}).")
    int port;

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
    /** packets per opcode name, in opcode order */
    private final Map<Integer, Integer> byOpcode = new TreeMap<>();
    private long packets;
    private long malformed;
    private long badIcrc;

    @Override
    public Integer call() {
        if (port < 0 || port > 0xFFFF) {
            throw new ParameterException(spec.commandLine(), "--port must be 0..65535, not " + port);
        }
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        String name = spec.qualifiedName();
        if (Files.isDirectory(capture)) {
            err.println(name + ": " + capture + ": is a directory");
            return Main.EXIT_USAGE;
        }
        if (flows || graph != null || flow != null) {
            return FlowInspect.run(capture, port, flows, graph, flow, json ? Json::toJson : null, out, err, name);
        }
        CaptureReader reader;
        try {
            reader = CaptureReader.open(capture);
        } catch (NoSuchFileException e) {
            err.println(name + ": " + capture + ": no such file");
            return Main.EXIT_USAGE;
        } catch (AccessDeniedException e) {
            err.println(name + ": " + capture + ": permission denied");
            return Main.EXIT_USAGE;
        } catch (IOException e) {
            err.println(name + ": " + Main.describe(e));
            return Main.EXIT_USAGE;
        }
        String readError = null;
        long frames = 0;
        try (reader) {
            // a pcap file has one link type; a pcapng file has one per interface, checked per frame
            if (reader instanceof PcapReader pcap && !LinkType.isSupported(pcap.linkType())) {
                err.println(name + ": " + capture + ": link type " + LinkType.name(pcap.linkType())
                        + " not supported (Ethernet, Linux cooked SLL/SLL2, raw IP and loopback are)");
                return Main.EXIT_USAGE;
            }
            for (PcapFrame f; (f = reader.next()) != null; ) {
                frames = f.frameNumber();
                if (!f.isUdp() || f.dstPort() != port) {
                    continue;
                }
                int segment = superDatagramSegment(f);
                if (segment == 0) {
                    Map<String, Object> rec = inspect(f, f.udpPayloadOffset(), f.udpPayloadLength(), -1, 0);
                    out.println(json ? Json.toJson(rec) : text(rec));
                    continue;
                }
                int len = f.udpPayloadLength();
                int n = (len + segment - 1) / segment;
                gsoDatagrams++;
                gsoPackets += n;
                for (int k = 0; k < n; k++) {
                    int off = f.udpPayloadOffset() + k * segment;
                    Map<String, Object> rec = inspect(f, off, Math.min(segment, len - k * segment), k, n);
                    out.println(json ? Json.toJson(rec) : text(rec));
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
        return key.equals("kind") || key.equals("nak") || key.equals("msg") || key.equals("reason_name");
    }

    private static boolean onlyWhenTrue(String key) {
        return key.equals("migreq") || key.equals("fecn") || key.equals("becn");
    }

    /**
     * {@code 16  192.0.2.10:57236 > 192.0.2.11:4791  RC_RDMA_READ_REQUEST  dqpn=0x0000d2 psn=0x123456 ...}.
     */
    static String text(Map<String, Object> r) {
        StringBuilder sb = new StringBuilder(160);
        sb.append(String.format("%5d  %21s > %-21s  %-33s",
                (Long) r.get("frame"),
                endpoint((String) r.get("src"), (Integer) r.get("src_port")),
                endpoint((String) r.get("dst"), (Integer) r.get("dst_port")),
                r.get("opcode") == null ? "-" : r.get("opcode")));
        for (Map.Entry<String, Object> e : r.entrySet()) {
            String k = e.getKey();
            if (k.equals("frame") || k.equals("src") || k.equals("src_port") || k.equals("dst")
                    || k.equals("dst_port") || k.equals("opcode")) {
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
                if (!first) {
                    sb.append(' ');
                }
                first = false;
                appendText(sb, (String) e.getKey(), e.getValue());
            }
            sb.append(']');
            return;
        }
        if (!bare(key) && !onlyWhenTrue(key)) {
            sb.append(key).append('=');
        }
        if (onlyWhenTrue(key)) {
            sb.append(key);
        } else if (v instanceof Unsigned u) {
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

    private void printSummary(PrintWriter out, long frames) {
        Map<String, Object> by = new LinkedHashMap<>();
        byOpcode.forEach((code, n) -> by.put(opcodeName(code), n));
        if (json) {
            Map<String, Object> s = obj("packets", packets, "by_opcode", by, "malformed", malformed,
                    "bad_icrc", badIcrc, "frames", frames, "port", port);
            if (gsoDatagrams > 0) {
                s.put("gso_datagrams", gsoDatagrams);
                s.put("gso_packets", gsoPackets);
            }
            out.println(Json.toJson(obj("summary", s)));
            return;
        }
        out.printf("%d RoCEv2 packet%s (UDP port %d) in %d frame%s: %d malformed, %d bad ICRC%n",
                packets, packets == 1 ? "" : "s", port, frames, frames == 1 ? "" : "s", malformed, badIcrc);
        if (gsoDatagrams > 0) {
            out.printf("%d UDP GSO super-datagram%s (captured before segmentation) held %d of these packets%n",
                    gsoDatagrams, gsoDatagrams == 1 ? "" : "s", gsoPackets);
        }
        by.forEach((op, n) -> out.printf("  %-34s %6d%n", op, (Integer) n));
    }
}
