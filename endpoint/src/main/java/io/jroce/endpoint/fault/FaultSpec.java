package io.jroce.endpoint.fault;

/**
 * The {@code --chaos} command-line spec. Grammar (whitespace around items, keys and values is ignored):
 *
 * <pre>
 * spec    = "" | item *( "," item )
 * item    = "seed=" long                       ; decimal or 0x hex; default: random
 *         | [ ( "in." | "out." ) ] key "=" value
 * key     = "drop" | "dup" | "reorder" | "delay" | "corrupt"    ; value: probability, decimal 0..1
 *         | "delay_us"                         ; integer >= 0, default 1000
 *         | "reorder_depth"                    ; integer >= 1, default 3
 *         | "reorder_timeout_us"               ; integer >= 1, default 1000
 *         | "rule"                             ; value: a targeted rule, see FaultRuleSpec
 * </pre>
 *
 * A key without prefix sets both directions, {@code in.}/{@code out.} one; a later item overrides an earlier
 * one. Example: {@code drop=0.05,dup=0.01,reorder=0.05,delay=0.01,corrupt=0.001,out.drop=0,seed=42}. Per
 * direction, the five probabilities must add up to at most 1. An empty spec means no faults. Each {@code rule=}
 * item adds a {@link FaultRule} after the ones before it (its prefix is the rule's direction), e.g.
 * {@code out.rule=drop/nak:seq/always}: rules are tried before the random plan, in order.
 */
final class FaultSpec {
    static final String KEYS = "drop, dup, reorder, delay, corrupt, delay_us, reorder_depth, reorder_timeout_us, rule "
            + "(each optionally prefixed in. or out.), seed";

    private FaultSpec() {
    }

    /** @throws IllegalArgumentException with a one-line message naming the offending key */
    static FaultInjectorBuilder parse(String spec) {
        if (spec == null) {
            throw new IllegalArgumentException("chaos spec is null");
        }
        FaultInjectorBuilder b = FaultInjector.builder();
        if (spec.isBlank()) {
            return b;
        }
        for (String item : spec.split(",", -1)) {
            item = item.strip();
            int eq = item.indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException(item.isEmpty()
                        ? "chaos spec: empty item in '" + spec + "' (expected key=value,key=value,...)"
                        : "chaos spec: '" + item + "' has no value (expected " + item + "=...)");
            }
            String key = item.substring(0, eq).strip();
            String value = item.substring(eq + 1).strip();
            if (key.equals("seed")) {
                b.seed(seed(value));
                continue;
            }
            Direction d = null;
            String name = key;
            if (key.startsWith("in.")) {
                d = Direction.IN;
                name = key.substring(3);
            } else if (key.startsWith("out.")) {
                d = Direction.OUT;
                name = key.substring(4);
            }
            switch (name) {
                case "drop":
                    b.drop(d, probability(key, value));
                    break;
                case "dup":
                    b.duplicate(d, probability(key, value));
                    break;
                case "reorder":
                    b.reorder(d, probability(key, value));
                    break;
                case "delay":
                    b.delay(d, probability(key, value));
                    break;
                case "corrupt":
                    b.corrupt(d, probability(key, value));
                    break;
                case "delay_us":
                    b.delayMicros(d, integer(key, value, 0));
                    break;
                case "reorder_depth":
                    b.reorderDepth(d, (int) integer(key, value, 1, Integer.MAX_VALUE));
                    break;
                case "reorder_timeout_us":
                    b.reorderTimeoutMicros(d, integer(key, value, 1));
                    break;
                case "rule":
                    b.rule(FaultRuleSpec.parse(key, value, d));
                    break;
                default:
                    throw new IllegalArgumentException("chaos spec: unknown key '" + key + "' (keys: " + KEYS + ")");
            }
        }
        return b;
    }

    private static double probability(String key, String value) {
        double p;
        try {
            p = Double.parseDouble(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("chaos spec: " + key + "='" + value + "' is not a number (expected a probability 0..1)");
        }
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException("chaos spec: " + key + "=" + value + " is not a probability between 0 and 1");
        }
        return p;
    }

    private static long integer(String key, String value, long min) {
        return integer(key, value, min, Long.MAX_VALUE);
    }

    private static long integer(String key, String value, long min, long max) {
        long n;
        try {
            n = Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("chaos spec: " + key + "='" + value + "' is not a whole number");
        }
        if (n < min || n > max) {
            throw new IllegalArgumentException("chaos spec: " + key + "=" + value + " is out of range (" + min + ".."
                    + (max == Long.MAX_VALUE ? "" : String.valueOf(max)) + ")");
        }
        return n;
    }

    private static long seed(String value) {
        try {
            return Long.decode(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("chaos spec: seed='" + value + "' is not a whole number (decimal or 0x hex)");
        }
    }
}
