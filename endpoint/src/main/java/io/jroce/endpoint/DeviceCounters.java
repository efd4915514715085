package io.jroce.endpoint;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Per-device counters. Written only by the event loop; {@link Device#counters()} hands out a copy taken
 * there, so readers see a consistent snapshot. A device with several event loops keeps one set per loop and
 * hands out their sum (each shard's copy taken on its loop).
 */
public final class DeviceCounters {
    public long packetsIn;
    public long bytesIn;
    public long packetsOut;
    public long bytesOut;
    public long retransmits;
    public long timeouts;
    public long ghostResponse;
    public long sendErrors;
    /** UDP GSO super-datagrams written, and the RoCE packets (segments) they held. */
    public long gsoDatagrams;
    public long gsoSegments;
    /**
     * Datagrams one shard read for a QP another shard owns and handed over ({@link DeviceConfig#eventLoops}); 0
     * with one event loop.
     */
    public long shardHandoffs;
    /** UDP GRO: reads that returned a coalesced datagram (more than one RoCE packet), and the packets they held. */
    public long groDatagrams;
    public long groSegments;
    final long[] drops = new long[DropReason.values().length];

    void drop(DropReason reason) {
        drops[reason.ordinal()]++;
    }

    public long drops(DropReason reason) {
        return drops[reason.ordinal()];
    }

    public long totalDrops() {
        long n = 0;
        for (long d : drops) n += d;
        return n;
    }

    void reset() {
        packetsIn = bytesIn = packetsOut = bytesOut = 0;
        retransmits = timeouts = ghostResponse = sendErrors = gsoDatagrams = gsoSegments = shardHandoffs = groDatagrams = groSegments = 0;
        java.util.Arrays.fill(drops, 0);
    }

    DeviceCounters copy() {
        DeviceCounters c = new DeviceCounters();
        c.packetsIn = packetsIn;
        c.bytesIn = bytesIn;
        c.packetsOut = packetsOut;
        c.bytesOut = bytesOut;
        c.retransmits = retransmits;
        c.timeouts = timeouts;
        c.ghostResponse = ghostResponse;
        c.sendErrors = sendErrors;
        c.gsoDatagrams = gsoDatagrams;
        c.gsoSegments = gsoSegments;
        c.shardHandoffs = shardHandoffs;
        c.groDatagrams = groDatagrams;
        c.groSegments = groSegments;
        System.arraycopy(drops, 0, c.drops, 0, drops.length);
        return c;
    }

    /** Adds {@code o} (another shard's copy) into this one. */
    void add(DeviceCounters o) {
        packetsIn += o.packetsIn;
        bytesIn += o.bytesIn;
        packetsOut += o.packetsOut;
        bytesOut += o.bytesOut;
        retransmits += o.retransmits;
        timeouts += o.timeouts;
        ghostResponse += o.ghostResponse;
        sendErrors += o.sendErrors;
        gsoDatagrams += o.gsoDatagrams;
        gsoSegments += o.gsoSegments;
        shardHandoffs += o.shardHandoffs;
        for (int i = 0; i < drops.length; i++) drops[i] += o.drops[i];
    }

    public Map<String, Long> asMap() {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("packets_in", packetsIn);
        m.put("bytes_in", bytesIn);
        m.put("packets_out", packetsOut);
        m.put("bytes_out", bytesOut);
        m.put("retransmits", retransmits);
        m.put("timeouts", timeouts);
        m.put("unexpected_responses", ghostResponse);
        m.put("send_errors", sendErrors);
        m.put("gso_datagrams", gsoDatagrams);
        m.put("gso_segments", gsoSegments);
        m.put("shard_handoffs", shardHandoffs);
        m.put("gro_datagrams", groDatagrams);
        m.put("gro_segments", groSegments);
        for (DropReason r : DropReason.values()) m.put("drop_" + r.name().toLowerCase(), drops[r.ordinal()]);
        return m;
    }

    @Override
    public String toString() {
        return asMap().toString();
    }
}
