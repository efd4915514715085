package io.jroce.endpoint.fault;

import static io.jroce.endpoint.fault.Datagrams.icrcExact;
import static io.jroce.endpoint.fault.Datagrams.junk;
import static io.jroce.endpoint.fault.Datagrams.outboundPsns;
import static io.jroce.endpoint.fault.Datagrams.roce;
import static io.jroce.endpoint.fault.Datagrams.send;
import static io.jroce.endpoint.fault.Datagrams.syndrome;
import static io.jroce.endpoint.fault.Datagrams.withAeth;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jroce.wire.Aeth;
import io.jroce.wire.Icrc;
import io.jroce.wire.Opcode;
import io.jroce.wire.RoceV2;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.socket.DatagramPacket;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Rules that pick answers by their AETH syndrome, and rules that rewrite a field and keep the ICRC valid. */
class FaultRuleAethTest {
    private static final int ACK = Aeth.ACK_UNLIMITED;
    private static final int RNR = 0x20 | 14;
    private static final int NAK_SEQ = 0x60;
    private static final int NAK_INV = 0x61;
    private static final int NAK_ACC = 0x62;

    private static FaultInjector quiet() {
        return FaultInjector.builder().seed(1).build();
    }

    private static EmbeddedChannel channel(FaultInjector f) {
        EmbeddedChannel ch = new EmbeddedChannel(f);
        ch.freezeTime();
        return ch;
    }

    /** Sends ACK, RNR NAK, NAK-SEQ, NAK-ACC and an ATOMIC ACKNOWLEDGE (PSNs 1..5), and a SEND Only (PSN 6). */
    private static void answers(EmbeddedChannel ch) {
        send(ch, withAeth(Opcode.RC_ACKNOWLEDGE, 1, ACK, 7), withAeth(Opcode.RC_ACKNOWLEDGE, 2, RNR, 7),
                withAeth(Opcode.RC_ACKNOWLEDGE, 3, NAK_SEQ, 7), withAeth(Opcode.RC_ACKNOWLEDGE, 4, NAK_ACC, 7),
                withAeth(Opcode.RC_ATOMIC_ACKNOWLEDGE, 5, ACK, 8), roce(Opcode.RC_SEND_ONLY, 6));
    }

    @Test
    void dropEveryPsnSequenceErrorNakAndNothingElse() {
        FaultInjector f = quiet();
        FaultRule r = f.addRule(FaultRule.drop().outbound().nak(Aeth.NakCode.PSN_SEQUENCE_ERROR).always());
        EmbeddedChannel ch = channel(f);
        answers(ch);
        answers(ch);
        assertEquals(List.of(1, 2, 4, 5, 6, 1, 2, 4, 5, 6), outboundPsns(ch));
        assertEquals(2, r.fired());
        assertEquals(2, r.matched(), "only the NAKs with code 0 match");
    }

    @Test
    void aethKindMatchesEveryCodeOfItsKind() {
        FaultInjector f = quiet();
        f.addRule(FaultRule.drop().aeth(Aeth.Kind.RNR_NAK).always());
        EmbeddedChannel ch = channel(f);
        send(ch, withAeth(Opcode.RC_ACKNOWLEDGE, 1, 0x20, 0), withAeth(Opcode.RC_ACKNOWLEDGE, 2, 0x3F, 0),
                withAeth(Opcode.RC_ACKNOWLEDGE, 3, ACK, 0), withAeth(Opcode.RC_ACKNOWLEDGE, 4, NAK_SEQ, 0));
        assertEquals(List.of(3, 4), outboundPsns(ch));

        FaultInjector acks = quiet();
        acks.addRule(FaultRule.drop().aeth(Aeth.Kind.ACK).always());
        EmbeddedChannel a = channel(acks);
        answers(a);
        // the ACK and the ATOMIC ACKNOWLEDGE (whose AETH is an ACK) go; NAKs and the SEND, which has no AETH, stay
        assertEquals(List.of(2, 3, 4, 6), outboundPsns(a));
    }

    @Test
    void aSyndromeMatchSkipsPacketsWithoutAnAethAndNonRoce() {
        FaultInjector f = quiet();
        FaultRule r = f.addRule(FaultRule.drop().syndrome(0, 0x60).always());
        EmbeddedChannel ch = channel(f);
        send(ch, roce(Opcode.RC_SEND_ONLY, 1), roce(Opcode.RC_RDMA_READ_RESPONSE_MIDDLE, 2),
                withAeth(Opcode.RC_RDMA_READ_RESPONSE_LAST, 3, ACK, 0));
        DatagramPacket j = junk(4);
        ch.writeAndFlush(j, ch.voidPromise());
        assertEquals(List.of(1, 2, -1), outboundPsns(ch));
        assertEquals(1, r.matched());
    }

