package io.jroce.cli.conform;

import java.io.IOException;
import java.util.Arrays;
import java.util.List;

/** What the cases share: where in the peer's region each case works, memory facts, capability checks. */
final class Kit {
    /** Region length assumed when the exchange does not carry it (perftest): one page, perftest's smallest buffer. */
    static final long ASSUMED_LENGTH = 4096;
    /** Each single-packet case works on its own 64-byte slot in the first KiB of the region. */
    static final int SLOT = 64;
    static final int SLOTS_BYTES = 1024;

    private Kit() {
    }

    static long length(Probe p) {
        long l = p.target.region().length();
        return l > 0 ? l : ASSUMED_LENGTH;
    }

    /** The VA of slot {@code k}, 8-byte aligned (atomics need it: IBTA 9.4.5). */
    static long slot(Probe p, int k) {
        if (p.target.region() == null) return 0; // the case finds out through needs() that it cannot tell
        long va = p.target.region().va() + (long) SLOT * k;
        return (va + 7) & ~7L;
    }

    static int rkey(Probe p) {
        return p.target.region() == null ? 0 : p.target.region().rkey();
    }

    /** Where multi-packet cases work: after the slots, if the region is long enough for {@code bytes}. */
    static long bulk(Probe p, long bytes) {
        return SLOTS_BYTES + bytes <= length(p) ? p.target.region().va() + SLOTS_BYTES : -1;
    }

    /** Null when the peer grants {@code bits} on a published region, else why the case cannot tell. */
    static Case.Outcome needs(Probe p, int bits) {
        if (p.target.region() == null) return Case.Outcome.cannotTell("the peer published no memory region");
        if (!p.target.grants(bits)) return Case.Outcome.cannotTell("the peer's region does not grant " + names(bits));
        return null;
    }

    static String names(int bits) {
        StringBuilder sb = new StringBuilder();
        if ((bits & Target.Access.WRITE) != 0) sb.append("remote write ");
        if ((bits & Target.Access.READ) != 0) sb.append("remote read ");
        if ((bits & Target.Access.ATOMIC) != 0) sb.append("remote atomics ");
        return sb.toString().strip();
    }

    /**
     * "; mem=written" when {@code len} bytes at {@code va} now hold {@code written}, "; mem=unchanged" when they
     * hold {@code before}, "; mem=other", "; mem=unreadable" when the READ failed; "" when the region grants no READ
     * (nothing can be seen).
     */
    static String memory(Probe p, long va, byte[] written, byte[] before) throws IOException {
        if (!p.target.grants(Target.Access.READ)) return "";
        byte[] now = p.readBack(va, written.length);
        if (now == null) return "; mem=unreadable";
        if (Arrays.equals(now, written)) return "; mem=written";
        if (before != null && Arrays.equals(now, before)) return "; mem=unchanged";
        return "; mem=other";
    }

    /** The memory before a case changes it, when READ can see it; null otherwise. */
    static byte[] before(Probe p, long va, int len) throws IOException {
        return p.target.grants(Target.Access.READ) ? p.readBack(va, len) : null;
    }

    /** {@code answer} with the memory fact, and {@code answer} alone for peers whose memory cannot be read. */
    static List<String> withMemory(String answer, String fact) {
        return List.of(answer + "; mem=" + fact, answer);
    }

    /** The value at {@code va} through FETCH_ADD 0 (IBTA 9.4.5: the ATOMIC ACKNOWLEDGE carries the original value). */
    static Long atomicRead(Probe p, long va) throws IOException {
        int psn = p.take(1);
        List<Reply> rs = p.exchange(1, p.fetchAdd(psn, va, rkey(p), 0));
        if (rs.size() != 1 || !rs.get(0).kind().equals("ATOMIC-ACK") || rs.get(0).psn() != psn) return null;
        return rs.get(0).atomicOrig();
    }

    static Case c(String id, String group, String title, String section, String rxe, List<String> expected, Case.Body body) {
        return new Case(id, group, title, section, rxe, false, false, expected, body);
    }

    /** A case that ends the connection the QP came from ({@link Case#releases}). */
    static Case release(String id, String group, String title, String section, String rxe, List<String> expected, Case.Body body) {
        return new Case(id, group, title, section, rxe, false, true, expected, body);
    }

    static Case fatal(String id, String group, String title, String section, String rxe, List<String> expected, Case.Body body) {
        return new Case(id, group, title, section, rxe, true, false, expected, body);
    }

    /**
     * Null when SENDs may go to the peer's QP, else why the case cannot tell: some peers' applications read every SEND as
     * a message of their own protocol and end the connection on anything else (rping's server).
     */
    static Case.Outcome needsSends(Probe p) {
        return p.target.sendNote() == null ? null : Case.Outcome.cannotTell(p.target.sendNote());
    }
}
