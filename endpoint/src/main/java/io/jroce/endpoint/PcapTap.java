package io.jroce.endpoint;

import io.jroce.wire.Icrc;
import io.jroce.wire.pcap.PcapWriter;
import io.netty.buffer.ByteBuf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;

/**
 * Records the datagrams of one shard to the device's capture ({@link DeviceConfig#pcap}), sent and received, with
 * the Ethernet, IP and UDP headers the socket hides synthesised around them, stamped by the writer's monotonic
 * clock (microseconds in the file). Off during the warm-up; the shards of a device share one writer and take turns
 * on it, stamping inside their turn so that records are in time order (capturing is off by default, not a fast path).
 */
final class PcapTap {
    private static final Logger log = LoggerFactory.getLogger(PcapTap.class);
    private final PcapWriter file;
    /** {@link #file} once the device is live; null before (and without a capture). Loop only. */
    private PcapWriter live;

    PcapTap(PcapWriter file) {
        this.file = file;
    }

    /** Starts recording (the device goes live after its warm-up). */
    void goLive() {
        live = file;
    }

    boolean on() {
        return live != null;
    }

    void record4(int src, int sport, int dst, int dport, int ipId, ByteBuf b, int off, int len) {
        try {
            synchronized (live) {
                live.writeUdpIpv4(live.clock().epochNanos(), src, sport, dst, dport, ipId, Icrc.IPV4_DF, b, off, len);
            }
        } catch (IOException | RuntimeException e) {
            log.warn("pcap recording failed: {}", e.toString());
        }
    }

    void record6(byte[] src, int sport, byte[] dst, int dport, ByteBuf b, int off, int len) {
        try {
            synchronized (live) {
                live.writeUdpIpv6(live.clock().epochNanos(), src, sport, dst, dport, b, off, len);
            }
        } catch (IOException | RuntimeException e) {
            log.warn("pcap recording failed: {}", e.toString());
        }
    }
}
