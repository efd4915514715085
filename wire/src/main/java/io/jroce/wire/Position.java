package io.jroce.wire;

/**
 * Where a packet sits inside its message (the FIRST/MIDDLE/LAST/ONLY opcode suffixes).
 * Single-packet operations (READ request, ACK, atomics, CNP) are {@link #ONLY}.
 */
public enum Position {
    FIRST, MIDDLE, LAST, ONLY
}
