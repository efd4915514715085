package io.jroce.endpoint.cm;

/**
 * What a {@link CmAgent} has seen and done; a snapshot, read with {@link CmAgent#counters()}. {@code commEstablished}
 * counts passive connections established by their first packet ({@link CmAgent#onFirstPacket}) instead of the RTU. The
 * MAD layer's
 * answers to Gets and Sets no agent takes (GetResp, status 0x000C) are counted by reason: {@code madRepliesCmClass}
 * for the CM class (its ClassPortInfo), {@code madRepliesOtherClass} for classes nothing serves, and
 * {@code madRepliesRateLimited} for those left unanswered over the reply rate ({@link CmConfig#madReplyRate}).
 */
public record CmCounters(
        long madsIn, long madsOut, long retransmits,
        long malformed, long unknownAttribute, long unmatched, long inboundOverflow,
        long pendingOverflow, long backlogOverflow, long duplicates,
        long rejSent, long rejReceived, long connected, long disconnected, long timedOut, long commEstablished,
        long madRepliesCmClass, long madRepliesOtherClass, long madRepliesRateLimited) {

    /** Everything dropped without an answer: malformed, unknown attribute, unmatched, queue and pending overflows. */
    public long dropped() {
        return malformed + unknownAttribute + unmatched + inboundOverflow + pendingOverflow;
    }
}
