package io.jroce.endpoint;

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
        KeyTable table = device.keys();
        synchronized (table) {
            int[] keys = table.newKeys();
            MemoryRegion mr = new MemoryRegion(this, region, address, access, keys[0], keys[1]);
            table.add(mr);
            return mr;
        }
    }

    public QueuePair createQp(QpInitAttr init) {
        return device.createQp(this, init);
    }
}
