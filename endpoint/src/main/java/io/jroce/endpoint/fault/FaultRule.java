package io.jroce.endpoint.fault;

import io.jroce.wire.Aeth;
import io.jroce.wire.Opcode;
import io.jroce.wire.Operation;
import io.jroce.wire.Psn;
import io.jroce.wire.RocePacket;

import java.util.EnumSet;
import java.util.Set;

/**
 * A targeted fault: "drop the first ACK", "drop the 3rd RC_RDMA_WRITE_MIDDLE", "corrupt the next
 * RC_SEND_ONLY", "duplicate every 10th inbound packet of QP 0x12". Start from the action, narrow the match,
 * say which matches fire, then hand it to {@link FaultInjector#addRule}:
 *
 * <pre>{@code
 * injector.addRule(FaultRule.drop().inbound().opcode(Opcode.RC_ACKNOWLEDGE));                 // the first inbound ACK
 * injector.addRule(FaultRule.drop().opcode(Opcode.RC_RDMA_WRITE_MIDDLE).nth(3));               // the 3rd WRITE_MIDDLE
 * injector.addRule(FaultRule.drop().operation(Operation.RDMA_READ_RESPONSE).psn(p).always()); // every READ response for PSN p
 * injector.addRule(FaultRule.delay(5_000).outbound().destQp(0x12).every(10).times(3));        // the 1st, 11th and 21st to QP 0x12
 * injector.addRule(FaultRule.drop().outbound().nak(Aeth.NakCode.PSN_SEQUENCE_ERROR).always()); // every PSN sequence error NAK we send
 * injector.addRule(FaultRule.rewrite(12, (byte) 0x61).outbound().nak(Aeth.NakCode.REMOTE_ACCESS_ERROR).always());
 *                                                                     // every remote access error NAK becomes an invalid request NAK
 * }</pre>
 *
 * <p><b>Matching.</b> A rule matches a datagram travelling in one of its directions (both by default) whose
 * opcode is in its set (any, if none was named), whose PSN and destination QP equal the ones given (any, if
 * not given), and, if a syndrome was named ({@link #syndrome}, {@link #aeth}, {@link #nak}), that carries an AETH
 * whose syndrome matches it. A rule that names an opcode, PSN, QP or syndrome, and every {@link #rewrite} rule,
 * only matches datagrams that decode as RoCE ({@link RocePacket#decode}); any other rule matches every datagram,
 * RoCE or not.
 *
 * <p><b>Firing.</b> The rule counts its matches m = 1, 2, 3...; it fires on match {@link #nth} and then on every
 * {@link #every}-th match after it, until it has fired {@link #times} times. By default it fires once, on the
 * first match. A rule that matches but does not fire lets the datagram go on to the next rule and then to the
 * random plan; the first rule that fires decides the datagram's fate, and rules after it do not see it.
 *
 * <p><b>Threads.</b> Configure a rule completely before adding it: adding freezes it, and a setter called
 * afterwards throws. The counters are written only by the device's event loop and may be read from any thread.
 * A rule belongs to at most one injector at a time.
 */
public final class FaultRule {
    /** Fire on every match that reaches the rule, without limit. */
    private static final long UNLIMITED = Long.MAX_VALUE;
    /** The NAK codes' names in the {@code --chaos} syntax ({@link FaultRuleSpec}), by code. */
    private static final String[] NAK_NAMES = {"seq", "inv", "acc", "op", "rd"};

    private final FaultAction action;
    private final long delayMicros; // DELAY only; -1: the plan's
    private boolean in = true;
    private boolean out = true;
    private final Set<Opcode> opcodes = EnumSet.noneOf(Opcode.class);
    private final boolean[] opcodeByCode = new boolean[256];
    private int psn = -1;
    private int destQp = -1;
    private int syndromeValue;
    private int syndromeMask; // 0: any datagram, with an AETH or not
    private final int rewriteOffset; // REWRITE only
    private final byte[] rewriteBytes; // REWRITE only
    private long nth = 1;
    private long every = 1;
    private long times = 1;
    private String name;

    private volatile boolean frozen;
    volatile FaultInjector owner;
    // written by the event loop only (single writer), read from anywhere
    private volatile long matched;
    private volatile long fired;

    private FaultRule(FaultAction action, long delayMicros) {
        this(action, delayMicros, -1, null);
    }

    private FaultRule(FaultAction action, long delayMicros, int rewriteOffset, byte[] rewriteBytes) {
        this.action = action;
        this.delayMicros = delayMicros;
        this.rewriteOffset = rewriteOffset;
        this.rewriteBytes = rewriteBytes;
    }

