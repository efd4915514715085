package io.jroce.endpoint;

/**
 * A scatter/gather element: {@code length} bytes at virtual address {@code addr} inside the memory region
 * whose local key is {@code lkey}.
 */
public record Sge(long addr, int length, int lkey) {
    public Sge {
        if (length < 0) throw new IllegalArgumentException("SGE length must not be negative: " + length);
    }

    /** The whole of a region. */
    public static Sge of(MemoryRegion mr) {
        return new Sge(mr.address(), mr.length(), mr.lkey());
    }

    /** {@code length} bytes at {@code offset} from the region's start. */
    public static Sge of(MemoryRegion mr, long offset, int length) {
        return new Sge(mr.address() + offset, length, mr.lkey());
    }
}
