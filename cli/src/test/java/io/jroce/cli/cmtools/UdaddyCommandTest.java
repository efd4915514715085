package io.jroce.cli.cmtools;

import io.jroce.cli.Cli;
import io.jroce.cli.cmtools.UcmatoseCommandTest.Pair;
import org.junit.jupiter.api.Test;

import java.util.List;

import static io.jroce.cli.cmtools.UcmatoseCommandTest.args;
import static io.jroce.cli.cmtools.UcmatoseCommandTest.noListener;
import static io.jroce.cli.cmtools.UcmatoseCommandTest.serverThenClient;
import static io.jroce.cli.cmtools.UcmatoseCommandTest.usage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code jroce udaddy} server and client, jroce to jroce, over the devices' QP 1 on loopback (127.0.65.0/24). */
class UdaddyCommandTest {
    @Test
    void twoUdQpsResolvedBySidrEachWithTenMessagesBothWays() throws Exception {
        Pair run = serverThenClient("udaddy: starting server",
                args("udaddy", "-b", "127.0.65.101", "--port", "46540", "-c", "2", "--timeout", "30", "--counters"),
                "udaddy", "-s", "127.0.65.101", "-b", "127.0.65.102", "--port", "46540", "-c", "2",
                "--timeout", "30", "--counters").succeeded();
        Cli.Result client = run.client();
        Cli.Result sr = run.server();
        assertEquals(List.of("udaddy: starting server", "receiving data transfers", "sending replies", "data transfers complete",
                "test complete", "return status 0"), sr.outLines());
        assertEquals(List.of("udaddy: starting client", "udaddy: connecting", "initiating data transfers", "receiving data transfers",
                "data transfers complete", "test complete", "return status 0"), client.outLines());
        // each side took in at least the other's 2 x 10 messages, none refused for its Q_Key or for want of a receive
        for (Cli.Result r : List.of(client, sr)) {
            String device = r.errLines().stream().filter(l -> l.startsWith("counters device ")).findFirst().orElseThrow();
            assertTrue(device.contains(" drop_qkey=0 ") && device.contains(" drop_no_receive=0 "), device);
            assertTrue(Long.parseLong(device.replaceAll(".* packets_in=(\\d+) .*", "$1")) >= 20, device);
        }
    }

    @Test
    void messagesAsLargeAsThePathMtu() throws Exception {
        serverThenClient("udaddy: starting server",
                args("udaddy", "-b", "127.0.65.103", "--port", "46541", "-C", "4", "-S", "1024", "--mtu", "1024", "--timeout", "30"),
                "udaddy", "-s", "127.0.65.103", "--bind", "127.0.65.104", "--port", "46541", "-C", "4", "-S", "1k",
                "--mtu", "1024", "-P", "udp", "-p", "0x0111", "--timeout", "30").succeeded();
    }

    @Test
    void fewerMessagesThanExpectedEndAfterTimeoutWithoutProgress() throws Exception {
        Pair run = serverThenClient("udaddy: starting server",
                args("udaddy", "-b", "127.0.65.111", "--port", "46543", "-C", "10", "--timeout", "2"),
                "udaddy", "-s", "127.0.65.111", "-b", "127.0.65.112", "--port", "46543", "-C", "5", "--timeout", "2");
        Cli.Result client = run.client();
        Cli.Result sr = run.server();
        assertEquals(1, sr.exit(), sr.out() + sr.err());
        assertEquals(List.of("udaddy: received 5 of 10 messages, then nothing for 2 s"), sr.errLines());
        assertEquals(1, client.exit(), client.out() + client.err());
        assertEquals(List.of("udaddy: received 0 of 5 messages, then nothing for 2 s"), client.errLines());
    }

    @Test
    void noListenerIsOneUnreachableLineAndExit1() throws Exception {
        noListener("127.0.65.105", "udaddy: event: RDMA_CM_EVENT_UNREACHABLE, error: 1 (SIDR_REP status 1, service ID not supported: "
                + "nothing listens on UDP-port-space port 46542 at 127.0.65.105) (all 2 connections)",
                "udaddy", "-s", "127.0.65.105", "-b", "127.0.65.106", "--port", "46542", "-c", "2", "--timeout", "30");
    }

    @Test
    void nobodyAtTheAddressGivesUpAfterTimeout() {
        Cli.Result r = Cli.run("udaddy", "-s", "127.0.65.107", "-b", "127.0.65.108", "--timeout", "500ms");
        assertEquals(1, r.exit(), r.out() + r.err());
        assertEquals(List.of("udaddy: no answer from 127.0.65.107 port 7174: 1 of 1 connections unanswered within --timeout 0.5 s"), r.errLines());
    }

    @Test
    void badArgumentsAreOneLineUsageErrors() {
        usage("a server needs -b ADDR or --bind ADDR", "udaddy");
        usage("message_size 2000 is larger than active mtu 1024", "udaddy", "-b", "127.0.65.110", "-S", "2000", "--mtu", "1024");
        usage("message_size 4097 is larger than active mtu 4096", "udaddy", "-s", "127.0.65.101", "-b", "127.0.65.110", "-S", "4097");
        usage("-P ipoib: only the UDP port space", "udaddy", "-b", "127.0.65.110", "-P", "ipoib");
        usage("-p 0x0106: only the UDP port space (0x0111)", "udaddy", "-b", "127.0.65.110", "-p", "0x0106");
        usage("invalid --port 70000", "udaddy", "-b", "127.0.65.110", "--port", "70000");
        usage("invalid -c 1025", "udaddy", "-b", "127.0.65.110", "-c", "1025");
        usage("more than the 268435456 allowed", "udaddy", "-b", "127.0.65.110", "-c", "1024", "-C", "65536", "-S", "16");
        usage("Unknown option", "udaddy", "-b", "127.0.65.110", "-q");
    }
}
