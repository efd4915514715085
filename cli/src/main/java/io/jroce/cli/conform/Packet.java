package io.jroce.cli.conform;

import io.jroce.wire.AethView;
import io.jroce.wire.AtomicEthView;
import io.jroce.wire.BthView;
import io.jroce.wire.DethView;
import io.jroce.wire.Icrc;
import io.jroce.wire.ImmDtView;
import io.jroce.wire.Opcode;
import io.jroce.wire.RethView;
import io.jroce.wire.RoceV2;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.net.Inet4Address;
import java.net.InetSocketAddress;

/**
 * One RoCEv2 packet built field by field, including the deliberately wrong ones a conformance case needs (a
 * reserved opcode, a P_Key or TVer no QP accepts, a pad count that does not match, a corrupt ICRC). Header layout
 * from the wire module's views; the ICRC is computed over the IPv4 header the kernel will write (ID 0, DF, see
 * {@link RawPort}) or the IPv6 pseudo-header, with our real UDP ports.
 */
final class Packet {
    private final int opcode;
    private final int headerLength;
    private int destQp;
    private int psn;
    private boolean ackReq;
    private boolean se;
    private int pkey = RoceV2.DEFAULT_PKEY;
    private int tver;
    private Integer padOverride;
    private boolean badIcrc;
    private byte[] payload = new byte[0];
    private long[] reth;
    private long[] atomic;
    private Integer imm;
    private long[] deth;
    private long[] aeth;
    private Long atomicAck;

    private Packet(int opcode, int headerLength) {
        this.opcode = opcode;
        this.headerLength = headerLength;
    }

    static Packet of(Opcode op) {
        return new Packet(op.code(), op.headerLength());
    }

    /** An opcode the wire module does not know (reserved): BTH and {@code extra} header bytes. */
    static Packet raw(int opcode, int extra) {
        return new Packet(opcode, BthView.LENGTH + extra);
    }

    Packet qp(int v) { destQp = v; return this; }
    Packet psn(int v) { psn = v; return this; }
    Packet ackReq(boolean v) { ackReq = v; return this; }
    Packet se(boolean v) { se = v; return this; }
    Packet pkey(int v) { pkey = v; return this; }
    Packet tver(int v) { tver = v; return this; }
    Packet pad(int v) { padOverride = v; return this; }
    Packet badIcrc() { badIcrc = true; return this; }
    Packet payload(byte[] v) { payload = v; return this; }
    Packet reth(long va, int rkey, long dmaLength) { reth = new long[] {va, rkey, dmaLength}; return this; }
    Packet atomic(long va, int rkey, long swapAdd, long compare) { atomic = new long[] {va, rkey, swapAdd, compare}; return this; }
    Packet imm(int v) { imm = v; return this; }
    Packet deth(int qkey, int srcQp) { deth = new long[] {qkey, srcQp}; return this; }
    Packet aeth(int syndrome, int msn) { aeth = new long[] {syndrome, msn}; return this; }
    Packet atomicAck(long orig) { atomicAck = orig; return this; }

    int psn() {
        return psn;
    }

    /** The datagram's UDP payload, ICRC included, as sent from {@code src} to {@code dst}. */
    byte[] build(InetSocketAddress src, InetSocketAddress dst) {
        int pad = padOverride != null ? padOverride : RoceV2.padFor(payload.length);
        int len = headerLength + payload.length + RoceV2.padFor(payload.length) + RoceV2.ICRC_LENGTH;
        ByteBuf b = Unpooled.buffer(len);
        b.writeZero(len);
        new BthView().wrap(b, 0).write(opcode, se, false, pad, pkey, destQp, ackReq, psn).tver(tver);
        Opcode op = Opcode.of(opcode);
        if (op != null) {
            if (reth != null && op.hasReth()) new RethView().wrap(b, op.rethOffset()).write(reth[0], (int) reth[1], (int) reth[2]);
            if (atomic != null && op.hasAtomicEth()) {
                new AtomicEthView().wrap(b, op.atomicEthOffset()).write(atomic[0], (int) atomic[1], atomic[2], atomic[3]);
            }
            if (imm != null && op.hasImmDt()) new ImmDtView().wrap(b, op.immDtOffset()).imm(imm);
            if (deth != null && op.hasDeth()) new DethView().wrap(b, op.dethOffset()).write((int) deth[0], (int) deth[1]);
            if (aeth != null && op.hasAeth()) new AethView().wrap(b, op.aethOffset()).write((int) aeth[0], (int) aeth[1]);
            if (atomicAck != null && op.hasAtomicAckEth()) b.setLong(op.atomicAckEthOffset(), atomicAck);
        }
        b.setBytes(headerLength, payload);
        Icrc icrc = new Icrc();
        if (src.getAddress() instanceof Inet4Address s4 && dst.getAddress() instanceof Inet4Address d4) {
            icrc.writeIpv4(ipv4(s4), ipv4(d4), 0, Icrc.IPV4_DF, src.getPort(), dst.getPort(), b, 0, len);
        } else {
            icrc.writeIpv6(src.getAddress().getAddress(), dst.getAddress().getAddress(), src.getPort(), dst.getPort(), b, 0, len);
        }
        if (badIcrc) b.setByte(len - 1, b.getByte(len - 1) ^ 0x5A);
        byte[] out = new byte[len];
        b.getBytes(0, out);
        return out;
    }

    static int ipv4(Inet4Address a) {
        byte[] r = a.getAddress();
        return (r[0] & 0xFF) << 24 | (r[1] & 0xFF) << 16 | (r[2] & 0xFF) << 8 | (r[3] & 0xFF);
    }
}
