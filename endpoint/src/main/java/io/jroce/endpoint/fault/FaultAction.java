package io.jroce.endpoint.fault;

/**
 * What a {@link FaultInjector} does to one datagram. Exactly one action is taken per arriving datagram, so
 * per direction the counters of all actions add up to the datagrams that arrived.
 */
public enum FaultAction {
    /** Forwarded unchanged, at once. */
    PASS("passed"),
    /** Released; never forwarded. */
    DROP("dropped"),
    /** Forwarded twice, back to back: the original, then a duplicate sharing its bytes. */
    DUPLICATE("duplicated"),
    /**
     * Held back, then forwarded after the next 1..depth datagrams that arrive in the same direction, or when
     * the reorder timeout expires, whichever comes first.
     */
    REORDER("reordered"),
    /** Forwarded after a fixed delay (microseconds) from the event loop's scheduler. */
    DELAY("delayed"),
    /** Forwarded as a copy with one bit flipped, chosen so the receiver's ICRC check rejects it. */
    CORRUPT("corrupted"),
    /**
     * Forwarded as a copy with a rule's bytes written at a rule's offset and the ICRC made valid again, so the
     * receiver accepts a well-formed packet that says something else (a NAK code, an MSN, an atomic's original
     * value). Only on cue from a {@link FaultRule#rewrite}; never drawn from a {@link FaultPlan}.
     */
    REWRITE("rewritten");

    private final String counterName;

    FaultAction(String counterName) {
        this.counterName = counterName;
    }

    /** The past-tense name used in {@link FaultInjector#counters()}: {@code in.dropped}, {@code out.passed}, ... */
    public String counterName() {
        return counterName;
    }
}
