package io.jroce.endpoint.fault;

import io.jroce.wire.BthView;
import io.jroce.wire.Icrc;
import io.jroce.wire.Opcode;
import io.jroce.wire.Problem;
import io.jroce.wire.RocePacket;
import io.jroce.wire.RoceV2;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.socket.DatagramPacket;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;

/** Test datagrams: real RoCEv2 packets with a valid ICRC, and non-RoCE junk; helpers to push them through. */
final class Datagrams {
    static final int SRC_ADDR = 0x0A000001; // 10.0.0.1
    static final int DST_ADDR = 0x0A000002; // 10.0.0.2
    static final int SRC_PORT = 0xC123;
    static final int DST_PORT = RoceV2.UDP_PORT;
    static final InetSocketAddress SENDER = new InetSocketAddress("10.0.0.1", SRC_PORT);
    static final InetSocketAddress RECIPIENT = new InetSocketAddress("10.0.0.2", DST_PORT);
    static final int QP = 0x000011;

    private Datagrams() {
    }

    /** A RoCE packet to {@link #QP}; payload opcodes carry {@code payload} bytes (a multiple of 4). */
    static DatagramPacket roce(Opcode op, int psn) {
        return roce(op, psn, QP, op.hasPayload() ? 256 : 0);
    }

    static DatagramPacket roce(Opcode op, int psn, int destQp, int payload) {
        int len = op.headerLength() + payload + RoceV2.ICRC_LENGTH;
        ByteBuf b = Unpooled.buffer(len);
        b.writeZero(len);
        new BthView().wrap(b, 0).write(op.code(), false, false, 0, 0xFFFF, destQp, false, psn);
        for (int i = 0; i < payload; i++) {
            b.setByte(op.headerLength() + i, psn * 31 + i);
        }
        new Icrc().writeIpv4(SRC_ADDR, DST_ADDR, 0, Icrc.IPV4_DF, SRC_PORT, DST_PORT, b, 0, len);
        return new DatagramPacket(b, RECIPIENT, SENDER);
    }

    /** A packet with an AETH ({@code op} must have one) carrying {@code syndrome} and {@code msn}, with a valid ICRC. */
    static DatagramPacket withAeth(Opcode op, int psn, int syndrome, int msn) {
        int len = op.headerLength() + (op.hasPayload() ? 64 : 0) + RoceV2.ICRC_LENGTH;
        ByteBuf b = Unpooled.buffer(len);
        b.writeZero(len);
        new BthView().wrap(b, 0).write(op.code(), false, false, 0, 0xFFFF, QP, false, psn);
        new io.jroce.wire.AethView().wrap(b, op.aethOffset()).write(syndrome, msn);
        new Icrc().writeIpv4(SRC_ADDR, DST_ADDR, 0, Icrc.IPV4_DF, SRC_PORT, DST_PORT, b, 0, len);
        return new DatagramPacket(b, RECIPIENT, SENDER);
    }

    /** The AETH syndrome of a datagram, -1 when it has none. */
    static int syndrome(DatagramPacket p) {
        RocePacket r = new RocePacket();
        ByteBuf b = p.content();
        return r.decode(b, b.readerIndex(), b.readableBytes()) == Problem.NONE && r.aeth() != null ? r.aeth().syndrome() : -1;
    }

    /** True if the ICRC is exactly right for the IPv4 header the test packets assume (ID 0, DF). */
    static boolean icrcExact(ByteBuf b) {
        return new Icrc().verifyIpv4(SRC_ADDR, DST_ADDR, 0, Icrc.IPV4_DF, SRC_PORT, DST_PORT, b, b.readerIndex(), b.readableBytes());
    }

    /** Not RoCE: too short for a BTH + ICRC. */
    static DatagramPacket junk(int n) {
        ByteBuf b = Unpooled.buffer(8);
        b.writeLong(0xDEAD_BEEF_0000_0000L | n);
        return new DatagramPacket(b, RECIPIENT, SENDER);
    }

    /** True if the ICRC check jroce's receiver uses (IPv4 ID solved, DF-clear retry) accepts the datagram. */
    static boolean icrcOk(ByteBuf b) {
        return new Icrc().verifyIpv4UnknownId(SRC_ADDR, DST_ADDR, SRC_PORT, DST_PORT, b, b.readerIndex(), b.readableBytes()) >= 0;
    }

    /** The PSN of a RoCE datagram, -1 for anything else. */
    static int psn(DatagramPacket p) {
        RocePacket r = new RocePacket();
        ByteBuf b = p.content();
        return r.decode(b, b.readerIndex(), b.readableBytes()) == Problem.NONE ? r.psn() : -1;
    }

    static Opcode opcode(DatagramPacket p) {
        RocePacket r = new RocePacket();
        ByteBuf b = p.content();
        return r.decode(b, b.readerIndex(), b.readableBytes()) == Problem.NONE ? r.opcode() : null;
    }

    /** Writes like the device does: void promise, then a flush. */
    static void send(EmbeddedChannel ch, DatagramPacket... packets) {
        for (DatagramPacket p : packets) {
            ch.write(p, ch.voidPromise());
        }
        ch.flush();
    }

    static void receive(EmbeddedChannel ch, DatagramPacket... packets) {
        ch.writeInbound((Object[]) packets);
    }

    /** Reads and releases everything that came out inbound, as PSNs. */
    static List<Integer> inboundPsns(EmbeddedChannel ch) {
        List<Integer> psns = new ArrayList<>();
        for (DatagramPacket p; (p = ch.readInbound()) != null; ) {
            psns.add(psn(p));
            p.release();
        }
        return psns;
    }

    static List<Integer> outboundPsns(EmbeddedChannel ch) {
        List<Integer> psns = new ArrayList<>();
        for (DatagramPacket p; (p = ch.readOutbound()) != null; ) {
            psns.add(psn(p));
            p.release();
        }
        return psns;
    }

    /** Reads and releases everything that came out in one direction, as hex dumps. */
    static List<String> drain(EmbeddedChannel ch, Direction d) {
        List<String> out = new ArrayList<>();
        for (DatagramPacket p; (p = d == Direction.IN ? ch.readInbound() : ch.readOutbound()) != null; ) {
            out.add(ByteBufUtil.hexDump(p.content()));
            p.release();
        }
        return out;
    }
}
