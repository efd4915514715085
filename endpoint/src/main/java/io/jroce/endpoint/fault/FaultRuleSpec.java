package io.jroce.endpoint.fault;

import io.jroce.wire.Aeth;
import io.jroce.wire.Opcode;

import java.util.HexFormat;
import java.util.Locale;

/**
 * A {@link FaultRule} in the {@code --chaos} spec: the value of a {@code rule=} item ({@link FaultSpec}). Grammar
 * (whitespace around parts is ignored; names in any case; numbers decimal or 0x hex):
 *
 * <pre>
 * rule    = action *( "/" match )
 * action  = "drop" | "dup" | "corrupt" | "reorder" | "pass"
 *         | "delay" [ ":" micros ]                  ; default: the direction's delay_us
 *         | "rewrite:" offset ":" hex               ; 1..64 bytes written at offset (from the BTH), ICRC kept valid
 * match   = "op:" opcode *( "+" opcode )            ; Opcode names, e.g. op:RC_ACKNOWLEDGE+RC_ATOMIC_ACKNOWLEDGE
 *         | "psn:" n | "qp:" n                      ; BTH PSN, BTH DestQP
 *         | "ack" | "rnr" | "nak" [ ":" code ]      ; AETH syndrome; code: seq, inv, acc, op, rd or 0..31
 *         | "syndrome:" value ":" mask              ; AETH syndrome bits, e.g. syndrome:0x40:0x60 (reserved kind)
 *         | "nth:" n | "every:" n | "times:" n | "once" | "always"
 * </pre>
 *
 * The item's {@code in.}/{@code out.} prefix gives the rule's direction (none: both). Examples:
 * {@code out.rule=drop/nak:seq/always} drops every PSN sequence error NAK we send;
 * {@code out.rule=rewrite:12:61/nak:acc/always} turns every remote access error NAK we send into an invalid request
 * NAK; {@code in.rule=drop/op:RC_RDMA_WRITE_MIDDLE/nth:3} drops the third WRITE Middle we receive.
 */
final class FaultRuleSpec {
    static final int MAX_REWRITE_BYTES = 64;

    private FaultRuleSpec() {
    }

    /** @throws IllegalArgumentException with a one-line message naming the item */
    static FaultRule parse(String key, String value, Direction d) {
        String[] parts = value.split("/", -1);
        try {
            FaultRule r = action(parts[0].strip());
            if (d != null) {
                r.direction(d);
            }
            for (int i = 1; i < parts.length; i++) {
                match(r, parts[i].strip());
            }
            return r;
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("chaos spec: " + key + "=" + value + ": " + e.getMessage());
        }
    }

    private static FaultRule action(String a) {
        String[] f = a.split(":", -1);
        String name = f[0].strip().toLowerCase(Locale.ROOT);
        switch (name) {
            case "drop":
            case "dup":
            case "corrupt":
            case "reorder":
            case "pass":
                arguments(a, f, 0);
                return name.equals("drop") ? FaultRule.drop() : name.equals("dup") ? FaultRule.duplicate()
                        : name.equals("corrupt") ? FaultRule.corrupt() : name.equals("reorder") ? FaultRule.reorder() : FaultRule.pass();
            case "delay":
                if (f.length == 1) {
                    return FaultRule.delay();
                }
                arguments(a, f, 1);
                return FaultRule.delay(number("delay", f[1]));
            case "rewrite":
                arguments(a, f, 2);
                long offset = number("rewrite offset", f[1]);
                if (offset > 0xFFFF) {
                    throw new IllegalArgumentException("rewrite offset " + offset + " is past any datagram");
                }
                byte[] bytes;
                try {
                    bytes = HexFormat.of().parseHex(f[2].strip());
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("rewrite bytes '" + f[2].strip() + "' are not hex digits in pairs (e.g. 61 or 00abcd)");
                }
                if (bytes.length == 0 || bytes.length > MAX_REWRITE_BYTES) {
                    throw new IllegalArgumentException("rewrite writes 1.." + MAX_REWRITE_BYTES + " bytes, was " + bytes.length);
                }
                return FaultRule.rewrite((int) offset, bytes);
            default:
                throw new IllegalArgumentException("unknown action '" + f[0].strip() + "' (actions: drop, dup, corrupt, reorder, pass, "
                        + "delay[:micros], rewrite:offset:hex)");
        }
    }

