package io.jroce.endpoint;

import java.net.InetAddress;
import java.nio.ByteBuffer;

/** A protection domain: memory regions and queue pairs of one PD may only be used together. */
public final class ProtectionDomain {
    private final Device device;

    ProtectionDomain(Device device) {
        this.device = device;
    }

    public Device device() {
        return device;
    }

    /**
     * Registers the bytes of {@code buffer} from its position to its limit. The base virtual address is the
     * buffer's native address, as a verbs application would pass the pointer it registered.
     */
    public MemoryRegion registerMemory(ByteBuffer buffer, int access) {
        ByteBuffer region = checkedSlice(buffer);
        return register(region, MemoryRegion.nativeAddress(region), access);
    }

    /** Registers with a chosen base virtual address (an 8-byte aligned VA keeps atomics aligned). */
    public MemoryRegion registerMemory(ByteBuffer buffer, long address, int access) {
        ByteBuffer region = checkedSlice(buffer);
        if (address < 0 || address + region.capacity() < address) {
            throw new IllegalArgumentException("virtual address range overflows: 0x" + Long.toHexString(address));
        }
        if (((address ^ MemoryRegion.nativeAddress(region)) & 7) != 0) {
            throw new IllegalArgumentException("the virtual address must have the same alignment mod 8 as the buffer");
        }
        return register(region, address, access);
    }

    /** Allocates a direct buffer of {@code length} bytes and registers it. */
    public MemoryRegion allocateAndRegister(int length, int access) {
        return registerMemory(ByteBuffer.allocateDirect(length), access);
    }

    private static ByteBuffer checkedSlice(ByteBuffer buffer) {
        if (!buffer.isDirect()) {
            throw new IllegalArgumentException("register a direct ByteBuffer (ByteBuffer.allocateDirect): remote access and atomics need stable memory");
        }
        if (buffer.isReadOnly()) {
            throw new IllegalArgumentException("a read-only buffer cannot be registered");
        }
        return buffer.slice();
    }

    private MemoryRegion register(ByteBuffer region, long address, int access) {
        Access.validateRegion(access);
        device.checkOpen();
        KernelPretouch.touch(region);
        KeyTable table = device.keys();
        synchronized (table) {
            int[] keys = table.newKeys();
            MemoryRegion mr = new MemoryRegion(this, region, address, access, keys[0], keys[1]);
            table.add(mr);
            return mr;
        }
    }

    /** An address handle for UD sends to {@code dest} on the RoCEv2 port 4791 ({@code ibv_create_ah}). */
    public AddressHandle createAh(InetAddress dest) {
        return createAh(dest, io.jroce.wire.RoceV2.UDP_PORT);
    }

    /**
     * An address handle for UD sends to {@code dest}:{@code udpPort} (a port other than 4791 reaches a peer
     * device opened on another port, as tests on loopback do). The address must be of the device's family.
     */
    public AddressHandle createAh(InetAddress dest, int udpPort) {
        device.checkOpen();
        if (dest == null) throw new IllegalArgumentException("an address handle needs a destination address");
        if (udpPort < 1 || udpPort > 65535) throw new IllegalArgumentException("UDP port must be 1..65535, not " + udpPort);
        if (dest.isAnyLocalAddress() || dest.isMulticastAddress()) {
            throw new IllegalArgumentException("an address handle needs a unicast destination, not " + io.jroce.wire.IpText.of(dest));
        }
        boolean mine6 = device.address() instanceof java.net.Inet6Address;
        if (mine6 != (dest instanceof java.net.Inet6Address)) {
            throw new VerbsException("destination " + io.jroce.wire.IpText.of(dest) + " is not of device "
                    + io.jroce.wire.IpText.of(device.address()) + "'s address family");
        }
        return new AddressHandle(this, dest, udpPort);
    }

    /**
     * An address handle back to the sender of a UD receive ({@code ibv_create_ah_from_wc}): the source address
     * read from the receive buffer's GRH area ({@code grh}: its 40 bytes from the buffer's position; IPv4: bytes
     * 32..35, IPv6: bytes 8..23), on the RoCEv2 port 4791.
     */
    public AddressHandle createAhFromWc(WorkCompletion wc, ByteBuffer grh) {
        return createAhFromWc(wc, grh, io.jroce.wire.RoceV2.UDP_PORT);
    }

    /**
     * As {@link #createAhFromWc(WorkCompletion, ByteBuffer)} on {@code udpPort}: between jroce devices on other
     * ports (tests) pass {@link WorkCompletion#srcUdpPort()}.
     */
    public AddressHandle createAhFromWc(WorkCompletion wc, ByteBuffer grh, int udpPort) {
        if (!wc.ok() || !wc.hasGrh()) throw new IllegalArgumentException("not a successful UD receive completion: " + wc);
        boolean v6 = device.address() instanceof java.net.Inet6Address;
        byte[] a = new byte[v6 ? 16 : 4];
        grh.get(grh.position() + (v6 ? 8 : 32), a);
        try {
            return createAh(InetAddress.getByAddress(a), udpPort);
        } catch (java.net.UnknownHostException e) {
            throw new IllegalStateException(e); // cannot happen: 4 or 16 bytes
        }
    }

    /** {@link Device#openGsi}: QP 1 in this protection domain, already in RTS. */
    public QueuePair openGsi(QpInitAttr init) {
        return device.openGsi(this, init);
    }

    public QueuePair createQp(QpInitAttr init) {
        return device.createQp(this, init);
    }
}
