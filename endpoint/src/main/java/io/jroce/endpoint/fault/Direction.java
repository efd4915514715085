package io.jroce.endpoint.fault;

/** Which way a datagram travels through a {@link FaultInjector}: received from the socket, or sent to it. */
public enum Direction {
    /** From the socket towards the RoCE handler ({@code channelRead}). */
    IN("in"),
    /** From the RoCE handler towards the socket ({@code write}). */
    OUT("out");

    private final String key;

    Direction(String key) {
        this.key = key;
    }

    /** The lower-case prefix used in counter names and in the {@code --chaos} spec: {@code in}, {@code out}. */
    public String key() {
        return key;
    }
}
