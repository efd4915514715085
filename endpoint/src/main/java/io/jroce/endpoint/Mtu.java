package io.jroce.endpoint;

/** The five legal InfiniBand path MTUs (IBA 'enum ib_mtu' 1..5). */
public enum Mtu {
    MTU_256(256, 1), MTU_512(512, 2), MTU_1024(1024, 3), MTU_2048(2048, 4), MTU_4096(4096, 5);

    private final int bytes;
    private final int ibvEnum;

    Mtu(int bytes, int ibvEnum) {
        this.bytes = bytes;
        this.ibvEnum = ibvEnum;
    }

    public int bytes() {
        return bytes;
    }

    /** The value of libibverbs' {@code enum ibv_mtu}: 1 for 256 up to 5 for 4096. */
    public int ibvEnum() {
        return ibvEnum;
    }

    public static Mtu ofBytes(int bytes) {
        for (Mtu m : values()) {
            if (m.bytes == bytes) return m;
        }
        throw new IllegalArgumentException("path MTU must be 256, 512, 1024, 2048 or 4096, not " + bytes);
    }

    public static Mtu ofIbvEnum(int value) {
        for (Mtu m : values()) {
            if (m.ibvEnum == value) return m;
        }
        throw new IllegalArgumentException("ibv_mtu enum must be 1..5, not " + value);
    }
}