    private static void match(FaultRule r, String m) {
        String[] f = m.split(":", -1);
        String name = f[0].strip().toLowerCase(Locale.ROOT);
        switch (name) {
            case "op":
                arguments(m, f, 1);
                for (String op : f[1].split("\\+", -1)) {
                    r.opcode(opcode(op.strip()));
                }
                break;
            case "psn":
                arguments(m, f, 1);
                r.psn((int) Math.min(number("psn", f[1]), Integer.MAX_VALUE));
                break;
            case "qp":
                arguments(m, f, 1);
                r.destQp((int) Math.min(number("qp", f[1]), Integer.MAX_VALUE));
                break;
            case "ack":
                arguments(m, f, 0);
                r.aeth(Aeth.Kind.ACK);
                break;
            case "rnr":
                arguments(m, f, 0);
                r.aeth(Aeth.Kind.RNR_NAK);
                break;
            case "nak":
                if (f.length == 1) {
                    r.aeth(Aeth.Kind.NAK);
                } else {
                    arguments(m, f, 1);
                    r.syndrome(0x60 | nakCode(f[1].strip()), 0x7F);
                }
                break;
            case "syndrome":
                arguments(m, f, 2);
                r.syndrome((int) Math.min(number("syndrome value", f[1]), 0x100), (int) Math.min(number("syndrome mask", f[2]), 0x100));
                break;
            case "nth":
                arguments(m, f, 1);
                r.nth(number("nth", f[1]));
                break;
            case "every":
                arguments(m, f, 1);
                r.every(number("every", f[1]));
                break;
            case "times":
                arguments(m, f, 1);
                r.times(number("times", f[1]));
                break;
            case "once":
                arguments(m, f, 0);
                r.once();
                break;
            case "always":
                arguments(m, f, 0);
                r.always();
                break;
            default:
                throw new IllegalArgumentException("unknown match '" + m + "' (matches: op:NAME[+NAME], psn:N, qp:N, ack, rnr, nak[:CODE], "
                        + "syndrome:VALUE:MASK, nth:N, every:N, times:N, once, always)");
        }
    }

    private static void arguments(String part, String[] f, int n) {
        if (f.length != n + 1) {
            throw new IllegalArgumentException("'" + part + "' takes " + (n == 0 ? "no value" : n == 1 ? "one value" : n + " values")
                    + " after its name");
        }
    }

    private static Opcode opcode(String name) {
        try {
            return Opcode.valueOf(name.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown opcode '" + name + "' (names as in jroce inspect, e.g. RC_ACKNOWLEDGE)");
        }
    }

    private static int nakCode(String code) {
        switch (code.toLowerCase(Locale.ROOT)) {
            case "seq":
                return Aeth.NakCode.PSN_SEQUENCE_ERROR.code();
            case "inv":
                return Aeth.NakCode.INVALID_REQUEST.code();
            case "acc":
                return Aeth.NakCode.REMOTE_ACCESS_ERROR.code();
            case "op":
                return Aeth.NakCode.REMOTE_OPERATIONAL_ERROR.code();
            case "rd":
                return Aeth.NakCode.INVALID_RD_REQUEST.code();
            default:
                long n = number("nak code", code);
                if (n > 31) {
                    throw new IllegalArgumentException("a NAK code is 0..31 (or seq, inv, acc, op, rd), was " + n);
                }
                return (int) n;
        }
    }

    private static long number(String what, String text) {
        long n;
        try {
            n = Long.decode(text.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(what + " '" + text.strip() + "' is not a whole number (decimal or 0x hex)");
        }
        if (n < 0) {
            throw new IllegalArgumentException(what + " must not be negative, was " + n);
        }
        return n;
    }
}
