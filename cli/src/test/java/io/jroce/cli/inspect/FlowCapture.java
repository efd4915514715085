package io.jroce.cli.inspect;

import io.jroce.wire.Aeth;
import io.jroce.wire.AethView;
import io.jroce.wire.BthView;
import io.jroce.wire.Icrc;
import io.jroce.wire.Opcode;
import io.jroce.wire.RethView;
import io.jroce.wire.RoceV2;
import io.jroce.wire.pcap.PcapWriter;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.io.IOException;
import java.nio.file.Path;

/**
 * Writes hand-made RC conversations for the flow tests: correct ICRCs over non-zero, changing IPv4 IDs (as
 * rdma_rxe sends), explicit timestamps in microseconds, and a way to corrupt an ICRC or cut a packet short.
 */
final class FlowCapture implements AutoCloseable {
    static final long T0 = 1_704_067_200_000_000_000L;

    private final PcapWriter writer;
    private final Icrc icrc = new Icrc();
    private final BthView bth = new BthView();
    private int ipId = 0x4d2e;

    FlowCapture(Path file) throws IOException {
        this.writer = new PcapWriter(file);
    }

    /** One packet; {@code dmaLength} >= 0 fills a RETH, {@code syndrome} >= 0 an AETH (MSN 0). */
    void packet(long micros, int src, int dst, int sport, int destQp, Opcode op, boolean ackReq, int psn,
                int payload, long dmaLength, int syndrome, boolean badIcrc) throws IOException {
        int pad = -payload & 3;
        int len = op.headerLength() + payload + pad + 4;
        ByteBuf b = Unpooled.buffer(len).writeZero(len);
        bth.wrap(b, 0).write(op.code(), false, false, pad, 0xFFFF, destQp, ackReq, psn);
        if (op.hasReth()) {
            new RethView().wrap(b, op.rethOffset()).write(0x1000, 0x77, (int) Math.max(0, dmaLength));
        }
        if (op.hasAeth()) {
            new AethView().wrap(b, op.aethOffset()).write(syndrome < 0 ? Aeth.ACK_UNLIMITED : syndrome, 0);
        }
        int id = ipId;
        ipId = (ipId + 0x101) & 0xFFFF;
        icrc.writeIpv4(src, dst, id, Icrc.IPV4_DF, sport, RoceV2.UDP_PORT, b, 0, len);
        if (badIcrc) {
            b.setByte(len - 1, b.getByte(len - 1) ^ 0x01);
        }
        writer.writeUdpIpv4(T0 + micros * 1000, src, sport, dst, RoceV2.UDP_PORT, id, Icrc.IPV4_DF, b, 0, len);
    }

    /** A UDP datagram to port 4791 holding only the first {@code bytes} of a SEND ONLY packet. */
    void truncated(long micros, int src, int dst, int sport, int destQp, int bytes) throws IOException {
        ByteBuf b = Unpooled.buffer(16).writeZero(16);
        bth.wrap(b, 0).write(Opcode.RC_SEND_ONLY.code(), false, false, 0, 0xFFFF, destQp, true, 99);
        writer.writeUdpIpv4(T0 + micros * 1000, src, sport, dst, RoceV2.UDP_PORT, 7, Icrc.IPV4_DF, b, 0, bytes);
    }

    @Override
    public void close() throws IOException {
        writer.close();
    }
}
