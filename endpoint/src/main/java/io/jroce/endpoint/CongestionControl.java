package io.jroce.endpoint;

/**
 * The requester's per-QP congestion window ({@link JroceExtensions#CONGESTION_CONTROL}), in packets (PSNs in
 * flight). Window, not rate: jroce has no pacer finer than its event loop, and a window is self-clocked by the
 * acknowledgements the completer already handles. Three signals, each from a published design:
 * <ul>
 * <li>delay (Swift, Kumar et al. SIGCOMM 2020): the completer's round-trip samples against a target of the
 *     smallest round trip seen plus {@link #TARGET_QUEUE_NANOS} of queueing, the smallest of every such QP of the
 *     event loop to the same peer address ({@link PathRtt}: a QP that joined behind a standing queue takes the
 *     base its neighbours measured, where Swift uses a configured base delay); below it the window grows by one
 *     packet per window acknowledged (additive increase), above it shrinks by {@code beta·(rtt-target)/rtt}, at
 *     most once per round trip and by at most half;</li>
 * <li>loss: a new loss recovery (SACK, sequence NAK) halves the window once per round trip when the last round trip
 *     was above the target too, that is when a queue says the loss was congestion; random loss on a link with no
 *     queue (what jroce runs over) is repaired by selective repeat and not taken for congestion (IRN, like DCQCN and
 *     TIMELY, does not cut on loss; Swift does). But the delay rule is only as good as the smallest round trip a QP
 *     has seen: a QP whose first samples came behind a standing queue or a stalled host never sees its target
 *     reached, and its own window then keeps the queue standing. So a loss rate far above random loss,
 *     {@link #HEAVY_LOSS} of what a round trip moved resent (averaged over round trips), halves the window once per
 *     round trip whatever the delay says; the queue it kept drains and the QP measures the path again;</li>
 * <li>a timeout resets the window to the minimum;</li>
 * <li>CNP (DCQCN reaction point, Zhu et al. SIGCOMM 2015, with NVIDIA's defaults): {@code alpha = (1-g)·alpha + g},
 *     the window is cut by {@code alpha/2}, at most once per {@link #CNP_MIN_GAP_NANOS}; alpha decays by (1-g) per
 *     {@link #ALPHA_PERIOD_NANOS} without a CNP, computed lazily on the next CNP instead of by a timer.</li>
 * </ul>
 * Over all of it sits IRN's BDP-FC cap: never more in flight than twice the measured bandwidth-delay product
 * (the highest delivery rate over a round trip times the smallest round trip), nor more than {@code ceiling}
 * (the device window, and with selective repeat the responder's out-of-order window).
 */
final class CongestionControl implements CongestionWindow {
    static final double MIN_WINDOW = 2;
    static final double INITIAL_WINDOW = 16;
    /** Queueing a flow may add before the window shrinks: above jroce's own scheduling noise (tens of µs). */
    static final long TARGET_QUEUE_NANOS = 300_000;
    /**
     * Swift's flow-based scaling: a flow with a small window may add up to this much more queueing before it shrinks,
     * scaled by 1/sqrt(window) between {@link #FS_MIN_WINDOW} (all of it) and {@link #FS_MAX_WINDOW} (none), so that
     * many flows sharing a bottleneck (each with a small window) keep their share instead of being cut to the minimum
     * by a queue they do not build alone, and small flows converge to fairness with large ones.
     */
    static final long FS_RANGE_NANOS = 5 * TARGET_QUEUE_NANOS;
    static final double FS_MIN_WINDOW = 2;
    static final double FS_MAX_WINDOW = 64;
    static final double BETA = 0.8;
    static final double MAX_DECREASE = 0.5;
    /** DCQCN's g: NVIDIA's DCE_TCP_G 1019/1024 keeps 1019/1024 of alpha, i.e. g = 5/1024. */
    static final double G = 5.0 / 1024;
    static final long ALPHA_PERIOD_NANOS = 55_000;
    static final long CNP_MIN_GAP_NANOS = 50_000;
    /**
     * The share of a round trip's packets resent (an average over round trips) above which loss is congestion whatever
     * the delay says: far above the 1-5 % of random loss that selective repeat repairs without a cut.
     */
    static final double HEAVY_LOSS = 0.25;
    /** The weight of the newest round trip in that average. */
    static final double LOSS_GAIN = 1.0 / 8;
    /** The round trip the resent share is measured over while the QP has no round-trip sample. */
    static final long UNSAMPLED_ROUND_NANOS = 1_000_000;

