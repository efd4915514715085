package io.jroce.wire;

/** Why {@link RocePacket#decode} rejected a datagram; {@link #NONE} if it did not. */
public enum Problem {
    NONE("ok"),
    TOO_SHORT("datagram shorter than BTH+ICRC (16 bytes)"),
    BAD_TVER("BTH transport header version is not 0"),
    UNKNOWN_OPCODE("reserved or unsupported BTH opcode"),
    TRUNCATED_HEADERS("datagram ends inside the extension headers or ICRC the opcode requires"),
    PAD_EXCEEDS_PAYLOAD("BTH pad count larger than the bytes between headers and ICRC"),
    BAD_PAYLOAD_LENGTH("payload length not allowed for the opcode");

    private final String reason;

    Problem(String reason) {
        this.reason = reason;
    }

    /** Short human-readable text for logs and counters. */
    public String reason() {
        return reason;
    }
}