    /** A rule with the given action; the factories below name each one ({@link #rewrite} for REWRITE, which needs its bytes). */
    public static FaultRule of(FaultAction action) {
        if (action == null) {
            throw new IllegalArgumentException("action is null");
        }
        if (action == FaultAction.REWRITE) {
            throw new IllegalArgumentException("a REWRITE rule needs its offset and bytes: use FaultRule.rewrite(offset, bytes)");
        }
        return new FaultRule(action, -1);
    }

    public static FaultRule drop() {
        return of(FaultAction.DROP);
    }

    public static FaultRule duplicate() {
        return of(FaultAction.DUPLICATE);
    }

    public static FaultRule corrupt() {
        return of(FaultAction.CORRUPT);
    }

    /** Hold the datagram back until 1..reorderDepth later ones have passed (the direction's {@link FaultPlan}). */
    public static FaultRule reorder() {
        return of(FaultAction.REORDER);
    }

    /** Delay by the direction's {@link FaultPlan#delayMicros()}. */
    public static FaultRule delay() {
        return of(FaultAction.DELAY);
    }

    /** Delay by {@code micros}, whatever the plan says. */
    public static FaultRule delay(long micros) {
        if (micros < 0) {
            throw new IllegalArgumentException("delay must be >= 0 microseconds, was " + micros);
        }
        return new FaultRule(FaultAction.DELAY, micros);
    }

    /**
     * Write {@code bytes} at {@code offset} (counted from the BTH's first byte) of a copy of the matching RoCE datagram
     * and make its ICRC valid again: the receiver gets a well-formed packet that says something else. Offsets of the
     * fields are in {@link Opcode} ({@code aethOffset()}, {@code atomicAckEthOffset()}, ...): the AETH syndrome is
     * byte {@code aethOffset}, its MSN the 3 bytes after it. A datagram too short for the bytes (they would reach the
     * ICRC) passes unchanged, counted as passed.
     */
    public static FaultRule rewrite(int offset, byte... bytes) {
        if (offset < 0) {
            throw new IllegalArgumentException("a rewrite offset counts bytes from the BTH, was " + offset);
        }
        if (bytes == null || bytes.length == 0) {
            throw new IllegalArgumentException("a rewrite needs at least one byte");
        }
        return new FaultRule(FaultAction.REWRITE, -1, offset, bytes.clone());
    }

    /** Let the matching datagram through untouched, sparing it the random faults (e.g. connection setup). */
    public static FaultRule pass() {
        return of(FaultAction.PASS);
    }

    // ------------------------------------------------------------------------------------------------
    // configuration

    /** Only received datagrams. */
    public FaultRule inbound() {
        return direction(Direction.IN);
    }

    /** Only sent datagrams. */
    public FaultRule outbound() {
        return direction(Direction.OUT);
    }

    /** Both directions, the default; the match count is shared. */
    public FaultRule bothDirections() {
        checkNotFrozen();
        in = true;
        out = true;
        return this;
    }

    public FaultRule direction(Direction d) {
        checkNotFrozen();
        in = d == Direction.IN;
        out = d == Direction.OUT;
        return this;
    }

    /** Adds opcodes to the set this rule matches (empty set: any opcode). */
    public FaultRule opcode(Opcode... ops) {
        checkNotFrozen();
        for (Opcode op : ops) {
            opcodes.add(op);
            opcodeByCode[op.code()] = true;
        }
        return this;
    }

    /** Adds every opcode of {@code op}, e.g. all four RC_RDMA_READ_RESPONSE_* for RDMA_READ_RESPONSE. */
    public FaultRule operation(Operation op) {
        checkNotFrozen();
        for (Opcode o : Opcode.values()) {
            if (o.operation() == op) {
                opcode(o);
            }
        }
        return this;
    }

    /** Only datagrams with this 24-bit BTH PSN. */
    public FaultRule psn(int psn) {
        checkNotFrozen();
        if ((psn & ~Psn.MASK) != 0) {
            throw new IllegalArgumentException("a PSN is 24 bits (0.." + Psn.MASK + "), was " + psn);
        }
        this.psn = psn;
        return this;
    }

    /** Only datagrams whose BTH DestQP is {@code qpn} (24 bits). */
    public FaultRule destQp(int qpn) {
        checkNotFrozen();
        if ((qpn & ~0xFFFFFF) != 0) {
            throw new IllegalArgumentException("a QP number is 24 bits (0..16777215), was " + qpn);
        }
        this.destQp = qpn;
        return this;
    }

