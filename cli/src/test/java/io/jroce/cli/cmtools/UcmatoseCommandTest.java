package io.jroce.cli.cmtools;

import io.jroce.cli.Cli;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.DeviceConfig;
import io.jroce.endpoint.cm.CmAgent;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code jroce ucmatose} server and client, jroce to jroce, over the devices' QP 1 on loopback (127.0.65.0/24). */
class UcmatoseCommandTest {
    private static final Duration T = Duration.ofSeconds(60);

    @Test
    void fourConnectionsAtOnceEachWithTenMessagesBothWays() throws Exception {
        Pair run = serverThenClient("cmatose: starting server",
                args("ucmatose", "-b", "127.0.65.1", "-p", "46501", "-c", "4", "-C", "10", "--timeout", "30"),
                "ucmatose", "-s", "127.0.65.1", "-b", "127.0.65.2", "-p", "46501", "-c", "4", "-C", "10",
                "--timeout", "30", "--counters").succeeded();
        Cli.Result client = run.client();
        Cli.Result sr = run.server();
        assertEquals(List.of("cmatose: starting server", "initiating data transfers", "completing sends", "receiving data transfers",
                "data transfers complete", "cmatose: disconnecting", "disconnected", "test complete", "return status 0"), sr.outLines());
        assertEquals(List.of("cmatose: starting client", "cmatose: connecting", "receiving data transfers", "sending replies",
                "data transfers complete", "test complete", "return status 0"), client.outLines());
        assertEquals("", sr.err(), "nothing failed on the server");
        // the client's device took in at least the server's 4 x 10 one-packet messages
        String device = client.errLines().stream().filter(l -> l.startsWith("counters device ")).findFirst().orElseThrow();
        long in = Long.parseLong(device.replaceAll(".* packets_in=(\\d+) .*", "$1"));
        assertTrue(in >= 40, device);
    }

    @Test
    void withoutMessagesTheConnectionsOnlyComeUpAndGoDown() throws Exception {
        Pair run = serverThenClient("cmatose: starting server",
                args("ucmatose", "-b", "127.0.65.13", "-p", "46504", "-c", "3", "-C", "0", "--timeout", "30"),
                "ucmatose", "-s", "127.0.65.13", "-b", "127.0.65.14", "-p", "46504", "-c", "3", "-S", "0", "--timeout", "30").succeeded();
        Cli.Result client = run.client();
        Cli.Result sr = run.server();
        assertEquals(List.of("cmatose: starting server", "cmatose: disconnecting", "disconnected", "test complete", "return status 0"),
                sr.outLines());
        assertEquals(List.of("cmatose: starting client", "cmatose: connecting", "test complete", "return status 0"), client.outLines());
    }

    @Test
    void largerMessagesOverSeveralPackets() throws Exception {
        Pair run = serverThenClient("cmatose: starting server",
                args("ucmatose", "-b", "127.0.65.11", "--port", "46502", "-c", "2", "-C", "3", "-S", "10000", "--mtu", "1024", "--timeout", "30"),
                "ucmatose", "-s", "127.0.65.11", "--bind", "127.0.65.12", "-p", "46502", "-c", "2", "-C", "3",
                "-S", "10000", "--timeout", "30");
        Cli.Result client = run.client();
        Cli.Result sr = run.server();
        assertEquals(0, client.exit(), client.out() + client.err());
        assertEquals(0, sr.exit(), sr.out() + sr.err());
    }

    @Test
    void noListenerIsOneRejectLineAndExit1() throws Exception {
        noListener("127.0.65.5", "cmatose: event: RDMA_CM_EVENT_REJECTED, error: 8 (REJ INVALID_SERVICE_ID: nothing listens on rdma_cm "
                + "port 46503 at 127.0.65.5) (all 4 connections)",
                "ucmatose", "-s", "127.0.65.5", "-b", "127.0.65.6", "-p", "46503", "-c", "4", "--timeout", "30");
    }

    @Test
    void nobodyAtTheAddressGivesUpAfterTimeout() {
        Cli.Result r = Cli.run("ucmatose", "-s", "127.0.65.7", "-b", "127.0.65.8", "-c", "2", "--timeout", "1");
        assertEquals(1, r.exit(), r.out() + r.err());
        assertEquals(List.of("cmatose: no answer from 127.0.65.7 port 7471: 2 of 2 connections unanswered within --timeout 1 s"), r.errLines());
    }

