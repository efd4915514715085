package io.jroce.cli.conn;

import io.jroce.endpoint.Mtu;

import java.io.IOException;
import java.net.DatagramSocket;
import io.jroce.wire.IpText;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;

/** Choosing the local RoCE address and path MTU when the user did not name them. */
public final class LocalAddress {
    /**
     * Bytes of RoCEv2 headers rxe subtracts from the netdev MTU: rdma_rxe {@code rxe_set_mtu} (rxe.c) takes
     * {@code eth_mtu_int_to_enum} (rxe_param.h) of the netdev MTU, which subtracts {@code RXE_MAX_HDR_LENGTH}.
     */
    public static final int HEADER_ALLOWANCE = 80;

    private LocalAddress() {
    }

    /**
     * The address, of {@code remote}'s IP version, this host would send from to reach {@code remote} (a
     * connected UDP socket asks the kernel's routing table; no packet is sent).
     */
    public static InetAddress towards(InetAddress remote) throws IOException {
        try (DatagramSocket s = new DatagramSocket()) {
            s.connect(remote, io.jroce.wire.RoceV2.UDP_PORT);
            InetAddress local = s.getLocalAddress();
            if (local == null || local.isAnyLocalAddress() || (local instanceof Inet6Address) != (remote instanceof Inet6Address)) {
                throw new IOException("no route from this host to " + IpText.of(remote) + ": name the local address with --bind");
            }
            return local;
        } catch (SocketException e) {
            throw new IOException("cannot find a local address towards " + IpText.of(remote) + " (" + e.getMessage()
                    + "): name it with --bind", e);
        }
    }

    /**
     * The largest InfiniBand MTU that fits the interface of {@code local}: its MTU minus
     * {@value #HEADER_ALLOWANCE} bytes, as rxe computes a port's active MTU (Ethernet 1500 gives 1024, loopback
     * 4096). 4096 when the interface cannot be found.
     */
    public static Mtu activeMtu(InetAddress local) {
        int ifMtu = -1;
        try {
            NetworkInterface ni = NetworkInterface.getByInetAddress(local);
            if (ni == null && local.isLoopbackAddress()) ni = NetworkInterface.getByInetAddress(InetAddress.getLoopbackAddress());
            if (ni != null) ifMtu = ni.getMTU();
        } catch (SocketException e) {
            ifMtu = -1;
        }
        if (ifMtu <= 0) return Mtu.MTU_4096;
        Mtu best = Mtu.MTU_256;
        for (Mtu m : Mtu.values()) {
            if (m.bytes() <= ifMtu - HEADER_ALLOWANCE) best = m;
        }
        return best;
    }
}
