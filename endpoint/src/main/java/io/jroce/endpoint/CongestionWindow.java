package io.jroce.endpoint;

/**
 * The requester's window policy: how many PSNs a QP may have in flight beyond what the device's flow budget
 * allows, and what it learns from acknowledgements, round trips, losses, timeouts and CNPs. Plain IBA has none
 * ({@link #NONE}: only the device window and the peer's credits limit a requester, IBA 9.7.7); between jroce
 * peers that agreed on {@link JroceExtensions#CONGESTION_CONTROL} it is {@link CongestionControl}. The completer
 * feeds it and the requester asks it, with no branch on whether the extension is on.
 */
interface CongestionWindow {
    /** PSNs the window allows unacknowledged. */
    int limit();

    /** {@code packets} new PSNs were acknowledged at {@code now}; {@code srtt} is the smoothed round trip. */
    void onAcked(int packets, long now, long srtt);

    /** A round-trip sample. */
    void onRtt(long rtt, long now);

    /** A new loss recovery started (SACK, sequence NAK). */
    void onLoss(long now, long srtt);

    /** One packet was sent again (selective repeat); {@code srtt} is the smoothed round trip. */
    void onResent(long now, long srtt);

    /** The local ACK timer expired. */
    void onTimeout(long now);

    /** A CNP named the QP (RoCEv2 annex A17.9). */
    void onCnp(long now);

    /** Writes the window's counters into {@code c}. */
    void report(QpCounters c);

    /** No congestion window: plain IBA. */
    CongestionWindow NONE = new CongestionWindow() {
        @Override public int limit() { return Integer.MAX_VALUE; }
        @Override public void onAcked(int packets, long now, long srtt) { }
        @Override public void onRtt(long rtt, long now) { }
        @Override public void onLoss(long now, long srtt) { }
        @Override public void onResent(long now, long srtt) { }
        @Override public void onTimeout(long now) { }
        @Override public void onCnp(long now) { }
        @Override public void report(QpCounters c) { }
    };
}
