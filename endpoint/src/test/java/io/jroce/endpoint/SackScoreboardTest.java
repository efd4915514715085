package io.jroce.endpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The selective-repeat requester's record: SACK blocks, packets in flight, and resends found lost by transmission order. */
class SackScoreboardTest {
    @Test
    void aResendSentBeforeSomethingSackedIsLost() {
        SackScoreboard sb = new SackScoreboard();
        int base = 0xFFFFF0; // the window crosses PSN 0
        sb.reset(base);
        for (int i = 0; i < 40; i++) sb.sent(base + i & 0xFFFFFF); // PSNs base .. base+39 sent once, in order
        // base+5 lost: the responder holds base+6..base+9 and says so
        assertEquals(4, sb.mark(base + 6 & 0xFFFFFF, 4));
        assertEquals(4, sb.sackedCount);
        int hole = base + 5 & 0xFFFFFF;
        sb.sent(hole);                          // resent after everything else
        sb.setResent(hole, true);
        sb.resending(hole);
        assertEquals(-1, sb.nextLostResend(base), "nothing sent after the resend was SACKed yet");
        assertEquals(10, sb.mark(base + 10 & 0xFFFFFF, 10) , "base+10..base+19, sent before the resend");
        assertEquals(-1, sb.nextLostResend(base), "what was SACKed was sent before the resend");
        sb.sent(base + 40 & 0xFFFFFF);          // a new packet after the resend
        assertEquals(1, sb.mark(base + 40 & 0xFFFFFF, 1));
        assertEquals(hole, sb.nextLostResend(base), "the resend was sent before base+40, which arrived: lost");
        assertEquals(-1, sb.nextLostResend(base), "reported once");
    }

    @Test
    void aResentPsnSackedSaysNothingOfOrder() {
        SackScoreboard sb = new SackScoreboard();
        sb.reset(100);
        for (int i = 0; i < 20; i++) sb.sent(100 + i);
        for (int p : new int[] {103, 104}) { // both resent, 103 first
            sb.sent(p);
            sb.setResent(p, true);
            sb.resending(p);
        }
        // 104 SACKed: its first transmission may be what arrived (its SACK was lost), so 103 is not judged by it
        assertEquals(1, sb.mark(104, 1));
        assertEquals(-1, sb.nextLostResend(100));
        sb.advance(104); // 103 acknowledged (the responder executed it): never reported lost
        sb.sent(120);
        sb.mark(120, 1);
        assertEquals(-1, sb.nextLostResend(104));
    }

    @Test
    void blocksCountOnceAndTheAckClearsThem() {
        SackScoreboard sb = new SackScoreboard();
        sb.reset(0);
        assertEquals(5, sb.mark(10, 5));
        assertEquals(2, sb.mark(12, 5), "10..14 already SACKed, 15 and 16 new");
        assertEquals(7, sb.sackedCount);
        assertEquals(16, sb.highSack);
        sb.advance(13); // the cumulative ACK passes 10, 11, 12
        assertEquals(3, sb.takeCleared());
        assertEquals(4, sb.sackedCount);
        sb.advance(20);
        assertEquals(4, sb.takeCleared());
        assertEquals(0, sb.sackedCount);
    }
}
