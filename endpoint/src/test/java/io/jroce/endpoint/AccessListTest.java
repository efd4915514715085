package io.jroce.endpoint;

import org.junit.jupiter.api.Test;

import java.net.InetAddress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AccessListTest {
    private static InetAddress ip(String s) throws Exception {
        return InetAddress.getByName(s);
    }

    @Test
    void ipv4PrefixesMatchTheirNetworkOnly() throws Exception {
        AccessList a = AccessList.parse("10.0.0.0/8,192.0.2.7");
        assertTrue(a.allows(ip("10.0.0.1")));
        assertTrue(a.allows(ip("10.255.255.255")));
        assertFalse(a.allows(ip("11.0.0.1")));
        assertFalse(a.allows(ip("9.255.255.255")));
        assertTrue(a.allows(ip("192.0.2.7")), "a bare address is one host (/32)");
        assertFalse(a.allows(ip("192.0.2.8")));
        assertFalse(a.allows(ip("::1")), "an IPv6 source is outside an IPv4 list");
        assertFalse(a.allowsAll());
    }

    @Test
    void prefixLengthsThatCutInsideAByte() throws Exception {
        AccessList a = AccessList.parse("172.16.0.0/12");
        assertTrue(a.allows(ip("172.31.255.1")));
        assertFalse(a.allows(ip("172.32.0.1")));
        assertFalse(a.allows(ip("172.15.255.255")));
        AccessList zero = AccessList.parse("0.0.0.0/0");
        assertTrue(zero.allows(ip("203.0.113.9")), "/0 is every IPv4 source");
        assertFalse(zero.allows(ip("2001:db8::1")), "but no IPv6 source");
    }

    @Test
    void ipv6PrefixesMatchAcrossBothWords() throws Exception {
        AccessList a = AccessList.parse("fd00::/8, 2001:db8:1:2::/64, ::1");
        assertTrue(a.allows(ip("fd12:3456::1")));
        assertFalse(a.allows(ip("fe80::1")));
        assertTrue(a.allows(ip("2001:db8:1:2:ffff::9")));
        assertFalse(a.allows(ip("2001:db8:1:3::9")));
        assertTrue(a.allows(ip("::1")));
        assertFalse(a.allows(ip("::2")));
        assertFalse(a.allows(ip("10.0.0.1")));
        AccessList b = AccessList.parse("2001:db8::/127");
        assertTrue(b.allows(ip("2001:db8::1")));
        assertFalse(b.allows(ip("2001:db8::2")), "a prefix longer than 64 bits cuts into the low word");
    }

    @Test
    void v4MappedPrefixesAndIpv4PrefixesAreTheSameNetworks() throws Exception {
        AccessList mapped = AccessList.parse("::ffff:10.0.0.0/104");
        assertTrue(mapped.allows(ip("10.1.2.3")), "an IPv4 source is compared in its v4-mapped form");
        assertFalse(mapped.allows(ip("11.1.2.3")));
        AccessList v4 = AccessList.parse("10.0.0.0/8");
        // Java returns a v4-mapped literal as Inet4Address; its 16-byte form is checked through the same path
        assertTrue(v4.allows(ip("::ffff:10.9.9.9")));
        assertFalse(v4.allows(ip("::ffff:11.9.9.9")));
        assertTrue(AccessList.parse("::ffff:0:0/96").allows(ip("198.51.100.1")), "::ffff:0:0/96 is every IPv4 source");
    }

    @Test
    void allIsTheDefaultAndAllowsEverything() throws Exception {
        assertSame(AccessList.ALL, AccessList.parse("all"));
        assertTrue(AccessList.ALL.allowsAll());
        assertTrue(AccessList.ALL.allows(ip("203.0.113.1")));
        assertTrue(AccessList.ALL.allows(ip("2001:db8::1")));
    }

    @Test
    void badEntriesAreNamedInOneLine() {
        String[] bad = {"", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/x", "10.0.0.1/8", "300.1.1.1", "10.0.0", "example.com",
                "fd00::/129", "fd00::1/8", "10.0.0.0/8,,fd00::/8", "10.0.0.0/8,", "gggg::1"};
        for (String s : bad) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> AccessList.parse(s), s);
            assertFalse(e.getMessage().contains("\n"), e.getMessage());
            assertFalse(e.getMessage().isBlank(), s);
        }
        assertTrue(assertThrows(IllegalArgumentException.class, () -> AccessList.parse("10.0.0.1/8")).getMessage().contains("host bits"));
    }

    @Test
    void theDeviceAlwaysAdmitsItsOwnAddress() throws Exception {
        DeviceConfig c = new DeviceConfig(ip("127.0.0.5")).allow(AccessList.parse("10.0.0.0/8"));
        assertTrue(c.allow().allows(ip("127.0.0.5")));
        assertFalse(c.allow().allows(ip("127.0.0.6")));
        assertTrue(new DeviceConfig(ip("127.0.0.5")).allow().allowsAll(), "the default");
    }

    @Test
    void aRefusedDatagramIsCountedAndTheLogTableStaysBounded() throws Exception {
        AccessList a = AccessList.parse("10.0.0.0/8");
        DeviceCounters c = new DeviceCounters();
        assertTrue(a.admit(ip("10.0.0.9"), c));
        assertEquals(0, c.drops(DropReason.NOT_ALLOWED));
        for (int i = 0; i < 1000; i++) {
            assertFalse(a.admit(ip("192.168." + (i >> 8) + "." + (i & 0xFF)), c));
        }
        assertEquals(1000, c.drops(DropReason.NOT_ALLOWED));
        assertEquals(AccessList.LOG_TABLE, a.loggedSources(), "one entry per source, at most LOG_TABLE");
    }
}
