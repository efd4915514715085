package io.jroce.endpoint;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Assertions on work completions. */
final class Wcs {
    private Wcs() {
    }

    /** A successful completion with every field a successful completion defines. */
    static void assertOk(WorkCompletion wc, long wrId, WcOpcode op, int byteLen, QueuePair qp) {
        String s = wc.toString();
        assertEquals(WcStatus.SUCCESS, wc.status(), s);
        assertEquals(wrId, wc.wrId(), "wr_id of " + s);
        assertEquals(op, wc.opcode(), "opcode of " + s);
        assertEquals(byteLen, wc.byteLen(), "byte_len of " + s);
        assertEquals(qp.qpNum(), wc.qpNum(), "qp_num of " + s);
    }

    static void assertNoImmNoInv(WorkCompletion wc) {
        assertFalse(wc.hasImm(), "no immediate data expected: " + wc);
        assertFalse(wc.hasInv(), "no invalidated rkey expected: " + wc);
    }

    static void assertImm(WorkCompletion wc, int imm) {
        assertTrue(wc.hasImm(), "immediate data expected: " + wc);
        assertFalse(wc.hasInv(), wc.toString());
        assertEquals(imm, wc.immData(), "imm of " + wc);
    }

    static void assertInv(WorkCompletion wc, int rkey) {
        assertTrue(wc.hasInv(), "an invalidated rkey expected: " + wc);
        assertFalse(wc.hasImm(), wc.toString());
        assertEquals(rkey, wc.invalidatedRkey(), "invalidated rkey of " + wc);
    }

    /** A failed completion: only wr_id, status and qp_num are defined. */
    static void assertFailed(WorkCompletion wc, long wrId, WcStatus status, QueuePair qp) {
        String s = wc.toString();
        assertEquals(status, wc.status(), s);
        assertEquals(wrId, wc.wrId(), "wr_id of " + s);
        assertEquals(qp.qpNum(), wc.qpNum(), "qp_num of " + s);
    }

    /** Every completion in {@code wcs} is WR_FLUSH_ERR, for the given wr_ids in order. */
    static void assertFlushed(List<WorkCompletion> wcs, QueuePair qp, long... wrIds) {
        assertEquals(wrIds.length, wcs.size(), "flushed completions " + wcs);
        for (int i = 0; i < wrIds.length; i++) assertFailed(wcs.get(i), wrIds[i], WcStatus.WR_FLUSH_ERR, qp);
    }
}
