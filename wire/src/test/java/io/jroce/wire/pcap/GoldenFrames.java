package io.jroce.wire.pcap;

import io.jroce.testkit.Hex;
import io.jroce.testkit.Json;
import io.jroce.testkit.TestData;

import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The per-frame IPv4/UDP values and frame bytes of testdata/rocev2-golden.json, in frame order. */
final class GoldenFrames {
    private GoldenFrames() {
    }

    record Golden(String src, String dst, int ipId, int flags, int ttl, int tos, int totalLength,
                  int srcPort, int dstPort, int udpLength, int udpChecksum, byte[] frame) {
    }

    @SuppressWarnings("unchecked")
    static List<Golden> load() throws IOException {
        Map<String, Object> root = Json.object(Files.readString(TestData.goldenJson()));
        List<Golden> out = new ArrayList<>();
        for (Object o : (List<Object>) root.get("vectors")) {
            Map<String, Object> v = (Map<String, Object>) o;
            Map<String, Object> ip = (Map<String, Object>) v.get("ipv4");
            Map<String, Object> udp = (Map<String, Object>) v.get("udp");
            out.add(new Golden((String) ip.get("src"), (String) ip.get("dst"), num(ip, "id"), num(ip, "flags"),
                    num(ip, "ttl"), num(ip, "tos"), num(ip, "total_length"), num(udp, "src_port"), num(udp, "dst_port"),
                    num(udp, "length"), num(udp, "checksum"), Hex.decode((String) v.get("frame_hex"))));
        }
        return out;
    }

    private static int num(Map<String, Object> m, String key) {
        return ((Number) m.get(key)).intValue();
    }
}
