package io.jroce.cli.conn;

import java.util.Objects;

/**
 * A memory region a peer publishes for RDMA WRITE, READ or atomics: its name (chosen by the application,
 * e.g. {@code "buf"}), base virtual address, remote key and length in bytes.
 *
 * @param name   a short UTF-8 name, at most {@value #MAX_NAME_BYTES} bytes when encoded
 * @param va     the base virtual address the peer names in RETH/AtomicETH
 * @param rkey   the remote key (32 bits)
 * @param length the region's length in bytes (non-negative)
 */
public record RemoteRegion(String name, long va, int rkey, long length) {
    /** Longest name, in UTF-8 bytes, that the jroce handshake carries. */
    public static final int MAX_NAME_BYTES = 255;

    public RemoteRegion {
        Objects.requireNonNull(name, "name");
        if (name.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > MAX_NAME_BYTES) {
            throw new IllegalArgumentException("region name longer than " + MAX_NAME_BYTES + " bytes: " + name);
        }
        if (length < 0) throw new IllegalArgumentException("region length must not be negative: " + length);
    }

    @Override
    public String toString() {
        return String.format("%s va 0x%x rkey 0x%x length %d", name, va, rkey, length);
    }
}
