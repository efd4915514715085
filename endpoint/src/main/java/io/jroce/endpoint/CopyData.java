package io.jroce.endpoint;

import io.netty.buffer.ByteBuf;

/**
 * The one walk over a work request's scatter/gather list (rdma_rxe rxe_mr.c copy_data): the requester gathers a
 * SEND's or WRITE's payload from it (copied into the packet, or left to be gathered from the regions by the
 * socket: {@link PacketOut#payload}), the completer scatters READ responses into it, the responder scatters a
 * received SEND into a receive WQE's. A list is a WQE's parallel arrays (region, address, length of each SGE);
 * bounds and access were checked when the WR was posted, so the walk checks only what can change since: that the
 * message fits the list and that each region is still registered.
 */
final class CopyData {
    /** The bytes were copied. */
    static final int OK = 0;
    /** The message runs past the end of the list (IBA 11.6.2 local length error). */
    static final int PAST_END = 1;
    /** A region of the list was deregistered after the post (IBA 11.6.2 local protection error). */
    static final int REGION_GONE = 2;

    private CopyData() {
    }

    /**
     * Puts {@code count} bytes at message offset {@code off} of the list into packet {@code b} through {@code tx},
     * which copies them or leaves them to be gathered from the regions (the caller sized both).
     */
    static void gather(MemoryRegion[] mr, long[] addr, int[] len, int numSge, long off, int count, PacketOut tx, ByteBuf b) {
        int i = 0;
        long skip = off;
        while (i < numSge && skip >= len[i]) {
            skip -= len[i];
            i++;
        }
        while (count > 0) {
            int n = (int) Math.min(count, len[i] - skip);
            tx.payload(b, mr[i], mr[i].offsetOf(addr[i]) + (int) skip, n);
            count -= n;
            skip = 0;
            i++;
        }
    }

    /**
     * Copies {@code count} bytes of {@code src} from {@code srcIdx} to message offset {@code off} of the list:
     * {@link #OK}, {@link #PAST_END} or {@link #REGION_GONE} (what was copied before stays).
     */
    static int scatter(MemoryRegion[] mr, long[] addr, int[] len, int numSge, long off, ByteBuf src, int srcIdx, int count) {
        int i = 0;
        long skip = off;
        while (i < numSge && skip >= len[i]) {
            skip -= len[i];
            i++;
        }
        int done = 0;
        while (done < count) {
            if (i >= numSge) return PAST_END;
            MemoryRegion r = mr[i];
            if (!r.isRegistered()) return REGION_GONE;
            int n = (int) Math.min(count - done, len[i] - skip);
            r.mem().setBytes(r.offsetOf(addr[i]) + (int) skip, src, srcIdx + done, n);
            done += n;
            skip = 0;
            i++;
        }
        return OK;
    }
}
