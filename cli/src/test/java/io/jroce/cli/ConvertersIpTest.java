package io.jroce.cli;

import org.junit.jupiter.api.Test;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;

import static org.junit.jupiter.api.Assertions.*;

/** {@link Converters#ip}: IPv4 and IPv6 literals, brackets optional, never a name. */
class ConvertersIpTest {
    private static String error(String s) {
        return assertThrows(IllegalArgumentException.class, () -> Converters.ip(s)).getMessage();
    }

    @Test
    void literals() throws Exception {
        assertEquals(InetAddress.getByName("fd00::1"), Converters.ip("fd00::1"));
        assertEquals(InetAddress.getByName("fd00::1"), Converters.ip("[fd00::1]"));
        assertEquals(InetAddress.getByName("::1"), Converters.ip("::1"));
        assertInstanceOf(Inet6Address.class, Converters.ip("[::1]"));
        assertEquals(InetAddress.getByName("192.0.2.10"), Converters.ip("192.0.2.10"));
        assertInstanceOf(Inet4Address.class, Converters.ip("192.0.2.10"));
        // an IPv4-mapped literal is the IPv4 address (Java's reading, and the GID it becomes)
        assertEquals(InetAddress.getByName("192.0.2.10"), Converters.ip("::ffff:192.0.2.10"));
        Inet6Address scoped = (Inet6Address) Converters.ip("fe80::1%1");
        assertEquals(1, scoped.getScopeId());
    }

    @Test
    void errors() {
        assertEquals("'192.0.2.300' is not an IPv4 address (such as 192.0.2.10)", error("192.0.2.300"));
        assertEquals("'example.com' is not an IPv4 address (such as 192.0.2.10)", error("example.com"));
        assertTrue(error("[fd00::1]:4791").contains("has a port after the address"));
        assertTrue(error("[fd00::1").contains("misses its closing ']'"));
        assertTrue(error("[192.0.2.1]").contains("brackets are for IPv6 addresses"));
        assertTrue(error("fd00::g").startsWith("'fd00::g' is not an IPv6 address"));
        assertTrue(error("fd00:::1:2:3:4:5:6:7").startsWith("'fd00:::1:2:3:4:5:6:7' is not an IPv6 address"));
        assertTrue(error("fe80::1%").startsWith("'fe80::1%' is not an IPv6 address"));
        assertTrue(error("fe80::1%no-such-if0").startsWith("'fe80::1%no-such-if0' is not an IPv6 address"));
    }
}