    /**
     * Only datagrams with an AETH (ACKNOWLEDGE, ATOMIC ACKNOWLEDGE, READ response First, Last and Only) whose
     * syndrome has {@code value} in the bits of {@code mask} (IBA 9.7.5.1; {@link Aeth}).
     */
    public FaultRule syndrome(int value, int mask) {
        checkNotFrozen();
        if ((mask & ~0xFF) != 0 || mask == 0 || (value & ~mask) != 0) {
            throw new IllegalArgumentException(String.format("a syndrome match is 8 bits, value within a non-zero mask, was value 0x%x mask 0x%x",
                    value, mask));
        }
        this.syndromeValue = value;
        this.syndromeMask = mask;
        return this;
    }

    /** Only AETHs of this kind: ACK, RNR NAK or NAK (syndrome bits 6..5). */
    public FaultRule aeth(Aeth.Kind kind) {
        return syndrome(kind.ordinal() << 5, 0x60);
    }

    /** Only NAKs with this code (syndrome 0x60 | code). */
    public FaultRule nak(Aeth.NakCode code) {
        return syndrome(0x60 | code.code(), 0x7F);
    }

    /** First fire on the n-th match (1-based); default 1. */
    public FaultRule nth(long n) {
        checkNotFrozen();
        if (n < 1) {
            throw new IllegalArgumentException("nth counts matches from 1, was " + n);
        }
        this.nth = n;
        return this;
    }

    /** After the first fire, fire again on every k-th match; default 1 (consecutive matches). */
    public FaultRule every(long k) {
        checkNotFrozen();
        if (k < 1) {
            throw new IllegalArgumentException("every must be >= 1 match, was " + k);
        }
        this.every = k;
        return this;
    }

    /** Fire once (the default). */
    public FaultRule once() {
        return times(1);
    }

    /** Fire at most {@code n} times. */
    public FaultRule times(long n) {
        checkNotFrozen();
        if (n < 1) {
            throw new IllegalArgumentException("times must be >= 1, was " + n);
        }
        this.times = n;
        return this;
    }

    /** Fire on every eligible match, without limit. */
    public FaultRule always() {
        checkNotFrozen();
        this.times = UNLIMITED;
        return this;
    }

