package io.jroce.endpoint;

/**
 * Memory region and queue pair access flags. The values are libibverbs' {@code IBV_ACCESS_*} bits, so
 * a verbs programmer can read them off a trace.
 */
public final class Access {
    public static final int LOCAL_WRITE = 1;
    public static final int REMOTE_WRITE = 1 << 1;
    public static final int REMOTE_READ = 1 << 2;
    public static final int REMOTE_ATOMIC = 1 << 3;
    public static final int ALL = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC;

    private Access() {
    }

    /** Remote write and atomic access imply local write (IBA 10.6.3.1, ibv_reg_mr returns EINVAL otherwise). */
    static void validateRegion(int flags) {
        if ((flags & ~ALL) != 0) {
            throw new IllegalArgumentException("unknown access flag bits 0x" + Integer.toHexString(flags & ~ALL));
        }
        if ((flags & (REMOTE_WRITE | REMOTE_ATOMIC)) != 0 && (flags & LOCAL_WRITE) == 0) {
            throw new IllegalArgumentException("REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE as well");
        }
    }

    public static String toString(int flags) {
        StringBuilder sb = new StringBuilder();
        if ((flags & LOCAL_WRITE) != 0) sb.append("LOCAL_WRITE|");
        if ((flags & REMOTE_WRITE) != 0) sb.append("REMOTE_WRITE|");
        if ((flags & REMOTE_READ) != 0) sb.append("REMOTE_READ|");
        if ((flags & REMOTE_ATOMIC) != 0) sb.append("REMOTE_ATOMIC|");
        return sb.length() == 0 ? "0" : sb.substring(0, sb.length() - 1);
    }
}
