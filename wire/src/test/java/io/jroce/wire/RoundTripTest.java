package io.jroce.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Seeded random encode -> ICRC -> decode round trips for every opcode (-Djroce.seed=N to replay). */
class RoundTripTest {
    private static final int[] PMTUS = {256, 512, 1024, 2048, 4096};

    @Test
    void everyOpcodeRoundTrips() {
        long seed = Seeds.seed();
        Random rnd = new Random(seed);
        RocePacket p = new RocePacket();
        Icrc icrc = new Icrc();
        BthView bth = new BthView();
        RethView reth = new RethView();
        AethView aeth = new AethView();
        AtomicEthView atomic = new AtomicEthView();
        AtomicAckEthView atomicAck = new AtomicAckEthView();
        ImmDtView imm = new ImmDtView();
        IethView ieth = new IethView();
        DethView deth = new DethView();
        for (Opcode op : Opcode.values()) {
            for (int round = 0; round < 300; round++) {
                String ctx = "seed " + seed + " " + op + " round " + round;
                int payload = payloadLength(op, rnd);
                int pad = RoceV2.padFor(payload);
                int len = op.headerLength() + payload + pad + RoceV2.ICRC_LENGTH;
                int before = rnd.nextInt(64);
                ByteBuf buf = rnd.nextBoolean() ? Unpooled.buffer(before + len + 16) : Unpooled.directBuffer(before + len + 16);
                byte[] junk = new byte[buf.capacity()];
                rnd.nextBytes(junk);
                buf.setBytes(0, junk);
                int off = before;

                int opcode = op.code();
                boolean se = rnd.nextBoolean();
                boolean mig = rnd.nextBoolean();
                int pkey = rnd.nextInt(0x10000);
                int dqp = rnd.nextInt() & 0xFFFFFF;
                boolean ack = rnd.nextBoolean();
                int psn = rnd.nextInt() & Psn.MASK;
                boolean fecn = rnd.nextBoolean();
                boolean becn = rnd.nextBoolean();
                bth.wrap(buf, off).write(opcode, se, mig, pad, pkey, dqp, ack, psn);
                bth.fecn(fecn).becn(becn);

                long va = rnd.nextLong();
                int rkey = rnd.nextInt();
                int dma = rnd.nextInt();
                int syndrome = rnd.nextInt(0x80);
                int msn = rnd.nextInt() & Aeth.MSN_MASK;
                long swap = rnd.nextLong();
                long cmp = rnd.nextLong();
                long orig = rnd.nextLong();
                int immValue = rnd.nextInt();
                int inv = rnd.nextInt();
                int qkey = rnd.nextInt();
                int srcQp = rnd.nextInt() & 0xFFFFFF;
                if (op.hasReth()) {
                    reth.wrap(buf, off + op.rethOffset()).write(va, rkey, dma);
                }
                if (op.hasAeth()) {
                    aeth.wrap(buf, off + op.aethOffset()).write(syndrome, msn);
                }
                if (op.hasAtomicEth()) {
                    atomic.wrap(buf, off + op.atomicEthOffset()).write(va, rkey, swap, cmp);
                }
                if (op.hasAtomicAckEth()) {
                    atomicAck.wrap(buf, off + op.atomicAckEthOffset()).originalData(orig);
                }
                if (op.hasImmDt()) {
                    imm.wrap(buf, off + op.immDtOffset()).imm(immValue);
                }
                if (op.hasIeth()) {
                    ieth.wrap(buf, off + op.iethOffset()).rkey(inv);
                }
                if (op.hasDeth()) {
                    deth.wrap(buf, off + op.dethOffset()).write(qkey, srcQp);
                }
                if (op == Opcode.CNP) {
                    buf.setZero(off + BthView.LENGTH, Opcode.CNP_RESERVED_LENGTH);
                }
                buf.setZero(off + op.headerLength() + payload, pad);
                int src = rnd.nextInt();
                int dst = rnd.nextInt();
                int sport = 0xC000 | rnd.nextInt(0x4000);
                int id = rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(0x10000);
                icrc.writeIpv4(src, dst, id, Icrc.IPV4_DF, sport, RoceV2.UDP_PORT, buf, off, len);

                assertEquals(Problem.NONE, p.decode(buf, off, len), ctx);
                assertEquals(op, p.opcode(), ctx);
                assertEquals(se, p.se(), ctx);
                assertEquals(mig, p.bth().migReq(), ctx);
                assertEquals(pad, p.padCount(), ctx);
                assertEquals(pkey, p.pkey(), ctx);
                assertEquals(dqp, p.destQp(), ctx);
                assertEquals(ack, p.ackReq(), ctx);
                assertEquals(psn, p.psn(), ctx);
                assertEquals(fecn, p.bth().fecn(), ctx);
                assertEquals(becn, p.bth().becn(), ctx);
                assertEquals(payload, p.payloadLength(), ctx);
                assertEquals(off + op.headerLength(), p.payloadOffset(), ctx);
                assertEquals(off + len - 4, p.icrcOffset(), ctx);
                if (op.hasReth()) {
                    assertEquals(va, p.reth().va(), ctx);
                    assertEquals(rkey, p.reth().rkey(), ctx);
                    assertEquals(dma, p.reth().dmaLength(), ctx);
                }
                if (op.hasAeth()) {
                    assertEquals(syndrome, p.aeth().syndrome(), ctx);
                    assertEquals(msn, p.aeth().msn(), ctx);
                }
                if (op.hasAtomicEth()) {
                    assertEquals(va, p.atomicEth().va(), ctx);
                    assertEquals(rkey, p.atomicEth().rkey(), ctx);
                    assertEquals(swap, p.atomicEth().swapAdd(), ctx);
                    assertEquals(cmp, p.atomicEth().compare(), ctx);
                }
                if (op.hasAtomicAckEth()) {
                    assertEquals(orig, p.atomicAckEth().originalData(), ctx);
                }
                if (op.hasImmDt()) {
                    assertEquals(immValue, p.immDt().imm(), ctx);
                }
                if (op.hasIeth()) {
                    assertEquals(inv, p.ieth().rkey(), ctx);
                }
                if (op.hasDeth()) {
                    assertEquals(qkey, p.deth().qkey(), ctx);
                    assertEquals(srcQp, p.deth().srcQp(), ctx);
                }
                assertEquals(id, icrc.verifyIpv4UnknownId(src, dst, sport, RoceV2.UDP_PORT, buf, off, len), ctx);
                assertEquals(0, buf.readerIndex(), ctx);
                buf.release();
            }
        }
    }

    /** A legal payload length for the opcode: FIRST/MIDDLE a whole PMTU, LAST 1..PMTU, ONLY 0..PMTU. */
    private static int payloadLength(Opcode op, Random rnd) {
        if (!op.hasPayload()) {
            return 0;
        }
        int pmtu = PMTUS[rnd.nextInt(PMTUS.length)];
        switch (op.position()) {
            case FIRST:
            case MIDDLE:
                return pmtu;
            case LAST:
                return 1 + rnd.nextInt(rnd.nextBoolean() ? 8 : pmtu);
            default:
                return rnd.nextInt(rnd.nextBoolean() ? 9 : pmtu + 1);
        }
    }
}