    @Test
    void syndromeArgumentsAreChecked() {
        assertThrows(IllegalArgumentException.class, () -> FaultRule.drop().syndrome(0x60, 0));
        assertThrows(IllegalArgumentException.class, () -> FaultRule.drop().syndrome(0x61, 0x60));
        assertThrows(IllegalArgumentException.class, () -> FaultRule.drop().syndrome(0, 0x100));
        FaultRule r = FaultRule.drop().nak(Aeth.NakCode.REMOTE_ACCESS_ERROR);
        assertEquals(0x62, r.syndromeValue());
        assertEquals(0x7F, r.syndromeMask());
        assertEquals(0x20, FaultRule.drop().aeth(Aeth.Kind.RNR_NAK).syndromeValue());
    }

    @Test
    void rewriteTurnsARemoteAccessErrorIntoAnInvalidRequestWithAValidIcrc() {
        FaultInjector f = quiet();
        int at = Opcode.RC_ACKNOWLEDGE.aethOffset();
        FaultRule r = f.addRule(FaultRule.rewrite(at, (byte) NAK_INV).outbound().nak(Aeth.NakCode.REMOTE_ACCESS_ERROR).always());
        EmbeddedChannel ch = channel(f);
        DatagramPacket original = withAeth(Opcode.RC_ACKNOWLEDGE, 4, NAK_ACC, 0x123456);
        byte[] before = ByteBufUtil.getBytes(original.content());
        send(ch, withAeth(Opcode.RC_ACKNOWLEDGE, 3, ACK, 0x123455), original);
        DatagramPacket ack = ch.readOutbound();
        DatagramPacket nak = ch.readOutbound();
        assertNull(ch.readOutbound());
        assertEquals(ACK, syndrome(ack));
        assertEquals(NAK_INV, syndrome(nak));
        assertTrue(icrcExact(nak.content()), "the rewritten NAK has a valid ICRC");
        byte[] after = ByteBufUtil.getBytes(nak.content());
        // only the syndrome byte and the ICRC changed
        for (int i = 0; i < before.length - RoceV2.ICRC_LENGTH; i++) {
            if (i != at) assertEquals(before[i], after[i], "byte " + i);
        }
        assertEquals(0, original.refCnt(), "the original is released");
        assertSame(Datagrams.RECIPIENT, nak.recipient(), "the copy keeps its addresses");
        ack.release();
        nak.release();
        assertEquals(1, r.fired());
        assertEquals(1, f.count(Direction.OUT, FaultAction.REWRITE));
        assertEquals(1, f.passed(Direction.OUT));
        assertEquals(1L, f.counters().get("out.rewritten"));
    }

    @Test
    void rewriteAnAcksMsn() {
        FaultInjector f = quiet();
        f.addRule(FaultRule.rewrite(Opcode.RC_ACKNOWLEDGE.aethOffset() + 1, (byte) 0xAB, (byte) 0xCD, (byte) 0xEF)
                .opcode(Opcode.RC_ACKNOWLEDGE).aeth(Aeth.Kind.ACK).always());
        EmbeddedChannel ch = channel(f);
        send(ch, withAeth(Opcode.RC_ACKNOWLEDGE, 1, ACK, 1), withAeth(Opcode.RC_ACKNOWLEDGE, 2, NAK_SEQ, 2));
        List<Integer> msns = new ArrayList<>();
        for (DatagramPacket p; (p = ch.readOutbound()) != null; ) {
            assertTrue(icrcExact(p.content()));
            msns.add(p.content().getUnsignedMedium(p.content().readerIndex() + Opcode.RC_ACKNOWLEDGE.aethOffset() + 1));
            p.release();
        }
        assertEquals(List.of(0xABCDEF, 2), msns, "the ACK's MSN is rewritten, the NAK's is not");
    }

