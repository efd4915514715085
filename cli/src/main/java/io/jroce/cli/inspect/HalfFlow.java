package io.jroce.cli.inspect;

import java.net.InetAddress;

/**
 * One direction of a QP conversation: every RoCEv2 packet from {@code src} to {@code dst} for destination
 * QP {@code dqpn}. RC carries no source QPN, so the two directions of a connection are separate half-flows
 * until {@link FlowPairing} joins them. Holds only what the pairing needs, gathered in the first pass.
 */
final class HalfFlow {
    /** Identity of a half-flow: the packet's IP addresses and BTH destination QP. */
    record Key(InetAddress src, InetAddress dst, int dqpn) {
    }

    final Key key;
    final long firstFrame;
    final long firstNanos;
    long lastNanos;
    long packets;
    /** UDP source port of the first packet (rdma_rxe uses one port per QP pair, the same both ways). */
    final int sourcePort;
    /** PSN of the first request / first response packet seen in this direction, -1 if none. */
    int firstRequestPsn = -1;
    int firstResponsePsn = -1;
    long requestPackets;
    /** Set once paired. */
    HalfFlow peer;

    HalfFlow(Key key, long firstFrame, long firstNanos, int sourcePort) {
        this.key = key;
        this.firstFrame = firstFrame;
        this.firstNanos = firstNanos;
        this.lastNanos = firstNanos;
        this.sourcePort = sourcePort;
    }
}
