package io.jroce.wire;

import io.jroce.testkit.Hex;
import io.jroce.testkit.Json;
import io.jroce.testkit.TestData;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/** The 40 frames of testdata/rocev2-golden.json, parsed once. */
final class GoldenVectors {
    /** One vector; field names follow the JSON. */
    static final class Vector {
        int number;                  // 1-based, = frame number in the pcap
        String name;
        boolean icrcValid;
        int opcode;
        String opcodeName;
        Map<String, Object> bth;
        Map<String, Object> ext;
        int payloadLen;
        Map<String, Object> ipv4;
        Map<String, Object> udp;
        byte[] udpPayload;
        byte[] frame;
        int icrcU32;

        int bth(String key) {
            return (int) num(bth.get(key));
        }

        boolean bthFlag(String key) {
            return bth(key) != 0;
        }

        boolean hasExt(String key) {
            return ext.containsKey(key);
        }

        long ext(String key) {
            Object v = ext.get(key);
            if (v == null) {
                throw new IllegalArgumentException("vector " + number + " has no ext." + key);
            }
            return num(v);
        }

        int srcAddr() {
            return ipv4Address((String) ipv4.get("src"));
        }

        int dstAddr() {
            return ipv4Address((String) ipv4.get("dst"));
        }

        int ipId() {
            return (int) num(ipv4.get("id"));
        }

        /** The 16-bit flags+fragment word: JSON "flags" is the 3-bit flags field (2 = DF); offset 0. */
        int ipFlagsFragment() {
            return (int) num(ipv4.get("flags")) << 13;
        }

        int srcPort() {
            return (int) num(udp.get("src_port"));
        }

        int dstPort() {
            return (int) num(udp.get("dst_port"));
        }

        @Override
        public String toString() {
            return number + " " + name;
        }
    }

    private static List<Vector> all;

    private GoldenVectors() {
    }

    static synchronized List<Vector> all() {
        if (all == null) {
            all = Collections.unmodifiableList(load());
        }
        return all;
    }

    static Vector get(int number) {
        return all().get(number - 1);
    }

    @SuppressWarnings("unchecked")
    private static List<Vector> load() {
        String text;
        try {
            text = Files.readString(TestData.goldenJson(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Map<String, Object> root = Json.object(text);
        List<Vector> out = new ArrayList<>();
        int n = 0;
        for (Object o : (List<Object>) root.get("vectors")) {
            Map<String, Object> m = (Map<String, Object>) o;
            Vector v = new Vector();
            v.number = ++n;
            v.name = (String) m.get("name");
            v.icrcValid = (Boolean) m.get("icrc_valid");
            v.opcode = (int) num(m.get("opcode"));
            v.opcodeName = (String) m.get("opcode_name");
            v.bth = (Map<String, Object>) m.get("bth");
            v.ext = (Map<String, Object>) m.get("ext");
            v.payloadLen = (int) num(m.get("payload_len"));
            v.ipv4 = (Map<String, Object>) m.get("ipv4");
            v.udp = (Map<String, Object>) m.get("udp");
            v.udpPayload = Hex.decode((String) m.get("udp_payload_hex"));
            v.frame = Hex.decode((String) m.get("frame_hex"));
            v.icrcU32 = (int) num(m.get("expected_correct_icrc_u32"));
            out.add(v);
        }
        return out;
    }

    /** JSON numbers are either plain numbers or "0x..." strings. */
    static long num(Object o) {
        if (o instanceof Number) {
            return ((Number) o).longValue();
        }
        if (o instanceof Boolean) {
            return ((Boolean) o) ? 1 : 0;
        }
        String s = ((String) o).trim();
        if (s.startsWith("0x") || s.startsWith("0X")) {
            return Long.parseUnsignedLong(s.substring(2), 16);
        }
        return Long.parseLong(s);
    }

    static int ipv4Address(String dotted) {
        String[] p = dotted.split("\\.");
        int a = 0;
        for (String part : p) {
            a = a << 8 | Integer.parseInt(part);
        }
        return a;
    }
}
