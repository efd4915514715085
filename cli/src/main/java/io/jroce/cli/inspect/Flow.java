package io.jroce.cli.inspect;

import io.jroce.wire.Opcode;
import io.jroce.wire.Position;

import java.net.InetAddress;
import java.util.Map;
import java.util.TreeMap;

/**
 * One QP conversation: endpoint 0 (the sender of the flow's first packet) and endpoint 1, each an IP address
 * and a QPN, and the traffic between them in both directions. Each endpoint may act as a requester; its
 * requests and the answers to them are analysed by its {@link RequesterSide}.
 */
public final class Flow {
    final int number;
    final InetAddress[] address = new InetAddress[2];
    /** QPN of each endpoint (the destination QP of the packets sent to it); -1 if nothing was sent to it. */
    final int[] qpn = {-1, -1};
    final RequesterSide[] sides = {new RequesterSide(this, 0), new RequesterSide(this, 1)};

    long firstFrame = Long.MAX_VALUE;
    long lastFrame;
    long firstNanos = Long.MAX_VALUE;
    long lastNanos = Long.MIN_VALUE;
    long packets;
    /** IP packet bytes (headers included), both directions. */
    long bytes;
    final Map<Integer, Long> byOpcode = new TreeMap<>();
    long icrcFailures;
    long malformed;
    long cnps;
    long unreliable;
    private int pathMtu;

    Flow(int number, HalfFlow first, HalfFlow second) {
        this.number = number;
        address[0] = first.key.src();
        address[1] = first.key.dst();
        qpn[1] = first.key.dqpn();
        if (second != null) {
            qpn[0] = second.key.dqpn();
        }
        firstNanos = first.firstNanos;
        lastNanos = second == null ? first.lastNanos : Math.max(first.lastNanos, second.lastNanos);
        if (second != null) {
            firstNanos = Math.min(firstNanos, second.firstNanos);
        }
    }

    /** 1-based number, in order of the flows' first frames. */
    public int number() {
        return number;
    }

    /** Counts a packet of this flow, whatever its state. */
    void count(long frame, int ipBytes) {
        packets++;
        bytes += ipBytes;
        firstFrame = Math.min(firstFrame, frame);
        lastFrame = Math.max(lastFrame, frame);
    }

    void countOpcode(int code) {
        byOpcode.merge(code, 1L, Long::sum);
    }

    /** FIRST and MIDDLE packets carry exactly one path MTU of payload (rxe_resp.c check_length). */
    void notePayload(Opcode op, int payload) {
        if ((op.position() == Position.FIRST || op.position() == Position.MIDDLE) && payload > pathMtu) {
            pathMtu = payload;
        }
    }

    /** The path MTU seen in FIRST/MIDDLE packets so far, 0 if none yet. */
    int pathMtuEstimate() {
        return pathMtu;
    }

    long durationNanos() {
        return lastNanos > firstNanos ? lastNanos - firstNanos : 0;
    }
}