    /**
     * The ICRC update holds wherever the bytes go, BTH byte 4 (masked) included, in IPv4 and IPv6: checked against
     * a full recomputation over random offsets, lengths and contents.
     */
    @Test
    void theIcrcStaysValidForAnyRewrite() {
        long seed = Long.getLong("jroce.seed", System.nanoTime());
        System.out.println("theIcrcStaysValidForAnyRewrite seed " + seed);
        SplittableRandom rnd = new SplittableRandom(seed);
        byte[] src6 = new byte[16];
        byte[] dst6 = new byte[16];
        src6[15] = 1;
        dst6[15] = 2;
        Icrc icrc = new Icrc();
        for (int i = 0; i < 2000; i++) {
            int len = RoceV2.ICRC_LENGTH + 12 + rnd.nextInt(2048);
            byte[] bytes = new byte[len];
            for (int k = 0; k < len; k++) bytes[k] = (byte) rnd.nextInt(256);
            int offset = rnd.nextInt(len - RoceV2.ICRC_LENGTH);
            byte[] with = new byte[1 + rnd.nextInt(Math.min(16, len - RoceV2.ICRC_LENGTH - offset))];
            for (int k = 0; k < with.length; k++) with[k] = (byte) rnd.nextInt(256);
            boolean v6 = rnd.nextBoolean();
            ByteBuf b = Unpooled.wrappedBuffer(bytes);
            if (v6) icrc.writeIpv6(src6, dst6, 0xC000, RoceV2.UDP_PORT, b, 0, len);
            else icrc.writeIpv4(Datagrams.SRC_ADDR, Datagrams.DST_ADDR, 0, Icrc.IPV4_DF, 0xC000, RoceV2.UDP_PORT, b, 0, len);
            DatagramPacket out = Rewrite.apply(new DatagramPacket(b, Datagrams.RECIPIENT, Datagrams.SENDER), offset, with);
            ByteBuf o = out.content();
            String where = "seed " + seed + " len " + len + " offset " + offset + " bytes " + with.length + (v6 ? " IPv6" : " IPv4");
            assertArrayEquals(with, ByteBufUtil.getBytes(o, o.readerIndex() + offset, with.length), where);
            assertTrue(v6 ? icrc.verifyIpv6(src6, dst6, 0xC000, RoceV2.UDP_PORT, o, o.readerIndex(), len)
                    : icrc.verifyIpv4(Datagrams.SRC_ADDR, Datagrams.DST_ADDR, 0, Icrc.IPV4_DF, 0xC000, RoceV2.UDP_PORT, o, o.readerIndex(), len),
                    where);
            out.release();
        }
    }

    @Test
    void aDatagramTooShortForTheBytesPassesUnchanged() {
        FaultInjector f = quiet();
        // an ACK is 20 bytes: 12..19 would run into the ICRC
        FaultRule r = f.addRule(FaultRule.rewrite(12, new byte[8]).opcode(Opcode.RC_ACKNOWLEDGE).always());
        EmbeddedChannel ch = channel(f);
        DatagramPacket ack = withAeth(Opcode.RC_ACKNOWLEDGE, 1, ACK, 1);
        String before = ByteBufUtil.hexDump(ack.content());
        send(ch, ack);
        DatagramPacket got = ch.readOutbound();
        assertEquals(before, ByteBufUtil.hexDump(got.content()));
        got.release();
        assertEquals(1, r.fired());
        assertEquals(1, f.passed(Direction.OUT));
        assertEquals(0, f.count(Direction.OUT, FaultAction.REWRITE));
    }

    @Test
    void rewriteRulesOnlyTouchRoce() {
        FaultInjector f = quiet();
        FaultRule r = f.addRule(FaultRule.rewrite(0, (byte) 0).always());
        EmbeddedChannel ch = channel(f);
        DatagramPacket j = junk(9);
        String before = ByteBufUtil.hexDump(j.content());
        ch.writeAndFlush(j, ch.voidPromise());
        DatagramPacket got = ch.readOutbound();
        assertEquals(before, ByteBufUtil.hexDump(got.content()));
        got.release();
        assertEquals(0, r.matched());
    }

    @Test
    void rewriteArgumentsAreChecked() {
        assertThrows(IllegalArgumentException.class, () -> FaultRule.rewrite(-1, (byte) 0));
        assertThrows(IllegalArgumentException.class, () -> FaultRule.rewrite(12));
        assertThrows(IllegalArgumentException.class, () -> FaultRule.of(FaultAction.REWRITE));
        byte[] b = {1, 2};
        FaultRule r = FaultRule.rewrite(13, b);
        b[0] = 9;
        assertArrayEquals(new byte[] {1, 2}, r.rewriteBytes(), "the rule keeps its own copy");
        assertEquals(13, r.rewriteOffset());
        assertEquals(0.0, FaultPlan.none().withDrop(0.5).probability(FaultAction.REWRITE), "a plan never rewrites");
        assertFalse(FaultRule.drop().toString().contains("bytes="));
        assertTrue(r.toString().contains("at=13 bytes=0102"), r.toString());
    }
}
