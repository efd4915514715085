package io.jroce.endpoint.cm;

/** What a {@link CmAgent} has seen and done; a snapshot, read with {@link CmAgent#counters()}. */
public record CmCounters(
        long madsIn, long madsOut, long retransmits,
        long malformed, long unknownAttribute, long unmatched, long inboundOverflow,
        long pendingOverflow, long backlogOverflow, long duplicates,
        long rejSent, long rejReceived, long connected, long disconnected, long timedOut) {

    /** Everything dropped without an answer: malformed, unknown attribute, unmatched, queue and pending overflows. */
    public long dropped() {
        return malformed + unknownAttribute + unmatched + inboundOverflow + pendingOverflow;
    }
}
