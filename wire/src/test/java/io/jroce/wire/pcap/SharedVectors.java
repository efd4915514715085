package io.jroce.wire.pcap;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Locates the read-only shared folder (golden vectors) and reads the few JSON fields the tests need. */
final class SharedVectors {
    private SharedVectors() {
    }

    /** {@code -Djroce.shared} (set by surefire), else ../shared or ../../shared from the working directory. */
    static Path dir() {
        String prop = System.getProperty("jroce.shared");
        if (prop != null && Files.isDirectory(Paths.get(prop, "vectors"))) {
            return Paths.get(prop);
        }
        for (String c : new String[] {"../shared", "../../shared", "../../../shared"}) {
            Path p = Paths.get(c).toAbsolutePath().normalize();
            if (Files.isDirectory(p.resolve("vectors"))) {
                return p;
            }
        }
        throw new IllegalStateException("shared folder not found; set -Djroce.shared=/path/to/shared");
    }

    static Path golden() {
        return dir().resolve("vectors/rocev2-golden.pcap");
    }

    /** The per-vector IPv4/UDP values and frame bytes from rocev2-golden.json, in frame order. */
    record Golden(String src, String dst, int ipId, int flags, int ttl, int tos, int totalLength,
                  int srcPort, int dstPort, int udpLength, int udpChecksum, byte[] frame) {
    }

    static List<Golden> goldenJson() throws Exception {
        String json = Files.readString(dir().resolve("vectors/rocev2-golden.json"));
        Matcher ip = Pattern.compile("\"ipv4\": \\{\\s*\"src\": \"([^\"]+)\",\\s*\"dst\": \"([^\"]+)\",\\s*\"id\": (\\d+),"
                + "\\s*\"flags\": (\\d+),\\s*\"df\": \\w+,\\s*\"ttl\": (\\d+),\\s*\"tos\": (\\d+),\\s*\"total_length\": (\\d+)")
                .matcher(json);
        Matcher udp = Pattern.compile("\"udp\": \\{\\s*\"src_port\": (\\d+),\\s*\"dst_port\": (\\d+),"
                + "\\s*\"length\": (\\d+),\\s*\"checksum\": (\\d+)").matcher(json);
        Matcher hex = Pattern.compile("\"frame_hex\": \"([0-9a-f]+)\"").matcher(json);
        List<Golden> out = new ArrayList<>();
        while (ip.find()) {
            if (!udp.find(ip.end()) || !hex.find(ip.end())) {
                throw new IllegalStateException("rocev2-golden.json: unexpected layout");
            }
            out.add(new Golden(ip.group(1), ip.group(2), Integer.parseInt(ip.group(3)), Integer.parseInt(ip.group(4)),
                    Integer.parseInt(ip.group(5)), Integer.parseInt(ip.group(6)), Integer.parseInt(ip.group(7)),
                    Integer.parseInt(udp.group(1)), Integer.parseInt(udp.group(2)), Integer.parseInt(udp.group(3)),
                    Integer.parseInt(udp.group(4)), hex(hex.group(1))));
        }
        return out;
    }

    static byte[] hex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return b;
    }
}
