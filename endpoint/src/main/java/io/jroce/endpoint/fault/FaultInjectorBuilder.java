package io.jroce.endpoint.fault;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;

/**
 * Builds a {@link FaultInjector} ({@link FaultInjector#builder()}). Setters without a {@link Direction}
 * set both directions; later calls override earlier ones. Everything is checked in {@link #build()}.
 */
public final class FaultInjectorBuilder {
    private Long seed;
    private final Draft[] drafts = {new Draft(), new Draft()};
    private final List<FaultRule> rules = new ArrayList<>();

    FaultInjectorBuilder() {
    }

    /** The seed; without one a random seed is chosen (read it back with {@link FaultInjector#seed()}). */
    public FaultInjectorBuilder seed(long seed) {
        this.seed = seed;
        return this;
    }

    /** Both directions' plans. */
    public FaultInjectorBuilder plan(FaultPlan plan) {
        return plan(null, plan);
    }

    public FaultInjectorBuilder plan(Direction d, FaultPlan plan) {
        return set(d, x -> x.copy(plan));
    }

    public FaultInjectorBuilder drop(double p) {
        return drop(null, p);
    }

    public FaultInjectorBuilder drop(Direction d, double p) {
        return set(d, x -> x.drop = p);
    }

    public FaultInjectorBuilder duplicate(double p) {
        return duplicate(null, p);
    }

    public FaultInjectorBuilder duplicate(Direction d, double p) {
        return set(d, x -> x.duplicate = p);
    }

    public FaultInjectorBuilder reorder(double p) {
        return reorder(null, p);
    }

    public FaultInjectorBuilder reorder(Direction d, double p) {
        return set(d, x -> x.reorder = p);
    }

    public FaultInjectorBuilder delay(double p) {
        return delay(null, p);
    }

    public FaultInjectorBuilder delay(Direction d, double p) {
        return set(d, x -> x.delay = p);
    }

    public FaultInjectorBuilder corrupt(double p) {
        return corrupt(null, p);
    }

    public FaultInjectorBuilder corrupt(Direction d, double p) {
        return set(d, x -> x.corrupt = p);
    }

    public FaultInjectorBuilder delayMicros(long micros) {
        return delayMicros(null, micros);
    }

    public FaultInjectorBuilder delayMicros(Direction d, long micros) {
        return set(d, x -> x.delayMicros = micros);
    }

    public FaultInjectorBuilder reorderDepth(int datagrams) {
        return reorderDepth(null, datagrams);
    }

    public FaultInjectorBuilder reorderDepth(Direction d, int datagrams) {
        return set(d, x -> x.reorderDepth = datagrams);
    }

    public FaultInjectorBuilder reorderTimeoutMicros(long micros) {
        return reorderTimeoutMicros(null, micros);
    }

    public FaultInjectorBuilder reorderTimeoutMicros(Direction d, long micros) {
        return set(d, x -> x.reorderTimeoutMicros = micros);
    }

    /** A rule to add, in order, when the injector is built. */
    public FaultInjectorBuilder rule(FaultRule rule) {
        rules.add(rule);
        return this;
    }

    /** @throws IllegalArgumentException naming the direction, if a plan is invalid */
    public FaultInjector build() {
        FaultPlan inPlan = drafts[0].toPlan(Direction.IN);
        FaultPlan outPlan = drafts[1].toPlan(Direction.OUT);
        FaultInjector f = new FaultInjector(seed != null ? seed : ThreadLocalRandom.current().nextLong(), inPlan, outPlan);
        for (FaultRule r : rules) {
            f.addRule(r);
        }
        return f;
    }

    /** Applies {@code change} to one direction's draft, or to both if {@code d} is null. */
    private FaultInjectorBuilder set(Direction d, Consumer<Draft> change) {
        for (Direction x : Direction.values()) {
            if (d == null || d == x) {
                change.accept(drafts[x.ordinal()]);
            }
        }
        return this;
    }

    /** A plan being built, unchecked until {@link #toPlan}. */
    private static final class Draft {
        double drop;
        double duplicate;
        double reorder;
        double delay;
        double corrupt;
        long delayMicros = FaultPlan.DEFAULT_DELAY_MICROS;
        int reorderDepth = FaultPlan.DEFAULT_REORDER_DEPTH;
        long reorderTimeoutMicros = FaultPlan.DEFAULT_REORDER_TIMEOUT_MICROS;

        void copy(FaultPlan p) {
            drop = p.drop();
            duplicate = p.duplicate();
            reorder = p.reorder();
            delay = p.delay();
            corrupt = p.corrupt();
            delayMicros = p.delayMicros();
            reorderDepth = p.reorderDepth();
            reorderTimeoutMicros = p.reorderTimeoutMicros();
        }

        FaultPlan toPlan(Direction d) {
            try {
                return new FaultPlan(drop, duplicate, reorder, delay, corrupt, delayMicros, reorderDepth, reorderTimeoutMicros);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(d.key() + "bound: " + e.getMessage(), e);
            }
        }
    }
}
