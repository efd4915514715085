package io.jroce.endpoint.fault;

import io.jroce.endpoint.DatagramFilter;
import io.jroce.wire.Problem;
import io.jroce.wire.RocePacket;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.channel.socket.DatagramPacket;
import io.netty.util.concurrent.ScheduledFuture;

import java.nio.channels.ClosedChannelException;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Seeded fault injection at the head of a device's pipeline (after Aeron's {@code LossGenerator}): drops,
 * duplicates, reorders, delays and corrupts datagrams in both directions, at random with a {@link FaultPlan}
 * per direction, and on cue with {@link FaultRule}s ("drop the first ACK"), which can also rewrite a field of a
 * packet and keep its ICRC valid ("every remote access error NAK says invalid request").
 *
 * <pre>{@code
 * FaultInjector chaos = FaultInjector.builder().seed(42).drop(0.05).reorder(0.05).corrupt(0.001).build();
 * chaos.addRule(FaultRule.drop().inbound().opcode(Opcode.RC_ACKNOWLEDGE));
 * Device d = Device.open(new DeviceConfig(address).filter(chaos));
 * log.info("chaos {}", chaos.spec());       // replay with --chaos <that spec>
 * }</pre>
 *
 * <p><b>Decisions.</b> For every datagram that arrives in a direction the injector takes exactly one
 * {@link FaultAction}: the action of the first rule that fires, else one drawn from the direction's plan.
 * Each direction has its own random stream split from the seed, and every datagram consumes the same two
 * draws from it whatever happens to it, so the decisions in one direction depend only on the seed and the
 * number of datagrams that came before in that direction: not on the traffic in the other direction, not on
 * the timing, and not on which rules fired. Datagrams the injector releases later (held, delayed,
 * duplicates) are not decided again. Messages that are not {@link DatagramPacket}s pass untouched and
 * uncounted. Datagrams that do not decode as RoCE get random faults but match only rules that name no
 * opcode, PSN or QP.
 *
 * <p><b>Buffers.</b> The injector owns each datagram it is handed. DROP releases it (and succeeds a
 * non-void write promise: the network lost it, not the host). DUPLICATE forwards the original and then a
 * {@link DatagramPacket#retainedDuplicate()}: the two share bytes, which is safe because nothing downstream
 * writes into a datagram it forwards or receives (the RoCE handler only reads; the socket only reads).
 * CORRUPT flips the bit in a {@link ByteBuf#copy()} and releases the original, never in place: an inbound
 * datagram is a slice of the receive batch buffer, and an outbound one may be referenced elsewhere by its
 * sender, so writing into it could damage bytes that were never meant to be corrupted. Corruption is rare
 * enough that the copy costs nothing that matters; REWRITE works on a copy too. REORDER and DELAY keep the
 * datagram, and the write promise, until it is forwarded; {@link #handlerRemoved} releases whatever is still
 * held when the channel closes and fails non-void promises.
 *
 * <p><b>Forwarding.</b> Inbound datagrams go on with {@code fireChannelRead}; outbound ones with
 * {@code write} and their original promise (the RoCE handler writes with the void promise). A datagram
 * released from a timer is followed by {@code fireChannelReadComplete} (inbound) or {@code flush} (outbound),
 * since no read batch or doorbell flush is in progress then; one released because later datagrams overtook it
 * rides on the batch that overtook it.
 *
 * <p><b>Threads.</b> The handler methods run on the channel's event loop. Rules may be added and removed from
 * any thread ({@link #addRule}), plans replaced from any thread ({@link #plan(Direction, FaultPlan)}), and
 * counters read from any thread. The injector is {@code @Sharable}: a device with several event loops puts it on
 * each loop's socket. The random streams and the rules are then shared (each draw and rule step under a lock,
 * so a direction's decisions still follow one stream, in the order the loops reach it), while the datagrams held
 * back (reorder, delay) stay with the channel they came through and are released on its loop: a datagram is never
 * reordered behind one of another socket.
 */
@ChannelHandler.Sharable
public final class FaultInjector extends ChannelDuplexHandler implements DatagramFilter {
    private static final FaultAction[] ACTIONS = FaultAction.values();
    private static final Direction[] DIRECTIONS = Direction.values();
    private static final FaultRule[] NO_RULES = new FaultRule[0];

    private final long seed;
    private final Lane in;
    private final Lane out;
    private final AtomicLongArray counts = new AtomicLongArray(DIRECTIONS.length * ACTIONS.length);

    private final Object rulesLock = new Object();
    private volatile FaultRule[] rules = NO_RULES;
    private int ruleSerial; // guarded by rulesLock

    /** Per channel: its context and the datagrams held back on it. */
    private final Map<ChannelHandlerContext, Port> ports = new ConcurrentHashMap<>();
    private final AtomicInteger pending = new AtomicInteger();

    FaultInjector(long seed, FaultPlan inPlan, FaultPlan outPlan) {
        this.seed = seed;
        SplittableRandom root = new SplittableRandom(seed);
        this.in = new Lane(Direction.IN, root.split(), inPlan);
        this.out = new Lane(Direction.OUT, root.split(), outPlan);
    }

    public static FaultInjectorBuilder builder() {
        return new FaultInjectorBuilder();
    }

    /**
     * An injector from a {@code --chaos} spec, e.g. {@code drop=0.05,dup=0.01,in.reorder=0.05,seed=42}; see
     * {@link FaultSpec} for the grammar.
     *
     * @throws IllegalArgumentException naming the offending key, for an unknown key, a bad number or a
     *                                  probability outside 0..1
     */
    public static FaultInjector parse(String spec) {
        FaultInjectorBuilder b = FaultSpec.parse(spec);
        try {
            return b.build();
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("chaos spec: " + e.getMessage(), e);
        }
    }

    /** The seed of the random decisions: the same seed and the same traffic give the same faults. */
    public long seed() {
        return seed;
    }

    /**
     * This injector's plans, seed and rules in {@code --chaos} syntax, so a run can be replayed (rules' names and
     * counters are not included).
     */
    public String spec() {
        StringBuilder s = new StringBuilder(in.plan.spec("in.") + ',' + out.plan.spec("out.") + ",seed=" + seed);
        for (FaultRule r : rules) {
            s.append(',').append(r.spec());
        }
        return s.toString();
    }

    public FaultPlan plan(Direction d) {
        return lane(d).plan;
    }

    /** Replaces the random plan of one direction; takes effect from the next datagram. Any thread. */
    public void plan(Direction d, FaultPlan plan) {
        if (plan == null) {
            throw new IllegalArgumentException("plan is null; use FaultPlan.none() for no random faults");
        }
        lane(d).plan = plan;
    }

    // ------------------------------------------------------------------------------------------------
    // rules

    /**
     * Adds a rule after the existing ones, freezes it and names it {@code r<n>} if it has no name. Any
     * thread; it applies from the next datagram the event loop looks at.
     *
     * @return the rule, for reading its counters or removing it later
     * @throws IllegalStateException if the rule is already in an injector
     */
    public FaultRule addRule(FaultRule rule) {
        synchronized (rulesLock) {
            if (rule.owner != null) {
                throw new IllegalStateException("rule '" + rule.name() + "' is already in "
                        + (rule.owner == this ? "this" : "another") + " injector; remove it first or create a new one");
            }
            rule.freeze("r" + ++ruleSerial);
            rule.owner = this;
            FaultRule[] a = Arrays.copyOf(rules, rules.length + 1);
            a[a.length - 1] = rule;
            rules = a;
        }
        return rule;
    }

    /** Removes a rule; false if it was not in this injector. Its counters stay readable on the rule. */
    public boolean removeRule(FaultRule rule) {
        synchronized (rulesLock) {
            FaultRule[] a = rules;
            for (int i = 0; i < a.length; i++) {
                if (a[i] == rule) {
                    FaultRule[] b = new FaultRule[a.length - 1];
                    System.arraycopy(a, 0, b, 0, i);
                    System.arraycopy(a, i + 1, b, i, a.length - i - 1);
                    rules = b;
                    rule.owner = null;
                    return true;
                }
            }
            return false;
        }
    }

    public void clearRules() {
        synchronized (rulesLock) {
            for (FaultRule r : rules) {
                r.owner = null;
            }
            rules = NO_RULES;
        }
    }

    /** The rules, in evaluation order. */
    public List<FaultRule> rules() {
        return List.of(rules);
    }

    // ------------------------------------------------------------------------------------------------
    // counters

    /** Datagrams that arrived in direction {@code d} and got action {@code a}. */
    public long count(Direction d, FaultAction a) {
        return counts.get(d.ordinal() * ACTIONS.length + a.ordinal());
    }

    public long passed(Direction d) {
        return count(d, FaultAction.PASS);
    }

    public long dropped(Direction d) {
        return count(d, FaultAction.DROP);
    }

    public long duplicated(Direction d) {
        return count(d, FaultAction.DUPLICATE);
    }

    public long reordered(Direction d) {
        return count(d, FaultAction.REORDER);
    }

    public long delayed(Direction d) {
        return count(d, FaultAction.DELAY);
    }

    public long corrupted(Direction d) {
        return count(d, FaultAction.CORRUPT);
    }

    /** Datagrams that arrived in direction {@code d}: the sum of its action counts. */
    public long arrived(Direction d) {
        long n = 0;
        for (FaultAction a : ACTIONS) {
            n += count(d, a);
        }
        return n;
    }

    /** Datagrams held right now (reordered or delayed, both directions), not yet forwarded. */
    public int pending() {
        return pending.get();
    }

    /**
     * A snapshot: {@code in.passed, in.dropped, in.duplicated, in.reordered, in.delayed, in.corrupted,
     * in.rewritten}, the same for {@code out.}, then {@code rule.<name>.fired} for each current rule, in order.
     */
    public Map<String, Long> counters() {
        Map<String, Long> m = new LinkedHashMap<>();
        for (Direction d : DIRECTIONS) {
            for (FaultAction a : ACTIONS) {
                m.put(d.key() + '.' + a.counterName(), count(d, a));
            }
        }
        for (FaultRule r : rules) {
            m.put("rule." + r.name() + ".fired", r.fired());
        }
        return m;
    }

    // ------------------------------------------------------------------------------------------------
    // pipeline

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        ports.put(ctx, new Port(ctx));
    }

    /** The channel is closing (or the handler was taken out): release what is still held. */
    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        Port port = ports.remove(ctx);
        if (port == null) return;
        port.removed = true;
        discardHeld(port.held(in));
        discardHeld(port.held(out));
        updatePending(port);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof DatagramPacket) {
            arrive(ports.get(ctx), in, (DatagramPacket) msg, null);
        } else {
            ctx.fireChannelRead(msg);
        }
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof DatagramPacket) {
            arrive(ports.get(ctx), out, (DatagramPacket) msg, promise);
        } else {
            ctx.write(msg, promise);
        }
    }

    /** One datagram arrives in {@code lane}'s direction: decide, act, count, then release what it overtook. */
    private void arrive(Port port, Lane lane, DatagramPacket packet, ChannelPromise promise) {
        // always the same two draws, so one datagram's fate never shifts the next one's
        double u;
        long param;
        synchronized (lane) {
            u = lane.random.nextDouble();
            param = lane.random.nextLong();
        }
        FaultPlan plan = lane.plan;
        ChannelHandlerContext ctx = port.ctx;
        Held.Queues q = port.held(lane);
        FaultRule rule = firingRule(port, lane.direction, packet);
        FaultAction action = rule != null ? rule.action() : plan.pick(u);
        Held justHeld = null;
        switch (action) {
            case DROP:
                packet.release();
                if (promise != null) {
                    promise.trySuccess();
                }
                break;
            case DUPLICATE:
                DatagramPacket copy = packet.retainedDuplicate(); // before forwarding: downstream releases the original
                forward(ctx, lane, packet, promise);
                forward(ctx, lane, copy, lane == out ? ctx.voidPromise() : null);
                break;
            case REORDER:
                justHeld = new Held(port, lane, packet, promise, 1 + (int) Long.remainderUnsigned(param, plan.reorderDepth()));
                q.reordered.add(justHeld);
                justHeld.timer = ctx.executor().schedule(justHeld, plan.reorderTimeoutMicros(), TimeUnit.MICROSECONDS);
                updatePending(port);
                break;
            case DELAY:
                Held h = new Held(port, lane, packet, promise, 0);
                q.delayed.add(h);
                long micros = rule != null && rule.delayMicros() >= 0 ? rule.delayMicros() : plan.delayMicros();
                h.timer = ctx.executor().schedule(h, micros, TimeUnit.MICROSECONDS);
                updatePending(port);
                break;
            case REWRITE:
                DatagramPacket rewritten = Rewrite.apply(packet, rule.rewriteOffset(), rule.rewriteBytesShared());
                if (rewritten != null) {
                    forward(ctx, lane, rewritten, promise);
                } else {
                    action = FaultAction.PASS; // too short for the bytes: nothing to rewrite
                    forward(ctx, lane, packet, promise);
                }
                break;
            case CORRUPT:
                if (packet.content().isReadable()) {
                    forward(ctx, lane, Corruption.flipOneBit(packet, param), promise);
                } else {
                    action = FaultAction.PASS; // no bit to flip
                    forward(ctx, lane, packet, promise);
                }
                break;
            default:
                forward(ctx, lane, packet, promise);
                break;
        }
        counts.incrementAndGet(lane.direction.ordinal() * ACTIONS.length + action.ordinal());
        if (!q.reordered.isEmpty()) {
            releaseOvertaken(port, lane, justHeld);
        }
    }

    /** The first rule that fires for this datagram, or null. Decodes only when there are rules. */
    private FaultRule firingRule(Port port, Direction d, DatagramPacket packet) {
        FaultRule[] rs = rules;
        if (rs.length == 0) {
            return null;
        }
        ByteBuf b = packet.content();
        RocePacket roce = port.roce;
        RocePacket decoded = roce.decode(b, b.readerIndex(), b.readableBytes()) == Problem.NONE ? roce : null;
        synchronized (rulesLock) { // a rule counts its matches: one step at a time when several loops share it
            for (FaultRule r : rs) {
                if (r.step(d, decoded)) {
                    return r;
                }
            }
        }
        return null;
    }

    /** A datagram goes on its way: downstream inbound, towards the socket outbound. */
    private void forward(ChannelHandlerContext ctx, Lane lane, DatagramPacket packet, ChannelPromise promise) {
        if (lane == in) {
            ctx.fireChannelRead(packet);
        } else {
            ctx.write(packet, promise);
        }
    }

    /** Counts one more arrival against every held datagram but the one just held; forwards those that reach 0. */
    private void releaseOvertaken(Port port, Lane lane, Held justHeld) {
        Held.Queues q = port.held(lane);
        boolean due = false;
        for (Held h : q.reordered) {
            if (h != justHeld && --h.countdown <= 0) {
                due = true;
            }
        }
        // forward in hold order, rescanning after each, since forwarding runs downstream code
        while (due) {
            due = false;
            for (Iterator<Held> it = q.reordered.iterator(); it.hasNext(); ) {
                Held h = it.next();
                if (h != justHeld && h.countdown <= 0) {
                    it.remove();
                    h.timer.cancel(false);
                    updatePending(port);
                    forward(port.ctx, lane, h.packet, h.promise);
                    due = true;
                    break;
                }
            }
        }
    }

    /** A reorder timeout or a delay expired. */
    private void onTimer(Held h) {
        Lane lane = h.lane;
        Port port = h.port;
        Held.Queues q = port.held(lane);
        if (port.removed || !(q.reordered.remove(h) || q.delayed.remove(h))) {
            return; // already forwarded or discarded
        }
        updatePending(port);
        ChannelHandlerContext ctx = port.ctx;
        forward(ctx, lane, h.packet, h.promise);
        if (lane == in) {
            ctx.fireChannelReadComplete();
        } else {
            ctx.flush();
        }
    }

    private void discardHeld(Held.Queues held) {
        for (ArrayDeque<Held> q : List.of(held.reordered, held.delayed)) {
            for (Held h; (h = q.poll()) != null; ) {
                h.timer.cancel(false);
                h.packet.release();
                if (h.promise != null && !h.promise.isVoid()) {
                    h.promise.tryFailure(new ClosedChannelException());
                }
            }
        }
    }

    /** Recounts what {@code port} holds and moves the injector's total by the change. */
    private void updatePending(Port port) {
        int now = port.in.reordered.size() + port.in.delayed.size() + port.out.reordered.size() + port.out.delayed.size();
        pending.addAndGet(now - port.pending);
        port.pending = now;
    }

    private Lane lane(Direction d) {
        return d == Direction.IN ? in : out;
    }

    @Override
    public String toString() {
        return "FaultInjector{" + spec() + ", rules=" + Arrays.toString(rules) + '}';
    }

    // ------------------------------------------------------------------------------------------------

    /** One direction's decisions, shared by the channels: its random stream (drawn under the lane's lock) and plan. */
    private static final class Lane {
        final Direction direction;
        final SplittableRandom random;
        volatile FaultPlan plan;

        Lane(Direction direction, SplittableRandom random, FaultPlan plan) {
            this.direction = direction;
            this.random = random;
            this.plan = plan;
        }
    }

    /** One channel the injector sits on: touched only by that channel's event loop. */
    private final class Port {
        final ChannelHandlerContext ctx;
        final RocePacket roce = new RocePacket();
        final Held.Queues in = new Held.Queues();
        final Held.Queues out = new Held.Queues();
        boolean removed;
        int pending;

        Port(ChannelHandlerContext ctx) {
            this.ctx = ctx;
        }

        Held.Queues held(Lane lane) {
            return lane == FaultInjector.this.in ? in : out;
        }
    }

    /** A datagram held back, with its write promise (null inbound) and the timer that releases it at the latest. */
    private final class Held implements Runnable {
        final Port port;
        final Lane lane;
        final DatagramPacket packet;
        final ChannelPromise promise;
        int countdown;
        ScheduledFuture<?> timer;

        /** The datagrams one channel holds in one direction. */
        static final class Queues {
            final ArrayDeque<Held> reordered = new ArrayDeque<>();
            final ArrayDeque<Held> delayed = new ArrayDeque<>();
        }

        Held(Port port, Lane lane, DatagramPacket packet, ChannelPromise promise, int countdown) {
            this.port = port;
            this.lane = lane;
            this.packet = packet;
            this.promise = promise;
            this.countdown = countdown;
        }

        @Override
        public void run() {
            onTimer(this);
        }
    }
}
