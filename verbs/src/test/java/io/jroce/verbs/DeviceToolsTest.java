package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Debian's unmodified ibv_devices and ibv_devinfo (ibverbs-utils, linked against rdma-core's libibverbs.so.1)
 * see one device through this module's library: jroce0, one active Ethernet port, RoCE v2 GIDs in rdma_rxe's
 * order. Without our library first on the path they print "Failed to get IB devices list" on a host with no
 * RDMA device, so a device in their output is ours.
 */
class DeviceToolsTest {

    @Test
    void ibvDevicesListsOneDevice() throws Exception {
        String address = Tools.addr(34);
        Tools.Result r = Tools.run(Map.of("JROCE_ADDR", address), 30, Tools.tool("ibv_devices", "ibverbs-utils"));
        assertEquals(0, r.exit(), r.output());
        List<String> devices = Tools.lines(r.output()).stream()
                .filter(l -> !l.isBlank() && !l.contains("device") && !l.contains("----")).toList();
        assertEquals(1, devices.size(), r.output());
        // the node GUID: modified EUI-64 of a loopback interface, from the address's low bytes
        assertEquals(List.of("jroce0", guid(address)), List.of(devices.get(0).trim().split("\\s+")), r.output());
    }

    @Test
    void ibvDevinfoShowsAnActiveEthernetPortWithRxeGidLayout() throws Exception {
        String address = Tools.addr(35);
        Tools.Result r = Tools.run(Map.of("JROCE_ADDR", address), 30, Tools.tool("ibv_devinfo", "ibverbs-utils"), "-v");
        String out = r.output();
        assertEquals(0, r.exit(), out);
        assertTrue(out.contains("hca_id:\tjroce0\n"), out);
        assertTrue(out.contains("phys_port_cnt:\t\t\t1\n"), out);
        assertTrue(out.contains("state:\t\t\tPORT_ACTIVE (4)\n"), out);
        assertTrue(out.contains("link_layer:\t\tEthernet\n"), out);
        // loopback's MTU (65536) less the headers rounds down to 4096, as rdma_rxe computes it
        assertTrue(out.contains("active_mtu:\t\t4096 (5)\n"), out);
        assertTrue(out.contains("max_qp_rd_atom:\t\t\t128\n"), out);
        assertTrue(out.contains("GID[  0]:\t\t" + linkLocal(address) + ", RoCE v2\n"), out);
        assertTrue(out.contains("GID[  1]:\t\t::ffff:" + address + ", RoCE v2\n"), out);
        assertEquals(2, out.split("GID\\[").length - 1, out);
    }

    @Test
    void ipv6AddressIsGidOne() throws Exception {
        Tools.Result r = Tools.run(Map.of("JROCE_ADDR", "::1"), 30, Tools.tool("ibv_devinfo", "ibverbs-utils"), "-v");
        assertEquals(0, r.exit(), r.output());
        assertTrue(r.output().contains("GID[  1]:\t\t::1, RoCE v2\n"), r.output());
    }

    @Test
    void withoutAnAddressThereIsNoDeviceAndOneLineSaysWhy() throws Exception {
        Tools.Result r = Tools.run(Map.of(), 30, Tools.tool("ibv_devinfo", "ibverbs-utils"));
        assertTrue(r.output().contains("jroce: no device: set JROCE_ADDR"), r.output());
        assertTrue(r.output().contains("No IB devices found"), r.output());
    }

    @Test
    void anAddressNotOfThisHostIsRefused() throws Exception {
        // 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never an address of this host
        Tools.Result r = Tools.run(Map.of("JROCE_ADDR", "192.0.2.1"), 30, Tools.tool("ibv_devices", "ibverbs-utils"));
        assertTrue(r.output().contains("jroce: no device: JROCE_ADDR=192.0.2.1 is not an address of this host"), r.output());
        assertTrue(Tools.lines(r.output()).stream().noneMatch(l -> l.contains("jroce0")), r.output());
    }

    /**
     * The modified EUI-64 of an interface without a MAC, as the library makes it from an IPv4 address a.b.c.d: the MAC
     * 00:00:a:b:c:d with ff:fe in its middle (127.0.0.1: 00007ffffe000001).
     */
    private static int[] eui64(String address) {
        String[] o = address.split("\\.");
        int a = Integer.parseInt(o[0]), b = Integer.parseInt(o[1]), c = Integer.parseInt(o[2]), d = Integer.parseInt(o[3]);
        return new int[] {0, 0, a, 0xff, 0xfe, b, c, d};
    }

    private static String guid(String address) {
        StringBuilder s = new StringBuilder();
        for (int x : eui64(address)) s.append(String.format("%02x", x));
        return s.toString();
    }

    /** GID 0, the link-local fe80:: GID of that EUI-64, as inet_ntop writes it (127.0.0.2: fe80::7fff:fe00:2). */
    private static String linkLocal(String address) {
        int[] e = eui64(address);
        return "fe80::" + Integer.toHexString(e[2] << 8 | e[3]) + ":" + Integer.toHexString(e[4] << 8 | e[5]) + ":"
                + Integer.toHexString(e[6] << 8 | e[7]);
    }
}
