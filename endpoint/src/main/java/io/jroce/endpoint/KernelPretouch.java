package io.jroce.endpoint;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Pipe;

/**
 * At registration the kernel reads one byte of every page of the region, as {@code ibv_reg_mr} walks every page
 * when it pins them (rdma_rxe: rxe_mr.c {@code rxe_mr_init_user} through {@code ib_umem_get}). jroce pins nothing,
 * but the data path's first send from a page is the kernel's first access to it ({@code sendmmsg} gathers the
 * payload straight from the region), and on a virtual machine that first access can cost far more than the
 * copy: about 5 us a page on the development VM (bench/first-touch), 0.65 s of sender CPU for a 512 MiB
 * region. Paid here, it is a cost of registering memory, as with a NIC, instead of a slow first pass over the
 * region in the middle of a transfer. On a physical machine the walk costs tens of milliseconds per GiB.
 *
 * <p>How: one-byte pieces of consecutive pages, {@link #PIECES} a call, gathered into a pipe ({@code writev}) and
 * read back out of it. Nothing of the region changes.
 */
final class KernelPretouch {
    private static final Logger log = LoggerFactory.getLogger(KernelPretouch.class);

    static final int PAGE = 4096;
    /** Pieces per gathering write: Linux's IOV_MAX. 1024 bytes fit any pipe's buffer, so the write never blocks. */
    static final int PIECES = 1024;

    private KernelPretouch() {
    }

    /** Has the kernel read one byte of every page {@code region} (a direct buffer) spans; returns the pages read. */
    static long touch(ByteBuffer region) {
        int length = region.capacity();
        if (length == 0) return 0;
        long address = MemoryRegion.nativeAddress(region);
        ByteBuffer[] pieces = new ByteBuffer[PIECES];
        ByteBuffer drain = ByteBuffer.allocateDirect(PIECES);
        long pages = 0;
        try {
            Pipe pipe = Pipe.open();
            try (Pipe.SinkChannel sink = pipe.sink(); Pipe.SourceChannel source = pipe.source()) {
                // the region's first byte, then the first byte of each page boundary it crosses
                int offset = 0;
                while (offset < length) {
                    int n = 0;
                    while (n < PIECES && offset < length) {
                        pieces[n++] = region.slice(offset, 1);
                        offset = nextPage(address, offset);
                    }
                    // every piece is one byte: a short write leaves the pieces from the count written on
                    for (int from = 0; from < n; ) from += (int) sink.write(pieces, from, n - from);
                    for (int got = 0; got < n; ) {
                        drain.clear().limit(n - got);
                        got += source.read(drain);
                    }
                    pages += n;
                }
            }
        } catch (IOException e) {
            // only a head start: the data path reads the pages all the same
            log.debug("pages of a registered region not pretouched: {}", e.toString());
        }
        return pages;
    }

    /** The offset of the first page boundary after {@code offset} in a region at {@code address}. */
    static int nextPage(long address, int offset) {
        long next = ((address + offset) & -PAGE) + PAGE;
        long off = next - address;
        return off > Integer.MAX_VALUE ? Integer.MAX_VALUE : (int) off;
    }
}