    private final int ceiling;
    /** The smallest round trip of every congestion-controlled QP of this loop to the same peer: the target's base. */
    private final PathRtt path;
    double window = INITIAL_WINDOW;
    private long minRtt = Long.MAX_VALUE;
    /** The last round-trip samples, for the standing round trip. */
    static final int STANDING_SAMPLES = 4;
    private final long[] recent = new long[STANDING_SAMPLES];
    private int recentNext;
    private int recentCount;
    private long standingRtt;
    /** The last round-trip sample was below the target: acknowledgements grow the window. */
    private boolean belowTarget = true;
    /** When the window was last cut; far in the past at first, so the first signal always acts. */
    private long lastDecrease = Long.MIN_VALUE / 4;
    private double alpha = 1;
    private long lastAlphaUpdate;
    private long lastCnpCut;
    // delivery rate over the current round trip, for the BDP cap
    private long rateStart;
    private long delivered;
    private double maxRatePerNano;
    long decreases;
    // the resent share, over round trips
    private long lossStart;
    private long lossAcked;
    private long lossResent;
    double lossRate;

    CongestionControl(int ceiling) {
        this(ceiling, new PathRtt());
    }

    CongestionControl(int ceiling, PathRtt path) {
        this.ceiling = ceiling;
        this.path = path;
        window = Math.min(INITIAL_WINDOW, ceiling);
    }

    /** Packets that may be in flight now. */
    @Override
    public int limit() {
        int w = (int) window;
        int bdp = bdpCap();
        return Math.max((int) MIN_WINDOW, Math.min(Math.min(w, bdp), ceiling));
    }

    /** Twice the measured bandwidth-delay product in packets, or the ceiling while nothing is measured. */
    int bdpCap() {
        if (maxRatePerNano == 0 || minRtt == Long.MAX_VALUE) return ceiling;
        double bdp = maxRatePerNano * minRtt;
        return (int) Math.min(ceiling, Math.max(INITIAL_WINDOW, Math.ceil(2 * bdp)));
    }

    /** {@code packets} more were acknowledged cumulatively at {@code now}; {@code srtt} 0 until measured. */
    @Override
    public void onAcked(int packets, long now, long srtt) {
        if (belowTarget) {
            window += (double) packets / window;
            if (window > ceiling) window = ceiling;
        }
        lossAcked += packets;
        lossRound(now, srtt);
        if (rateStart == 0) {
            rateStart = now; // the interval starts with this acknowledgement, so its packets are not in it
            return;
        }
        delivered += packets;
        if (srtt > 0 && now - rateStart >= srtt) {
            double rate = (double) delivered / (now - rateStart);
            if (rate > maxRatePerNano) maxRatePerNano = rate;
            delivered = 0;
            rateStart = now;
        }
    }

    /**
     * A round-trip sample. The delay rule reads the standing round trip, the smallest of the last
     * {@link #STANDING_SAMPLES} samples (Copa's RTT_standing, Arun and Balakrishnan NSDI 2018): a queue delays every
     * sample while it stands, a thread that was not scheduled in time delays one, and on a host whose cores are shared
     * by more busy threads than it has the second would otherwise read as congestion.
     */
    @Override
    public void onRtt(long rtt, long now) {
        if (rtt <= 0) return;
        if (rtt < minRtt) minRtt = rtt;
        if (rtt < path.minNanos) path.minNanos = rtt;
        recent[recentNext] = rtt;
        recentNext = (recentNext + 1) % STANDING_SAMPLES;
        if (recentCount < STANDING_SAMPLES) recentCount++;
        long standing = Long.MAX_VALUE;
        for (int i = 0; i < recentCount; i++) standing = Math.min(standing, recent[i]);
        rtt = standing;
        standingRtt = standing;
        long target = path.minNanos + TARGET_QUEUE_NANOS + flowScaling(window);
        belowTarget = rtt < target;
        if (!belowTarget && now - lastDecrease >= rtt) {
            double f = Math.max(1 - BETA * (rtt - target) / rtt, 1 - MAX_DECREASE);
            decrease(window * f, now);
        }
    }

