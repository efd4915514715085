package io.jroce.wire;

import org.junit.jupiter.api.Test;

import java.net.InetAddress;

import static org.junit.jupiter.api.Assertions.assertEquals;

class IpTextTest {
    private static String text(String literal) throws Exception {
        return IpText.of(InetAddress.getByName(literal));
    }

    @Test
    void rfc5952Forms() throws Exception {
        assertEquals("::1", text("0:0:0:0:0:0:0:1"));
        assertEquals("::", text("0:0:0:0:0:0:0:0"));
        assertEquals("fd00::2", text("FD00:0:0:0:0:0:0:2"));
        assertEquals("fd00:77::1", text("fd00:77:0:0:0:0:0:1"));
        assertEquals("2001:db8:0:1:1:1:1:1", text("2001:db8:0:1:1:1:1:1"), "a single zero group is not shortened");
        assertEquals("2001:0:0:1::1", text("2001:0:0:1:0:0:0:1"), "the longest run is shortened");
        assertEquals("2001:db8::1:0:0:1", text("2001:db8:0:0:1:0:0:1"), "the first of two equal runs");
        assertEquals("fe80::1%3", IpText.of(java.net.Inet6Address.getByAddress(null, InetAddress.getByName("fe80::1").getAddress(), 3)));
        assertEquals("192.0.2.1", text("192.0.2.1"));
    }
}