    @Test
    void aServerWithoutClientsGivesUpAfterTimeout() {
        Cli.Result r = Cli.run("ucmatose", "-b", "127.0.65.9", "-c", "3", "--timeout", "300ms");
        assertEquals(1, r.exit(), r.out() + r.err());
        assertEquals(List.of("cmatose: 3 of 3 connections not established within --timeout 0.3 s"), r.errLines());
    }

    @Test
    void badArgumentsAreOneLineUsageErrors() {
        usage("a server needs -b ADDR or --bind ADDR", "ucmatose");
        usage("invalid -c 0", "ucmatose", "-b", "127.0.65.10", "-c", "0");
        usage("invalid -C -1", "ucmatose", "-b", "127.0.65.10", "-C", "-1");
        usage("invalid -C 65537", "ucmatose", "-b", "127.0.65.10", "-C", "65537");
        usage("invalid -p 0", "ucmatose", "-b", "127.0.65.10", "-p", "0");
        usage("-P ib: only the TCP port space", "ucmatose", "-b", "127.0.65.10", "-P", "ib");
        usage("-f gid", "ucmatose", "-b", "127.0.65.10", "-f", "gid");
        usage("-t 4: our device sends traffic class 0 only", "ucmatose", "-b", "127.0.65.10", "-t", "4");
        usage("-b and --bind name different addresses", "ucmatose", "-b", "127.0.65.10", "--bind", "127.0.65.20");
        usage("'x'", "ucmatose", "-s", "127.0.65.1", "-b", "127.0.65.10", "-S", "x");
        usage("more than the 268435456 allowed", "ucmatose", "-s", "127.0.65.1", "-b", "127.0.65.10", "-c", "1024", "-S", "1m");
        usage("Unknown option", "ucmatose", "-b", "127.0.65.10", "-q");
        // the C tool's spellings of what is offered are accepted: this server starts, then finds no client in time
        Cli.Result accepted = Cli.run("ucmatose", "-b", "127.0.65.10", "-f", "ip", "-P", "tcp", "-t", "0", "-C", "0", "--timeout", "1ms");
        assertEquals(1, accepted.exit(), accepted.err());
    }

    /**
     * The client, again while the server is not listening yet: every connection rejected with reason 8 (RC) or every
     * SIDR_REQ answered with status 1 (UD). The test starts the client once the server printed that it started, so
     * this covers only the moment between that line and its listen.
     */
    static Cli.Result client(String... args) {
        Cli.Result r = null;
        for (int i = 0; i < 100; i++) {
            r = Cli.run(args);
            List<String> failed = r.errLines().stream().filter(l -> l.startsWith("cmatose:") || l.startsWith("udaddy:")).toList();
            boolean notListening = r.exit() == 1 && !failed.isEmpty()
                    && failed.stream().allMatch(l -> l.contains("error: 8 (") || l.contains("error: 1 (SIDR"));
            if (!notListening) return r;
        }
        return r;
    }

    /** The results of one server and its client. */
    record Pair(Cli.Result client, Cli.Result server) {
        /** Both exited 0; the client's message shows the server's output too. */
        Pair succeeded() {
            assertEquals(0, client.exit(), client.out() + client.err() + "\nserver:\n" + server.out() + server.err());
            assertEquals(0, server.exit(), server.out() + server.err());
            return this;
        }
    }

    /** Starts the server ({@code server}), runs the client once the server printed {@code started}, then awaits the server. */
    static Pair serverThenClient(String started, String[] server, String... client) throws Exception {
        Launch s = Launch.start(started, server);
        assertTrue(s.awaitLine(T));
        Cli.Result c = client(client);
        return new Pair(c, s.result(T));
    }

    static String[] args(String... args) {
        return args;
    }

    /**
     * The client ({@code args}) against a device at {@code address} with a connection manager but nothing listening on
     * the port: exit 1, {@code failure} the only line on stderr, "return status 1" the last on stdout.
     */
    static void noListener(String address, String failure, String... args) throws Exception {
        try (Device dev = Device.open(new DeviceConfig(InetAddress.getByName(address)));
             CmAgent agent = CmAgent.open(dev)) {
            Cli.Result r = Cli.run(args);
            assertEquals(1, r.exit(), r.out() + r.err());
            assertEquals(List.of(failure), r.errLines());
            assertEquals("return status 1", r.outLines().get(r.outLines().size() - 1), r.out());
        }
    }

    static void usage(String expect, String... args) {
        Cli.Result r = Cli.run(args);
        assertEquals(2, r.exit(), r.out() + r.err());
        assertEquals(1, r.errLines().size(), r.err());
        assertTrue(r.err().contains(expect), r.err());
    }
}