    /** Swift's flow-based target scaling for a window of {@code w} packets: FS_RANGE at FS_MIN_WINDOW, 0 at FS_MAX_WINDOW. */
    static long flowScaling(double w) {
        double lo = 1 / Math.sqrt(FS_MAX_WINDOW);
        double hi = 1 / Math.sqrt(FS_MIN_WINDOW);
        double x = (1 / Math.sqrt(Math.max(w, FS_MIN_WINDOW)) - lo) / (hi - lo);
        return (long) (FS_RANGE_NANOS * Math.max(0, Math.min(1, x)));
    }

    /** A new loss recovery began (SACK or sequence NAK): a cut if the delay says there is a queue. */
    @Override
    public void onLoss(long now, long srtt) {
        if (!belowTarget && now - lastDecrease >= Math.max(srtt, 1)) decrease(window * (1 - MAX_DECREASE), now);
    }

    @Override
    public void onResent(long now, long srtt) {
        lossResent++;
        lossRound(now, srtt);
    }

    /**
     * At the end of each round trip: the resent share into its average, and a cut when that is heavy. Without a
     * round-trip sample yet (a QP whose every acknowledgement so far covered a resent packet gets none: Karn's rule)
     * a round is {@link #UNSAMPLED_ROUND_NANOS}.
     */
    private void lossRound(long now, long srtt) {
        if (srtt <= 0) srtt = UNSAMPLED_ROUND_NANOS;
        if (lossStart == 0) {
            lossStart = now;
            return;
        }
        if (now - lossStart < srtt) return;
        long moved = lossAcked + lossResent;
        if (moved > 0) lossRate += LOSS_GAIN * ((double) lossResent / moved - lossRate);
        lossStart = now;
        lossAcked = 0;
        lossResent = 0;
        if (lossRate > HEAVY_LOSS && now - lastDecrease >= srtt) decrease(window * (1 - MAX_DECREASE), now);
    }

    /** The local ACK timer expired. */
    @Override
    public void onTimeout(long now) {
        decrease(MIN_WINDOW, now);
    }

    /** A CNP for this QP: DCQCN's reaction point, applied to the window. */
    @Override
    public void onCnp(long now) {
        if (lastAlphaUpdate != 0) {
            long periods = (now - lastAlphaUpdate) / ALPHA_PERIOD_NANOS;
            if (periods > 0) alpha *= Math.pow(1 - G, Math.min(periods, 100_000));
        }
        alpha = (1 - G) * alpha + G;
        lastAlphaUpdate = now;
        if (lastCnpCut == 0 || now - lastCnpCut >= CNP_MIN_GAP_NANOS) {
            lastCnpCut = now;
            decrease(window * (1 - alpha / 2), now);
        }
    }

    private void decrease(double to, long now) {
        double w = Math.max(MIN_WINDOW, to);
        if (w < window) {
            window = w;
            decreases++;
        }
        lastDecrease = now;
    }

    long minRttNanos() {
        return minRtt == Long.MAX_VALUE ? 0 : minRtt;
    }

    long standingRttNanos() {
        return standingRtt;
    }

    double alpha() {
        return alpha;
    }

    @Override
    public void report(QpCounters c) {
        c.cwnd = limit();
        c.cwndDecreases = decreases;
        c.minRttMicros = minRttNanos() / 1000;
        c.rttMicros = standingRttNanos() / 1000;
    }
}
