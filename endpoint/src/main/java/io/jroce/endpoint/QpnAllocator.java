package io.jroce.endpoint;

import java.security.SecureRandom;

/**
 * Hands out QP numbers for a device: cyclically (a released number comes back only after every other number
 * of the 24-bit space has been handed out), starting at a random point chosen per allocator. rdma_rxe
 * allocates QP indices cyclically too (rxe_pool.c, rxe_add_to_pool: {@code xa_alloc_cyclic}), so a number
 * is not reused soon after its QP is destroyed.
 *
 * <p>Why the random start: RC packets carry no source QP, only the destination QPN and a PSN. A process
 * that restarts on the same address would otherwise number its first QPs as its previous life did, and the
 * peer's retransmissions to the old QPs would reach new ones. From a random start among 2^24 - 0x11 numbers,
 * a restarted process lands on one of its predecessor's n numbers with probability about n / 2^24; the
 * packets then go to an unknown QP and are dropped and counted ({@link DropReason#UNKNOWN_QP}).
 *
 * <p>QPN 0 (SMI) and 1 (GSI) are never handed out, nor 2..0x10 (kept clear, as before, for special QPs).
 * Not thread-safe: the device calls it under its own lock.
 */
public final class QpnAllocator {
    /** The first number handed to an ordinary QP. */
    public static final int FIRST = 0x11;
    /** The last: BTH DestQP is 24 bits. */
    public static final int LAST = 0xFFFFFF;
    private static final int SPAN = LAST - FIRST + 1;

    private final int start;
    private int next;

    /** Starts at {@code start} (clamped into FIRST..LAST by wrapping), for deterministic tests. */
    public QpnAllocator(int start) {
        this.start = FIRST + Math.floorMod(start - FIRST, SPAN);
        this.next = this.start;
    }

    /** Starts at a random point (a fresh seed from the system's secure source per allocator). */
    public static QpnAllocator spread() {
        return new QpnAllocator(FIRST + new SecureRandom().nextInt(SPAN));
    }

    /** The next candidate number; the caller skips it if a live QP still holds it (after a full wrap). */
    public int next() {
        int qpn = next;
        next = qpn == LAST ? FIRST : qpn + 1;
        return qpn;
    }

    /** Back to the start, so numbers handed out by a discarded prelude (the device's warm-up) come again. */
    public void rewind() {
        next = start;
    }

    /** Where this allocator began. */
    public int start() {
        return start;
    }
}
