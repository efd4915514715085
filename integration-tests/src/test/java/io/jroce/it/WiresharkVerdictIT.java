package io.jroce.it;

import io.jroce.wire.pcap.PcapFrame;
import io.jroce.wire.pcap.PcapReader;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Two real jroce processes (127.0.12.1 and 127.0.12.2: pingpong, perf write, pingpong --ud, rping over the
 * connection manager) under a kernel capture
 * ({@code tcpdump -i lo}, which also sees each node warm up by talking to itself in {@code Device.open}); the capture must satisfy Wireshark (every datagram decodes as InfiniBand, no malformed
 * packet, no expert warning or error; the PSNs per QP direction move by one per packet, modulo retransmission),
 * {@code jroce inspect} (exact ICRC with the IPv4 header the kernel really wrote, so ID 0 + DF holds on this
 * kernel), and must agree packet for packet with jroce's own {@code --pcap} recordings.
 *
 * <p>Skipped, with a message, when not root or tcpdump/tshark are missing, unless the CI variable is set: then
 * missing tools fail the test.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class WiresharkVerdictIT {
    static final String A = "127.0.12.1";
    static final String B = "127.0.12.2";
    /** Wireshark's PI_WARN (0x00600000); PI_ERROR is 0x00800000. */
    static final int PI_WARN = 0x00600000;

    @TempDir
    Path work;

    @Test
    void kernelCaptureIsCleanInfinibandAndMatchesJroceRecordings() throws Exception {
        requireTools();
        String[][][] runs = {
            {{"pingpong", "--bind", A, "-n", "100", "-s", "1024", "--pcap", "a1.pcap"}, {"pingpong", A, "--bind", B, "-n", "100", "-s", "1024", "--pcap", "b1.pcap"}},
            {{"perf", "write", "--bind", A, "-n", "200", "-s", "16384", "--pcap", "a2.pcap"}, {"perf", "write", A, "--bind", B, "-n", "200", "-s", "16384", "--pcap", "b2.pcap"}},
            // UD: ibv_ud_pingpong's exchange, then UD SENDs with DETH
            {{"pingpong", "--ud", "--bind", A, "-n", "150", "-s", "512", "--pcap", "a3.pcap"}, {"pingpong", "--ud", A, "--bind", B, "-n", "150", "-s", "512", "--pcap", "b3.pcap"}},
            // the connection manager (CM MADs in UD SENDs to QP 1: REQ, REP, RTU, DREQ, DREP), then rping's RC traffic
            {{"rping", "-s", "-d", "-S", "64", "--bind", A, "--pcap", "a4.pcap"}, {"rping", "-c", "-a", A, "-C", "40", "-S", "64", "-V", "--bind", B, "--pcap", "b4.pcap"}},
        };
        for (int r = 0; r < runs.length; r++) {
            Path cap = work.resolve("kernel" + (r + 1) + ".pcap");
            Path log = work.resolve("tcpdump" + (r + 1) + ".log");
            Process tcpdump = new ProcessBuilder("tcpdump", "-i", "lo", "-n", "-U", "-s", "0", "-w", cap.toString(), "udp port 4791 and (host " + A + " or host " + B + ")")
                    .redirectErrorStream(true).redirectOutput(log.toFile()).start();
            try {
                assertTrue(Verbs.waitFor(() -> read(log).contains("listening on") || !tcpdump.isAlive(), 20_000) && tcpdump.isAlive(),
                        "tcpdump did not start: " + read(log));
                run(String.valueOf(31611 + r), runs[r][0], runs[r][1]);
                // tcpdump may still have packets in its kernel ring: wait until the file holds all node A saw
                int want = readPcap(work.resolve("a" + (r + 1) + ".pcap")).size();
                Verbs.waitFor(() -> count(cap) >= want, 20_000);
            } finally {
                tcpdump.destroy(); // SIGTERM: tcpdump flushes and closes the file
                if (!tcpdump.waitFor(20, TimeUnit.SECONDS)) {
                    tcpdump.destroyForcibly();
                    fail("tcpdump did not exit");
                }
            }
            System.out.println(runs[r][0][0] + ": " + read(log).strip().replace('\n', ' '));
            verify(cap, "a" + (r + 1) + ".pcap", "b" + (r + 1) + ".pcap");
        }
    }

    private void verify(Path cap, String aPcap, String bPcap) throws Exception {
        // ---- Wireshark's verdict ----------------------------------------------------------------------
        String bad = sh(60, "tshark", "-r", cap.toString(), "-d", "udp.port==4791,infiniband", "--disable-protocol", "rpcordma",
                "-Y", "_ws.malformed || _ws.expert.severity >= " + PI_WARN);
        assertEquals("", bad.strip(), "tshark reports malformed packets or expert warnings/errors");
        String fields = sh(60, "tshark", "-r", cap.toString(), "-d", "udp.port==4791,infiniband", "--disable-protocol", "rpcordma",
                "-T", "fields", "-E", "separator=|", "-e", "frame.number", "-e", "ip.src", "-e", "frame.protocols",
                "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.psn", "-e", "infiniband.bth.destqp", "-e", "ip.dst");
        List<String> all = fields.lines().filter(l -> !l.isBlank()).toList();
        // each node's warm-up (Device.open exchanges packets with itself over its own socket) is in the kernel
        // capture: Wireshark's verdict above covers it; the PSN and --pcap comparisons below are about the
        // traffic between the nodes
        List<String> lines = all.stream().filter(l -> { String[] f = l.split("\\|", -1); return !f[1].equals(f[6]); }).toList();
        Map<String, Long> warmUp = all.stream().map(l -> l.split("\\|", -1)).filter(f -> f[1].equals(f[6]))
                .collect(java.util.stream.Collectors.groupingBy(f -> f[1], java.util.TreeMap::new, java.util.stream.Collectors.counting()));
        assertEquals(List.of(A, B), List.copyOf(warmUp.keySet()), "each node's warm-up in the kernel capture: " + warmUp);
        assertTrue(lines.size() > 200, "too few packets captured: " + lines.size());
        Map<String, Integer> lastPsn = new HashMap<>();
        int jumps = 0;
        int backwards = 0;
        for (String l : lines) {
            String[] f = l.split("\\|", -1);
            assertTrue(f[2].contains("infiniband"), "frame " + f[0] + " is not decoded as InfiniBand: " + l);
            assertTrue(!f[3].isEmpty() && !f[4].isEmpty() && !f[5].isEmpty(), "frame " + f[0] + " lacks BTH fields: " + l);
            int op = Integer.decode(f[3]);
            int psn = Integer.decode(f[4]);
            // requests and responses run in separate PSN spaces per QP direction; both are keyed by destination QP
            String key = f[1] + ">" + f[5] + (op >= 0x0D && op <= 0x12 ? "/resp" : "/req");
            Integer prev = lastPsn.put(key, psn);
            if (prev != null) {
                int d = (psn - prev) & 0xFFFFFF;
                if (op >= 0x0D && op <= 0x12) {
                    if (d > 0x800000) backwards++; // a response may repeat (coalesced ACK, duplicate) but rarely goes back
                } else if (d != 1) {
                    if (d > 0x800000 || d == 0) backwards++; else jumps++;
                }
            }
        }
        System.out.printf("tshark: %d frames, all InfiniBand, %d QP directions, %d forward PSN jumps (READ/ack spans), %d rewinds%n",
                lines.size(), lastPsn.size(), jumps, backwards);
        assertTrue(backwards <= lines.size() / 100, "too many PSN rewinds (retransmissions) on a clean loopback: " + backwards);

        // ---- jroce inspect: exact ICRC on the kernel's own IPv4 headers --------------------------------
        Jroce.Run inspect = Jroce.start(work, "inspect", cap.toString());
        assertEquals(0, inspect.await(60), inspect.describe());
        assertTrue(inspect.out().contains("0 malformed, 0 bad ICRC"), inspect.describe());

        // ---- jroce's own recordings agree with the kernel capture ----------------------------------------
        Map<String, List<byte[]>> kernel = byDirection(readPcap(cap).stream().filter(p -> !p.src().equals(p.dst())).toList());
        for (String node : new String[] {"a", "b"}) {
            List<Packet> own = readPcap(work.resolve(node.equals("a") ? aPcap : bPcap));
            Map<String, List<byte[]>> mine = byDirection(own);
            assertEquals(2, kernel.size(), "kernel capture directions: " + kernel.keySet());
            assertEquals(kernel.keySet(), mine.keySet(), node + ": directions");
            for (String dir : kernel.keySet()) {
                List<byte[]> k = kernel.get(dir);
                List<byte[]> m = mine.get(dir);
                assertEquals(k.size(), m.size(), node + " " + dir + ": packet count (kernel vs --pcap)");
                for (int i = 0; i < k.size(); i++) {
                    if (!Arrays.equals(k.get(i), m.get(i))) fail(node + " " + dir + ": packet " + i + " differs between the kernel capture and --pcap");
                }
            }
            System.out.printf("node %s --pcap agrees with the kernel capture: %s%n", node,
                    mine.entrySet().stream().map(e -> e.getKey() + " " + e.getValue().size()).toList());
        }
    }

    private void run(String port, String[] server, String[] client) throws Exception {
        String[] s = Arrays.copyOf(server, server.length + 2);
        s[server.length] = "-p";
        s[server.length + 1] = port;
        String[] c = Arrays.copyOf(client, client.length + 2);
        c[client.length] = "-p";
        c[client.length + 1] = port;
        try (Jroce.Run srv = Jroce.start(work, s)) {
            if (server[0].equals("rping")) {
                // no TCP listener to retry against: a REQ before the server listens gets REJ 8 (as with rping), so
                // the client starts once the server's -d output says it listens
                assertTrue(Verbs.waitFor(() -> srv.out().contains("rdma_listen") || !srv.process.isAlive(), 60_000)
                        && srv.process.isAlive(), "rping server did not listen: " + srv.describe());
            }
            runClient(srv, c);
        }
    }

    private void runClient(Jroce.Run srv, String[] c) throws Exception {
        try (Jroce.Run cli = Jroce.start(work, c)) {
            assertEquals(0, cli.await(90), cli.describe());
            assertEquals(0, srv.await(30), srv.describe());
        }
    }

    private static void requireTools() throws Exception {
        boolean ci = System.getenv("CI") != null;
        List<String> missing = new ArrayList<>();
        for (String tool : new String[] {"tcpdump", "tshark"}) {
            if (!onPath(tool)) missing.add(tool);
        }
        String user = System.getProperty("user.name");
        boolean root = "root".equals(user) || sh(10, "id", "-u").strip().equals("0");
        if (!root) missing.add("root (capturing on lo needs it; running as " + user + ")");
        if (missing.isEmpty()) return;
        String msg = "WiresharkVerdictIT needs " + String.join(", ", missing);
        if (ci) fail(msg + " — in CI (CI is set) missing tools are an error; .ci/run installs them");
        Assumptions.abort(msg + " — skipped (set CI to make this a failure)");
    }

    private static boolean onPath(String tool) {
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
            if (Files.isExecutable(Path.of(dir, tool))) return true;
        }
        return Files.isExecutable(Path.of("/usr/sbin", tool)) || Files.isExecutable(Path.of("/sbin", tool));
    }

    private static String sh(int seconds, String... cmd) throws IOException, InterruptedException {
        Path errFile = Files.createTempFile("sh-", ".err");
        Process p = new ProcessBuilder(cmd).redirectError(errFile.toFile()).start();
        ByteArrayOutputStream bo = new ByteArrayOutputStream();
        Thread t = new Thread(() -> {
            try {
                p.getInputStream().transferTo(bo);
            } catch (IOException ignored) {
                // process ended
            }
        });
        t.start();
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail(String.join(" ", cmd) + " did not finish in " + seconds + " s");
        }
        t.join(5_000);
        String out = bo.toString(StandardCharsets.UTF_8);
        String err = read(errFile);
        Files.deleteIfExists(errFile);
        if (p.exitValue() != 0) fail(String.join(" ", cmd) + " exited " + p.exitValue() + ":\n" + out + err);
        return out;
    }

    /** Packets between the nodes (not a node's warm-up with itself) in the capture so far. */
    private static int count(Path cap) {
        try {
            return (int) readPcap(cap).stream().filter(p -> !p.src().equals(p.dst())).count();
        } catch (IOException | RuntimeException e) {
            return -1; // being written
        }
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            return "";
        }
    }

    record Packet(String src, String dst, byte[] udpPayload) {
    }

    private static Map<String, List<byte[]>> byDirection(List<Packet> ps) {
        Map<String, List<byte[]>> m = new java.util.TreeMap<>();
        for (Packet p : ps) m.computeIfAbsent(p.src() + ">" + p.dst(), k -> new ArrayList<>()).add(p.udpPayload());
        return m;
    }

    /** The IPv4 UDP datagrams of a capture, read with the project's pcap reader (any link type it knows). */
    static List<Packet> readPcap(Path file) throws IOException {
        List<Packet> out = new ArrayList<>();
        for (PcapFrame f : PcapReader.readAll(file)) {
            if (!f.isUdp() || f.ipVersion() != 4) continue;
            if (f.isTruncated()) throw new IOException("truncated packet in " + file + ": " + f);
            byte[] payload = Arrays.copyOfRange(f.data(), f.udpPayloadOffset(), f.udpPayloadOffset() + f.udpPayloadLength());
            out.add(new Packet(f.srcAddress().getHostAddress(), f.dstAddress().getHostAddress(), payload));
        }
        return out;
    }
}
