package io.jroce.it;

import io.jroce.wire.pcap.CaptureReader;
import io.jroce.wire.pcap.PcapFrame;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Where jroce's UDP GSO super-datagrams are cut, and that every cut packet is exact. Two jroce perf
 * processes in two network namespaces joined by a veth pair (MTU 9000) run a WRITE bandwidth test at RoCE
 * MTU 4096 with GSO on, while tcpdump captures on the sender's veth:
 * <ul>
 * <li>with the veth's UDP segmentation offload (the default) a super-datagram stays whole on the veth: the
 * capture holds datagrams far above the 9000-byte MTU, which {@code jroce inspect} shows as GSO
 * super-datagrams, every contained packet's ICRC exact for IPv4 ID captured + k;</li>
 * <li>with {@code ethtool -K DEV tx-udp-segmentation off} the kernel cuts them before the veth: the capture
 * holds one datagram per RoCE packet, segment k with IPv4 ID k, and {@code jroce inspect} checks every ICRC
 * exactly over the captured header: this is what a NIC or rdma_rxe receives.</li>
 * </ul>
 * Both captures must also pass Wireshark (no malformed packet, no expert warning or error). Needs root, ip, ethtool,
 * tcpdump and tshark: skipped with a message without them, a failure in CI (CI set).
 */
class GsoSegmentationIT {
    private static final String NS_A = "jroce-gso-a";
    private static final String NS_B = "jroce-gso-b";
    private static final String DEV_A = "jgso-a";
    private static final String ADDR_A = "10.197.0.1";
    private static final String ADDR_B = "10.197.0.2";
    private static final int SIZE = 262_144;

    @TempDir
    Path work;

    @BeforeAll
    static void namespaces() throws Exception {
        boolean ok = Netns.isRoot();
        for (String tool : new String[] {"ip", "ethtool", "tcpdump", "tshark"}) ok &= Netns.onPath(tool);
        if (System.getenv("CI") != null) {
            assertTrue(ok, "CI must run as root with ip, ethtool, tcpdump and tshark installed");
        }
        assumeTrue(ok, "needs root, ip, ethtool, tcpdump and tshark: skipped on this machine");
        teardown();
        Netns.sh("ip netns add " + NS_A);
        Netns.sh("ip netns add " + NS_B);
        Netns.sh("ip link add " + DEV_A + " netns " + NS_A + " mtu 9000 type veth peer name jgso-b netns " + NS_B + " mtu 9000");
        Netns.sh("ip -n " + NS_A + " addr add " + ADDR_A + "/24 dev " + DEV_A);
        Netns.sh("ip -n " + NS_B + " addr add " + ADDR_B + "/24 dev jgso-b");
        for (String ns : new String[] {NS_A, NS_B}) Netns.sh("ip -n " + ns + " link set lo up");
        Netns.sh("ip -n " + NS_A + " link set " + DEV_A + " up");
        Netns.sh("ip -n " + NS_B + " link set jgso-b up");
    }

    @AfterAll
    static void teardown() throws Exception {
        Netns.run(List.of("ip", "netns", "del", NS_A), 20);
        Netns.run(List.of("ip", "netns", "del", NS_B), 20);
    }

    @Test
    void superDatagramsStayWholeOnAVethWithTheOffloadAndAreCutExactlyWithout() throws Exception {
        // 1. the offload on (the veth default): the capture shows super-datagrams
        Netns.sh("ip netns exec " + NS_A + " ethtool -K " + DEV_A + " tx-udp-segmentation on");
        Path whole = capture("offload-on");
        List<PcapFrame> frames = CaptureReader.readAll(whole);
        long big = frames.stream().filter(f -> f.isUdp() && f.udpLength() > 9000).count();
        assertTrue(big > 0, "the veth carried whole super-datagrams (UDP datagrams above its 9000-byte MTU)");
        String inspect = inspect(whole);
        assertTrue(inspect.contains("0 malformed, 0 bad ICRC"), inspect);
        assertTrue(inspect.matches("(?s).*\\n" + big + " UDP GSO super-datagrams \\(captured before segmentation\\).*"), inspect);
        assertTrue(inspect.contains("gso=14/15 ip_id=14"), "a full run at MTU 4096 is 15 packets, the last with ID 14\n" + tail(inspect));
        wiresharkAccepts(whole);

        // 2. the offload off: the kernel cuts before the veth, segment k leaves with IPv4 ID k
        Netns.sh("ip netns exec " + NS_A + " ethtool -K " + DEV_A + " tx-udp-segmentation off");
        try {
            Path cut = capture("offload-off");
            frames = CaptureReader.readAll(cut);
            TreeSet<Integer> ids = new TreeSet<>();
            for (PcapFrame f : frames) {
                assertTrue(f.isUdp() && f.udpLength() <= 4096 + 8 + 28 + 4, "one RoCE packet per datagram: " + f);
                if (f.srcAddress().getHostAddress().equals(ADDR_A)) ids.add(f.ipId());
            }
            assertTrue(ids.containsAll(List.of(0, 1, 2, 13, 14)), "segment k has IPv4 ID k: IDs seen " + ids);
            inspect = inspect(cut);
            assertTrue(inspect.contains("0 malformed, 0 bad ICRC"), inspect);
            assertFalse(inspect.contains("super-datagram"), tail(inspect));
            wiresharkAccepts(cut);
            System.out.println("GsoSegmentationIT: offload on: " + big + " super-datagrams on the veth; offload off: "
                    + frames.size() + " datagrams, IPv4 IDs " + ids.first() + ".." + ids.last() + ", every ICRC exact");
        } finally {
            Netns.sh("ip netns exec " + NS_A + " ethtool -K " + DEV_A + " tx-udp-segmentation on");
        }
    }

