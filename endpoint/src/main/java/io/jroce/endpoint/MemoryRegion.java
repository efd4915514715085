package io.jroce.endpoint;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.internal.PlatformDependent;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Registered memory: the bytes of a direct {@link ByteBuffer} from its position to its limit, named by a
 * base virtual address, a local key and a remote key. Every access, local or remote, is checked against
 * bounds, key and access flags before a byte moves. Deregistration kills both keys at once.
 */
public final class MemoryRegion {
    /** 64-bit words in host byte order, as an RDMA NIC's atomic unit sees them on this machine. */
    private static final VarHandle WORDS = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());

    private final ProtectionDomain pd;
    private final ByteBuffer buffer;
    private final ByteBuf mem;
    private final long address;
    private final int length;
    private final int access;
    private final int lkey;
    private final int rkey;
    private volatile boolean registered = true;
    private volatile boolean rkeyValid = true;

    /**
     * What a work request posted by {@link QueuePair#postSend(SendWorkRequest, boolean)} or
     * {@link QueuePair#postRecv(ReceiveWorkRequest, boolean)} holds in place of an SGE that names no usable region:
     * never registered and empty, so the first copy through it fails as for a region deregistered after the post.
     */
    static final MemoryRegion NONE = none();

    private static MemoryRegion none() {
        MemoryRegion r = new MemoryRegion(null, ByteBuffer.allocateDirect(0), 0, 0, 0, 0);
        r.registered = false;
        r.rkeyValid = false;
        return r;
    }

    MemoryRegion(ProtectionDomain pd, ByteBuffer region, long address, int access, int lkey, int rkey) {
        this.pd = pd;
        this.buffer = region;
        this.mem = Unpooled.wrappedBuffer(region.duplicate());
        this.address = address;
        this.length = region.capacity();
        this.access = access;
        this.lkey = lkey;
        this.rkey = rkey;
    }

    static long nativeAddress(ByteBuffer direct) {
        return PlatformDependent.hasUnsafe() ? PlatformDependent.directBufferAddress(direct) : 0x1000;
    }

    public ProtectionDomain pd() { return pd; }
    /** The registered bytes (a view starting at the region's first byte). */
    public ByteBuffer buffer() { return buffer.duplicate().clear(); }
    public long address() { return address; }
    public int length() { return length; }
    public int access() { return access; }
    public int lkey() { return lkey; }
    public int rkey() { return rkey; }
    public boolean isRegistered() { return registered; }

    /** Frees both keys; a work request or a remote access naming them afterwards fails. */
    public void deregister() {
        if (registered) {
            registered = false;
            rkeyValid = false;
            pd.device().keys().remove(this);
        }
    }

    /** A SEND_WITH_INV naming this region's rkey makes it unusable remotely; local access continues. */
    void invalidateRkey() {
        rkeyValid = false;
    }

    boolean rkeyUsable() {
        return registered && rkeyValid;
    }

    /** True iff [va, va+len) lies inside the region (no overflow on huge inputs). */
    public boolean contains(long va, long len) {
        if (len < 0) return false;
        long off = va - address;
        return va >= address && off <= length && len <= length - off;
    }

    /** Region offset of a virtual address already checked with {@link #contains}. */
    int offsetOf(long va) {
        return (int) (va - address);
    }

    ByteBuf mem() {
        return mem;
    }

    long compareAndSwap(int offset, long compare, long swap) {
        return (long) WORDS.compareAndExchange(buffer, offset, compare, swap);
    }

    long fetchAndAdd(int offset, long add) {
        return (long) WORDS.getAndAdd(buffer, offset, add);
    }

    /** Reads the host-order 64-bit word at a region offset (tests and tools). */
    public long getLong(int offset) {
        return (long) WORDS.getVolatile(buffer, offset);
    }

    @Override
    public String toString() {
        return "MR{addr=0x" + Long.toHexString(address) + ", len=" + length + ", lkey=0x" + Integer.toHexString(lkey)
                + ", rkey=0x" + Integer.toHexString(rkey) + ", access=" + Access.toString(access) + "}";
    }
}