    /** The name under which {@link FaultInjector#counters()} reports this rule; default {@code r1, r2, ...}. */
    public FaultRule name(String name) {
        checkNotFrozen();
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("a rule name must not be blank");
        }
        this.name = name;
        return this;
    }

    private void checkNotFrozen() {
        if (frozen) {
            throw new IllegalStateException("this FaultRule was added to an injector and is frozen; configure rules "
                    + "before adding them, or add a new one");
        }
    }

    // ------------------------------------------------------------------------------------------------
    // reading

    public FaultAction action() {
        return action;
    }

    /** The rule's own delay, or -1 to use the plan's. */
    public long delayMicros() {
        return delayMicros;
    }

    public boolean appliesTo(Direction d) {
        return d == Direction.IN ? in : out;
    }

    /** The opcodes matched; empty for any. */
    public Set<Opcode> opcodes() {
        return opcodes.isEmpty() ? EnumSet.noneOf(Opcode.class) : EnumSet.copyOf(opcodes);
    }

    /** The PSN matched, or -1 for any. */
    public int psn() {
        return psn;
    }

    /** The destination QP matched, or -1 for any. */
    public int destQp() {
        return destQp;
    }

    public String name() {
        return name;
    }

    /** The syndrome bits matched ({@link #syndromeMask()} says which); meaningless when the mask is 0. */
    public int syndromeValue() {
        return syndromeValue;
    }

    /** The syndrome bits a match looks at; 0 when the rule does not look at the AETH. */
    public int syndromeMask() {
        return syndromeMask;
    }

    /** Where a REWRITE rule writes, from the BTH's first byte; -1 for other actions. */
    public int rewriteOffset() {
        return rewriteOffset;
    }

    /** What a REWRITE rule writes (a copy); null for other actions. */
    public byte[] rewriteBytes() {
        return rewriteBytes == null ? null : rewriteBytes.clone();
    }

    /** The bytes themselves, for the injector (never handed out). */
    byte[] rewriteBytesShared() {
        return rewriteBytes;
    }

    /** Datagrams this rule has matched so far (whether it fired or not). */
    public long matched() {
        return matched;
    }

    /** Times this rule has fired. */
    public long fired() {
        return fired;
    }

    /** True once the rule has fired as many times as it may. */
    public boolean exhausted() {
        return fired >= times;
    }

    // ------------------------------------------------------------------------------------------------
    // event loop

    /** Freezes the configuration and names the rule if it has no name yet; called by the injector. */
    void freeze(String defaultName) {
        if (name == null) {
            name = defaultName;
        }
        frozen = true;
    }

    /** True if this rule needs a decoded RoCE packet to match. */
    boolean needsRoce() {
        return !opcodes.isEmpty() || psn >= 0 || destQp >= 0 || syndromeMask != 0 || action == FaultAction.REWRITE;
    }

    /**
     * Counts a match and says whether the rule fires for it. {@code roce} is the decoded packet, or null if
     * the datagram did not decode.
     */
    boolean step(Direction d, RocePacket roce) {
        if (!(d == Direction.IN ? in : out)) {
            return false;
        }
        if (needsRoce()) {
            if (roce == null
                    || (!opcodes.isEmpty() && !opcodeByCode[roce.opcode().code()])
                    || (psn >= 0 && roce.psn() != psn)
                    || (destQp >= 0 && roce.destQp() != destQp)
                    || (syndromeMask != 0 && (roce.aeth() == null || (roce.aeth().syndrome() & syndromeMask) != syndromeValue))) {
                return false;
            }
        }
        long m = matched + 1;
        matched = m;
        if (fired >= times || m < nth || (m - nth) % every != 0) {
            return false;
        }
        fired = fired + 1;
        return true;
    }

    /**
     * This rule in {@code --chaos} syntax, e.g. {@code out.rule=drop/nak:seq/always} ({@link FaultRuleSpec}), so that
     * a run can be replayed; its name and counters are not part of it.
     */
    public String spec() {
        StringBuilder s = new StringBuilder(in && out ? "" : in ? "in." : "out.").append("rule=");
        switch (action) {
            case DUPLICATE:
                s.append("dup");
                break;
            case DELAY:
                s.append("delay");
                if (delayMicros >= 0) {
                    s.append(':').append(delayMicros);
                }
                break;
            case REWRITE:
                s.append("rewrite:").append(rewriteOffset).append(':').append(java.util.HexFormat.of().formatHex(rewriteBytes));
                break;
            default:
                s.append(action.name().toLowerCase(java.util.Locale.ROOT));
                break;
        }
        if (!opcodes.isEmpty()) {
            s.append("/op:").append(String.join("+", opcodes.stream().map(Opcode::name).toList()));
        }
        if (psn >= 0) {
            s.append("/psn:").append(psn);
        }
        if (destQp >= 0) {
            s.append("/qp:").append(destQp);
        }
        if (syndromeMask == 0x60 && syndromeValue != 0x40) {
            s.append(syndromeValue == 0 ? "/ack" : syndromeValue == 0x20 ? "/rnr" : "/nak");
        } else if (syndromeMask == 0x7F && (syndromeValue & 0x60) == 0x60) {
            int code = syndromeValue & 0x1F;
            s.append("/nak:").append(code < NAK_NAMES.length ? NAK_NAMES[code] : String.valueOf(code));
        } else if (syndromeMask != 0) {
            s.append(String.format("/syndrome:0x%02x:0x%02x", syndromeValue, syndromeMask));
        }
        if (nth != 1) {
            s.append("/nth:").append(nth);
        }
        if (every != 1) {
            s.append("/every:").append(every);
        }
        if (times == UNLIMITED) {
            s.append("/always");
        } else if (times != 1) {
            s.append("/times:").append(times);
        }
        return s.toString();
    }

    @Override
    public String toString() {
        StringBuilder s = new StringBuilder(action.name().toLowerCase());
        if (delayMicros >= 0) {
            s.append('(').append(delayMicros).append(" us)");
        }
        s.append(in && out ? " in+out" : in ? " in" : " out");
        s.append(opcodes.isEmpty() ? " any-opcode" : " " + opcodes);
        if (psn >= 0) {
            s.append(" psn=").append(psn);
        }
        if (destQp >= 0) {
            s.append(" destQp=0x").append(Integer.toHexString(destQp));
        }
        if (syndromeMask != 0) {
            s.append(String.format(" syndrome=0x%02x/0x%02x", syndromeValue, syndromeMask));
        }
        if (rewriteBytes != null) {
            s.append(" at=").append(rewriteOffset).append(" bytes=").append(java.util.HexFormat.of().formatHex(rewriteBytes));
        }
        s.append(" nth=").append(nth);
        if (every != 1) {
            s.append(" every=").append(every);
        }
        s.append(times == UNLIMITED ? " always" : " times=" + times);
        return (name != null ? name + ": " : "") + s + " (matched " + matched + ", fired " + fired + ')';
    }
}
