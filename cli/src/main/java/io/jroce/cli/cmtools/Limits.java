package io.jroce.cli.cmtools;

/** What one run of a tool may allocate. */
final class Limits {
    /** All message buffers of a run together: they are direct memory, outside the Java heap's own limit. */
    static final long BUFFER_BYTES = 256L << 20;

    private Limits() {
    }
}
