package io.jroce.endpoint;

import java.util.LinkedHashMap;
import java.util.Map;

/** Per-QP counters, written by the event loop; {@link QueuePair#counters()} returns a snapshot. */
public final class QpCounters {
    public long packetsOut;
    public long bytesOut;
    public long packetsIn;
    public long bytesIn;
    public long retries;
    public long timeouts;
    public long naksSent;
    public long naksReceived;
    public long seqNaksSent;
    public long seqNaksReceived;
    public long rnrNaksSent;
    public long rnrNaksReceived;
    public long rnrWaits;
    public long duplicatesSeen;
    public long outOfOrder;
    public long ghostResponses;
    /** Tail-loss probes: single resends of the oldest unacknowledged packet (no rewind, no retry count). */
    public long probes;
    /** Selective repeat, responder: SACKs sent (one per run of held requests per receive burst) and requests dropped beyond the window. */
    public long sacksSent;
    public long oooDropped;
    /** Selective repeat: READ responses placed although an earlier one of the same READ was still missing. */
    public long readResponsesPlacedOutOfOrder;
    /** Selective repeat, responder: WRITE packets whose bytes were placed on arrival past a gap in their own message. */
    public long writesPlacedOutOfOrder;
    /** Selective repeat, requester: SACKs received and single packets resent for them or after a timeout. */
    public long sacksReceived;
    public long selectiveRetransmits;
    /** Selective repeat, requester: resends found lost (a SACK for a packet sent after them) and resent again. */
    public long lostRetransmits;
    /** Congestion control: current window (packets), its decreases, and CNPs received. */
    public long cwnd;
    public long cwndDecreases;
    /** Congestion control: the smallest round trip seen and the standing one (smallest of the last few), in µs. */
    public long minRttMicros;
    public long rttMicros;
    public long cnpsReceived;
    /**
     * Responder: plain positive ACKs sent (duplicate re-ACKs included; NAKs, READ responses and atomic ACKs not),
     * and ACKs not sent because a later one of the same receive burst covered them (ACK coalescing).
     */
    public long acksSent;
    public long acksCoalesced;

    QpCounters copy() {
        QpCounters c = new QpCounters();
        c.packetsOut = packetsOut;
        c.bytesOut = bytesOut;
        c.packetsIn = packetsIn;
        c.bytesIn = bytesIn;
        c.retries = retries;
        c.timeouts = timeouts;
        c.naksSent = naksSent;
        c.naksReceived = naksReceived;
        c.seqNaksSent = seqNaksSent;
        c.seqNaksReceived = seqNaksReceived;
        c.rnrNaksSent = rnrNaksSent;
        c.rnrNaksReceived = rnrNaksReceived;
        c.rnrWaits = rnrWaits;
        c.duplicatesSeen = duplicatesSeen;
        c.outOfOrder = outOfOrder;
        c.ghostResponses = ghostResponses;
        c.probes = probes;
        c.sacksSent = sacksSent;
        c.oooDropped = oooDropped;
        c.readResponsesPlacedOutOfOrder = readResponsesPlacedOutOfOrder;
        c.writesPlacedOutOfOrder = writesPlacedOutOfOrder;
        c.sacksReceived = sacksReceived;
        c.selectiveRetransmits = selectiveRetransmits;
        c.lostRetransmits = lostRetransmits;
        c.cwnd = cwnd;
        c.cwndDecreases = cwndDecreases;
        c.minRttMicros = minRttMicros;
        c.rttMicros = rttMicros;
        c.cnpsReceived = cnpsReceived;
        c.acksSent = acksSent;
        c.acksCoalesced = acksCoalesced;
        return c;
    }

    public Map<String, Long> asMap() {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("packets_out", packetsOut);
        m.put("bytes_out", bytesOut);
        m.put("packets_in", packetsIn);
        m.put("bytes_in", bytesIn);
        m.put("retries", retries);
        m.put("timeouts", timeouts);
        m.put("naks_sent", naksSent);
        m.put("naks_received", naksReceived);
        m.put("seq_naks_sent", seqNaksSent);
        m.put("seq_naks_received", seqNaksReceived);
        m.put("rnr_naks_sent", rnrNaksSent);
        m.put("rnr_naks_received", rnrNaksReceived);
        m.put("rnr_waits", rnrWaits);
        m.put("duplicates_seen", duplicatesSeen);
        m.put("out_of_order", outOfOrder);
        m.put("unexpected_responses", ghostResponses);
        m.put("probes", probes);
        m.put("sacks_sent", sacksSent);
        m.put("ooo_dropped", oooDropped);
        m.put("read_ooo_placed", readResponsesPlacedOutOfOrder);
        m.put("write_ooo_placed", writesPlacedOutOfOrder);
        m.put("sacks_received", sacksReceived);
        m.put("selective_retransmits", selectiveRetransmits);
        m.put("lost_retransmits", lostRetransmits);
        m.put("cwnd", cwnd);
        m.put("cwnd_decreases", cwndDecreases);
        m.put("min_rtt_us", minRttMicros);
        m.put("rtt_us", rttMicros);
        m.put("cnps_received", cnpsReceived);
        m.put("acks_sent", acksSent);
        m.put("acks_coalesced", acksCoalesced);
        return m;
    }

    @Override
    public String toString() {
        return asMap().toString();
    }
}
