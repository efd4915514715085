package io.jroce.cli.inspect;

import io.jroce.cli.Cli;
import io.jroce.testkit.TestData;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code jroce inspect} on RoCEv2 over IPv6 (testdata/ipv6): decoded, every ICRC checked exactly. */
class InspectIpv6Test {
    @Test
    void ipv6FramesDecodeWithExactIcrc() {
        Cli.Result r = Cli.run("inspect", TestData.file("ipv6/rocev2-ipv6.pcap").toString());
        assertEquals(0, r.exit(), r.out() + r.err());
        List<String> lines = r.outLines();
        for (int n = 1; n <= 9; n++) {
            String line = lines.get(n - 1);
            assertTrue(line.startsWith(String.format("%5d  ", n)), line);
            assertTrue(line.endsWith(" icrc=ok"), line);
        }
        assertTrue(lines.get(0).contains("[2001:db8::a]:49831 > [2001:db8::b]:4791"), lines.get(0));
        assertTrue(lines.get(0).contains(" RC_SEND_ONLY ") && lines.get(0).contains("dqpn=0x0000d2 psn=0x000100"), lines.get(0));
        assertTrue(lines.get(2).contains("reth[va=0x00007f0000001000 rkey=0x00001234 dma_len=32]"), lines.get(2));
        assertTrue(lines.get(4).contains("[2001:db8::b]:49832 > [2001:db8::a]:4791"), lines.get(4));
    }
}