    /** Runs a 20 x 256 KiB WRITE bandwidth test A -> B with GSO on, capturing on A's veth; checks both ends' counters. */
    private Path capture(String name) throws Exception {
        Path pcap = work.resolve(name + ".pcap");
        Process tcpdump = Netns.start(work, NS_A, name + "-tcpdump", "tcpdump", "-i", DEV_A, "-n", "-s", "0", "-U", "-w",
                pcap.toString(), "udp", "port", "4791");
        try {
            awaitListening(name + "-tcpdump.err", tcpdump);
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            String jar = Jroce.jar().toAbsolutePath().toString();
            // --warmup 0: the counters and the frames checked are the test's own traffic, none of the JIT warm-up's
            Process server = Netns.start(work, NS_B, name + "-server", java, "-jar", jar, "perf", "write", "--bind", ADDR_B,
                    "-m", "4096", "-s", String.valueOf(SIZE), "-n", "20", "--gso", "--counters", "--timeout", "60", "--warmup", "0");
            // the client retries its TCP connection until the server listens (--timeout)
            Process client = Netns.start(work, NS_A, name + "-client", java, "-jar", jar, "perf", "write", ADDR_B, "--bind", ADDR_A,
                    "-m", "4096", "-s", String.valueOf(SIZE), "-n", "20", "--gso", "--counters", "--timeout", "60", "--warmup", "0");
            try {
                int rcClient = Netns.waitFor(client, 120);
                int rcServer = Netns.waitFor(server, 30);
                String out = Netns.output(work, name + "-client") + Netns.output(work, name + "-server");
                assertEquals(0, rcClient, out);
                assertEquals(0, rcServer, out);
                assertTrue(out.matches("(?s).*counters device " + ADDR_A + ":[^\\n]* gso_datagrams=[1-9].*"), "the client sent super-datagrams\n" + out);
                assertTrue(out.matches("(?s).*counters device " + ADDR_B + ":[^\\n]* drop_icrc=0 .*"), out);
                assertFalse(out.matches("(?s).*counters device " + ADDR_B + ":[^\\n]* drop_[a-z_]+=[1-9].*"), "the receiver dropped nothing\n" + out);
            } finally {
                client.destroyForcibly();
                server.destroyForcibly();
            }
        } finally {
            tcpdump.destroy(); // SIGTERM: tcpdump writes what it has and exits
            Netns.waitFor(tcpdump, 10);
        }
        assertTrue(Files.size(pcap) > 24, "tcpdump wrote a capture");
        return pcap;
    }

    private void awaitListening(String errFile, Process tcpdump) throws Exception {
        Path err = work.resolve(errFile);
        if (Verbs.waitFor(() -> !tcpdump.isAlive() || listening(err), 20_000) && tcpdump.isAlive()) return;
        throw new AssertionError("tcpdump did not start listening: " + (Files.exists(err) ? Files.readString(err) : "no output"));
    }

    private static boolean listening(Path err) {
        try {
            return Files.exists(err) && Files.readString(err).contains("listening on");
        } catch (java.io.IOException e) {
            return false;
        }
    }

    private String inspect(Path pcap) throws Exception {
        try (Jroce.Run run = Jroce.start(work, "inspect", pcap.toString())) { // output to files: it is long
            int rc = run.await(120);
            assertEquals(0, rc, "jroce inspect exit status 0 (every packet well-formed, every ICRC exact)\n" + tail(run.out()) + run.err());
            return run.out();
        }
    }

    private static void wiresharkAccepts(Path pcap) throws Exception {
        String bad = Netns.sh("tshark -r " + pcap + " -d udp.port==4791,infiniband --disable-protocol rpcordma"
                + " -Y '_ws.malformed || _ws.expert.severity >= " + WiresharkVerdictIT.PI_WARN + "' 2>/dev/null");
        assertEquals("", bad.strip(), "tshark reports malformed packets or expert warnings/errors in " + pcap.getFileName());
        String count = Netns.sh("tshark -r " + pcap + " -d udp.port==4791,infiniband -Y infiniband 2>/dev/null | wc -l").strip();
        assertTrue(Integer.parseInt(count) > 0, "tshark decodes the capture as InfiniBand");
    }

    private static String tail(String s) {
        return s.length() > 3000 ? "..." + s.substring(s.length() - 3000) : s;
    }
}
