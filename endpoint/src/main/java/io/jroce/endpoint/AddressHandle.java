package io.jroce.endpoint;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/**
 * An address handle ({@code struct ibv_ah}): where a UD send goes, the peer's IP address (its GID, for IPv4
 * the IPv4-mapped form) and UDP port. Created by {@link ProtectionDomain#createAh}; a send work request names
 * one with {@link SendWorkRequest#ud}. The fields are fixed at creation, so the data path reads them without
 * locks.
 */
public final class AddressHandle {
    private final ProtectionDomain pd;
    private final InetAddress address;
    private final int udpPort;
    final InetSocketAddress socket;
    /** IPv4 destination as a big-endian int (IPv4 device). */
    final int addressInt;
    /** IPv6 destination's 16 bytes (IPv6 device), else null. */
    final byte[] address16;
    private volatile boolean destroyed;

    AddressHandle(ProtectionDomain pd, InetAddress address, int udpPort) {
        this.pd = pd;
        this.address = address;
        this.udpPort = udpPort;
        this.socket = new InetSocketAddress(address, udpPort);
        byte[] b = address.getAddress();
        if (address instanceof Inet6Address) {
            this.address16 = b;
            this.addressInt = 0;
        } else {
            this.address16 = null;
            this.addressInt = (b[0] & 0xFF) << 24 | (b[1] & 0xFF) << 16 | (b[2] & 0xFF) << 8 | (b[3] & 0xFF);
        }
    }

    public ProtectionDomain pd() { return pd; }
    /** The destination IP address. */
    public InetAddress address() { return address; }
    /** The destination UDP port (4791 unless the peer listens elsewhere, as tests on loopback do). */
    public int udpPort() { return udpPort; }
    /** The destination as a GID (IPv4-mapped for IPv4). */
    public Gid gid() { return Gid.of(address); }

    /**
     * Destroys the handle ({@code ibv_destroy_ah}): later posts naming it are refused. Sends already posted
     * keep the destination they copied at post time.
     */
    public void destroy() { destroyed = true; }

    public boolean isDestroyed() { return destroyed; }

    @Override
    public String toString() {
        return "AH " + io.jroce.wire.IpText.of(address) + ":" + udpPort + (destroyed ? " (destroyed)" : "");
    }
}
