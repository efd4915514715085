package io.jroce.cli.inspect;

/**
 * What {@code jroce inspect --graph} draws for one requester of one flow: request packets by PSN over time
 * (first transmissions, retransmissions, out-of-order arrivals), READ responses, the acknowledged PSN as a
 * step line, NAKs,
 * and payload throughput in fixed time bins. PSNs are unwrapped (see {@link RequesterSide#unwrap}); times
 * are seconds since the flow's first packet.
 *
 * <p>Memory is bounded: each point series keeps at most {@value #MAX_POINTS} points; when one fills up it
 * drops every other point and from then on keeps every second (then fourth, ...) new one, so a long capture
 * is thinned evenly rather than cut off.
 */
final class FlowTrace {
    static final int MAX_POINTS = 100_000;
    static final int BINS = 200;

    /** A thinned (x, y) series. */
    static final class Series {
        double[] x = new double[256];
        double[] y = new double[256];
        int n;
        private int stride = 1;
        private long offered;

        void add(double px, double py) {
            if (offered++ % stride != 0) {
                return;
            }
            if (n == x.length) {
                if (n < MAX_POINTS) {
                    x = java.util.Arrays.copyOf(x, Math.min(MAX_POINTS, n * 2));
                    y = java.util.Arrays.copyOf(y, x.length);
                } else {
                    for (int i = 0; i < n / 2; i++) {
                        x[i] = x[2 * i];
                        y[i] = y[2 * i];
                    }
                    n /= 2;
                    stride *= 2;
                }
            }
            x[n] = px;
            y[n] = py;
            n++;
        }

        /** Points offered, kept or not. */
        long offered() {
            return offered;
        }

        boolean thinned() {
            return stride > 1;
        }
    }

    final long startNanos;
    final long binNanos;
    final Series data = new Series();
    final Series retransmissions = new Series();
    final Series outOfOrder = new Series();
    final Series acked = new Series();
    final Series readResponses = new Series();
    final Series naks = new Series();
    final Series rnrNaks = new Series();
    /** Payload bytes per time bin: everything sent, and new data only (goodput). */
    final long[] sentBytes = new long[BINS];
    final long[] newBytes = new long[BINS];
    private long lastAcked = Long.MIN_VALUE;

    FlowTrace(long startNanos, long endNanos) {
        this.startNanos = startNanos;
        this.binNanos = Math.max(1, (endNanos - startNanos + BINS - 1) / BINS);
    }

    private double t(long nanos) {
        return (nanos - startNanos) / 1e9;
    }

    private int bin(long nanos) {
        return (int) Math.max(0, Math.min(BINS - 1, (nanos - startNanos) / binNanos));
    }

    void request(long nanos, long psn, boolean retransmission, int payload) {
        (retransmission ? retransmissions : data).add(t(nanos), psn);
        sentBytes[bin(nanos)] += payload;
        if (!retransmission) {
            newBytes[bin(nanos)] += payload;
        }
    }

    void outOfOrder(long nanos, long psn) {
        outOfOrder.add(t(nanos), psn);
    }

    void nak(long nanos, long psn, boolean rnr) {
        (rnr ? rnrNaks : naks).add(t(nanos), psn);
    }

    void ack(long nanos, long ackedPsn) {
        if (ackedPsn != lastAcked) {
            lastAcked = ackedPsn;
            acked.add(t(nanos), ackedPsn);
        }
    }

    /** RDMA READ data comes back in responses: drawn as points of their own, counted as throughput. */
    void readResponse(long nanos, long psn, int payload, boolean newData) {
        readResponses.add(t(nanos), psn);
        sentBytes[bin(nanos)] += payload;
        if (newData) {
            newBytes[bin(nanos)] += payload;
        }
    }
}
