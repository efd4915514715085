package io.jroce.endpoint.fault;

/**
 * The random faults of one direction: a probability per action and the parameters of the timed ones.
 * Immutable; change one value with the {@code with...} methods.
 *
 * <p>One uniform draw per datagram picks at most one action: the probabilities are laid end to end in the
 * order drop, duplicate, reorder, delay, corrupt, so each is exact and their sum, which must not exceed 1,
 * is the fraction of datagrams that suffer some fault.
 */
public final class FaultPlan {
    /** Default {@link #delayMicros()}: 1 ms. */
    public static final long DEFAULT_DELAY_MICROS = 1_000;
    /** Default {@link #reorderDepth()}: a held datagram is overtaken by 1 to 3 later ones. */
    public static final int DEFAULT_REORDER_DEPTH = 3;
    /** Default {@link #reorderTimeoutMicros()}: 1 ms, so a held datagram is never stuck when traffic stops. */
    public static final long DEFAULT_REORDER_TIMEOUT_MICROS = 1_000;

    private static final FaultPlan NONE = new FaultPlan(0, 0, 0, 0, 0,
            DEFAULT_DELAY_MICROS, DEFAULT_REORDER_DEPTH, DEFAULT_REORDER_TIMEOUT_MICROS);

    private final double drop;
    private final double duplicate;
    private final double reorder;
    private final double delay;
    private final double corrupt;
    private final long delayMicros;
    private final int reorderDepth;
    private final long reorderTimeoutMicros;
    // upper ends of each action's slice of [0, 1)
    private final double dropBelow;
    private final double duplicateBelow;
    private final double reorderBelow;
    private final double delayBelow;
    private final double corruptBelow;

    FaultPlan(double drop, double duplicate, double reorder, double delay, double corrupt,
                      long delayMicros, int reorderDepth, long reorderTimeoutMicros) {
        this.drop = probability("drop", drop);
        this.duplicate = probability("duplicate", duplicate);
        this.reorder = probability("reorder", reorder);
        this.delay = probability("delay", delay);
        this.corrupt = probability("corrupt", corrupt);
        if (delayMicros < 0) {
            throw new IllegalArgumentException("delay must be >= 0 microseconds, was " + delayMicros);
        }
        if (reorderDepth < 1) {
            throw new IllegalArgumentException("reorder depth must be >= 1 datagram, was " + reorderDepth);
        }
        if (reorderTimeoutMicros < 1) {
            throw new IllegalArgumentException("reorder timeout must be >= 1 microsecond, was " + reorderTimeoutMicros);
        }
        this.delayMicros = delayMicros;
        this.reorderDepth = reorderDepth;
        this.reorderTimeoutMicros = reorderTimeoutMicros;
        this.dropBelow = drop;
        this.duplicateBelow = dropBelow + duplicate;
        this.reorderBelow = duplicateBelow + reorder;
        this.delayBelow = reorderBelow + delay;
        this.corruptBelow = delayBelow + corrupt;
        if (corruptBelow > 1 + 1e-9) {
            throw new IllegalArgumentException("drop+duplicate+reorder+delay+corrupt must not exceed 1 (a datagram gets "
                    + "at most one fault), was " + corruptBelow);
        }
    }

