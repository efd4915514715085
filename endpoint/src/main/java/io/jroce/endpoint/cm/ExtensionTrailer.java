package io.jroce.endpoint.cm;

import io.jroce.endpoint.JroceExtensions;

import java.nio.charset.StandardCharsets;

/**
 * The 8 bytes at the very end of a REQ's or REP's private data area with which two jroce connection managers agree
 * on {@link JroceExtensions}: ASCII {@code jroceX}, a version byte (1) and the flags. The REQ's carries the
 * requester's offer, the REP's the subset the responder accepted. This is the one place jroce puts content of its
 * own on the wire; it travels inside the private data, which IBA (and rdma_cm after its header) leaves opaque to
 * the CM, and only when the application asked for it ({@link CmConnParam#extensions}) and left the bytes free. A
 * peer that is not jroce hands it to its application as private data (rping and perftest ignore theirs), and
 * Wireshark shows it as bytes. Public for tools that read captures ({@code jroce inspect}); applications use
 * {@link CmConnParam#extensions} and {@link CmId#extensions}.
 */
public final class ExtensionTrailer {
    /** The trailer's size: the application may use all but these bytes of the area to carry an offer. */
    public static final int LENGTH = 8;
    static final int VERSION = 1;
    private static final byte[] MAGIC = "jroceX".getBytes(StandardCharsets.US_ASCII);

    private ExtensionTrailer() {
    }

    /** Whether an application's {@code used} bytes of an {@code area}-byte private data area leave room for it. */
    static boolean fits(int used, int area) {
        return used <= area - LENGTH;
    }

    /** The trailer for {@code flags}. */
    static byte[] encode(int flags) {
        byte[] t = new byte[LENGTH];
        System.arraycopy(MAGIC, 0, t, 0, MAGIC.length);
        t[MAGIC.length] = VERSION;
        t[MAGIC.length + 1] = (byte) flags;
        return t;
    }

    /**
     * The flags of the trailer at the end of {@code area} (the whole private data area as received), masked to the
     * extensions this release knows; -1 when there is none: another magic (the peer's own data, or no jroce), or a
     * version this release does not speak.
     */
    public static int decode(byte[] area) {
        if (area == null || area.length < LENGTH) return -1;
        int at = area.length - LENGTH;
        for (int i = 0; i < MAGIC.length; i++) {
            if (area[at + i] != MAGIC[i]) return -1;
        }
        if (area[at + MAGIC.length] != VERSION) return -1;
        return area[at + MAGIC.length + 1] & JroceExtensions.ALL;
    }
}
