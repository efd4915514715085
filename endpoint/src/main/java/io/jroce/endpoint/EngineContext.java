package io.jroce.endpoint;

/**
 * What a queue pair's engines (requester, completer, responder) see of the device shard that runs them: its
 * transmit path, clock, timers, counters, keys, flow budget and the two deferred actions of a cycle (an ACK owed,
 * a flush). Not the socket, not the receive path, not the threading: the engines run on the shard's loop and
 * never wait.
 */
interface EngineContext {
    PacketOut out();

    Clock clock();

    Timers timers();

    DeviceCounters counters();

    KeyTable keys();

    /** Flow control: what the shard's QPs may keep in flight against the receive buffer. */
    FlowBudget flow();

    /** Most PSNs a QP may have unacknowledged. */
    int maxUnackedPsns();

    /** The shared smallest round trip to {@code peer} of this loop's congestion-controlled QPs. */
    PathRtt pathRtt(java.net.InetAddress peer);

    /** The tail-loss probe interval, 0 when off. */
    long tailProbeNanos();

    /** Lists {@code r} as owing a coalesced ACK, sent at the end of this cycle (once until then). */
    void ackPending(Responder r);

    /** Flushes once, after whatever else the loop has queued. */
    void flushLater();

    /** Runs {@code r} on the loop after the current work (never inline). */
    void execute(Runnable r);

    /**
     * The selective-repeat stores of this shard's QPs: reserves {@code bytes} of their common budget
     * ({@link Transport#REORDER_RETAINED_MAX}); false, and nothing reserved, when it would be exceeded.
     */
    boolean reserveReorderBytes(long bytes);

    /** Returns {@code bytes} reserved by {@link #reserveReorderBytes}. */
    void releaseReorderBytes(long bytes);
}