    private static double probability(String name, double p) {
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException(name + " probability must be between 0 and 1, was " + p);
        }
        return p;
    }

    /** No random faults, default timings. */
    public static FaultPlan none() {
        return NONE;
    }

    public FaultPlan withDrop(double p) {
        return new FaultPlan(p, duplicate, reorder, delay, corrupt, delayMicros, reorderDepth, reorderTimeoutMicros);
    }

    public FaultPlan withDuplicate(double p) {
        return new FaultPlan(drop, p, reorder, delay, corrupt, delayMicros, reorderDepth, reorderTimeoutMicros);
    }

    public FaultPlan withReorder(double p) {
        return new FaultPlan(drop, duplicate, p, delay, corrupt, delayMicros, reorderDepth, reorderTimeoutMicros);
    }

    public FaultPlan withDelay(double p) {
        return new FaultPlan(drop, duplicate, reorder, p, corrupt, delayMicros, reorderDepth, reorderTimeoutMicros);
    }

    public FaultPlan withCorrupt(double p) {
        return new FaultPlan(drop, duplicate, reorder, delay, p, delayMicros, reorderDepth, reorderTimeoutMicros);
    }

    public FaultPlan withDelayMicros(long micros) {
        return new FaultPlan(drop, duplicate, reorder, delay, corrupt, micros, reorderDepth, reorderTimeoutMicros);
    }

    public FaultPlan withReorderDepth(int datagrams) {
        return new FaultPlan(drop, duplicate, reorder, delay, corrupt, delayMicros, datagrams, reorderTimeoutMicros);
    }

    public FaultPlan withReorderTimeoutMicros(long micros) {
        return new FaultPlan(drop, duplicate, reorder, delay, corrupt, delayMicros, reorderDepth, micros);
    }

    /** The probability of {@code action}; for {@link FaultAction#PASS}, what is left over. */
    public double probability(FaultAction action) {
        switch (action) {
            case DROP:
                return drop;
            case DUPLICATE:
                return duplicate;
            case REORDER:
                return reorder;
            case DELAY:
                return delay;
            case CORRUPT:
                return corrupt;
            case REWRITE:
                return 0; // only rules rewrite: a plan has nothing to write
            default:
                return Math.max(0, 1 - corruptBelow);
        }
    }

    public double drop() {
        return drop;
    }

    public double duplicate() {
        return duplicate;
    }

    public double reorder() {
        return reorder;
    }

    public double delay() {
        return delay;
    }

    public double corrupt() {
        return corrupt;
    }

    /** How long a {@link FaultAction#DELAY}ed datagram is held. */
    public long delayMicros() {
        return delayMicros;
    }

    /** A {@link FaultAction#REORDER}ed datagram is overtaken by 1 to this many later datagrams (uniformly). */
    public int reorderDepth() {
        return reorderDepth;
    }

    /** A {@link FaultAction#REORDER}ed datagram is released after this long even if no later datagram came. */
    public long reorderTimeoutMicros() {
        return reorderTimeoutMicros;
    }

    /** True if no random fault can happen. */
    public boolean isNone() {
        return corruptBelow == 0;
    }

    /** The action for a uniform draw {@code u} in [0, 1). */
    FaultAction pick(double u) {
        if (u >= corruptBelow) {
            return FaultAction.PASS;
        }
        if (u < dropBelow) {
            return FaultAction.DROP;
        }
        if (u < duplicateBelow) {
            return FaultAction.DUPLICATE;
        }
        if (u < reorderBelow) {
            return FaultAction.REORDER;
        }
        return u < delayBelow ? FaultAction.DELAY : FaultAction.CORRUPT;
    }

    /** This plan in {@code --chaos} syntax, every key with {@code prefix} ({@code "in."}, {@code "out."} or empty). */
    String spec(String prefix) {
        return prefix + "drop=" + drop + ',' + prefix + "dup=" + duplicate + ',' + prefix + "reorder=" + reorder
                + ',' + prefix + "delay=" + delay + ',' + prefix + "corrupt=" + corrupt
                + ',' + prefix + "delay_us=" + delayMicros + ',' + prefix + "reorder_depth=" + reorderDepth
                + ',' + prefix + "reorder_timeout_us=" + reorderTimeoutMicros;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof FaultPlan)) {
            return false;
        }
        FaultPlan p = (FaultPlan) o;
        return drop == p.drop && duplicate == p.duplicate && reorder == p.reorder && delay == p.delay
                && corrupt == p.corrupt && delayMicros == p.delayMicros && reorderDepth == p.reorderDepth
                && reorderTimeoutMicros == p.reorderTimeoutMicros;
    }

    @Override
    public int hashCode() {
        int h = Double.hashCode(drop);
        h = 31 * h + Double.hashCode(duplicate);
        h = 31 * h + Double.hashCode(reorder);
        h = 31 * h + Double.hashCode(delay);
        h = 31 * h + Double.hashCode(corrupt);
        h = 31 * h + Long.hashCode(delayMicros);
        h = 31 * h + reorderDepth;
        return 31 * h + Long.hashCode(reorderTimeoutMicros);
    }

    @Override
    public String toString() {
        return "FaultPlan{" + spec("") + '}';
    }
}
