package io.jroce.cli.conform;

import io.jroce.wire.Opcode;
import io.jroce.wire.Problem;
import io.jroce.wire.RoceV2;
import io.jroce.wire.RocePacket;
import io.jroce.wire.mad.MadHeader;
import io.netty.buffer.Unpooled;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * Management datagrams to and from the peer's QP 1 on the tester's own RoCE socket: each MAD goes out as a UD SEND Only
 * of 256 bytes to QP 1 with the GSI Q_Key 0x80010000 and P_Key 0xFFFF, from our "QP 1" (DETH source QP 1, so the
 * peer's CM and MAD layer answer to QP 1, as cm.c and mad.c always do); what comes back is every UD SEND to QP 1 from
 * the peer's address. One MAD at a time, each waiting for its answers, so the rate is bounded by the peer's answers.
 */
final class Gsi {
    private final RawPort port;
    private final InetSocketAddress peer;
    private int psn;
    /** Whether the peer's QP 1 has answered anything yet. */
    boolean answered;

    Gsi(RawPort port, InetSocketAddress peer) {
        this.port = port;
        this.peer = peer;
    }

    InetSocketAddress peer() {
        return peer;
    }

    /** Sends one 256-byte MAD to the peer's QP 1 (what arrived before is dropped: late answers to an earlier step). */
    void send(byte[] mad) throws IOException {
        port.drain();
        sendMore(mad);
    }

    /** Sends without dropping what arrived already. */
    void sendMore(byte[] mad) throws IOException {
        if (mad.length != MadHeader.MAD_SIZE) throw new IllegalArgumentException("a MAD is " + MadHeader.MAD_SIZE + " bytes");
        psn = (psn + 1) & 0xFFFFFF;
        Packet p = Packet.of(Opcode.UD_SEND_ONLY).qp(MadHeader.GSI_QPN).psn(psn).deth(RoceV2.GSI_QKEY, MadHeader.GSI_QPN).payload(mad);
        port.send(p.build(port.local(), peer), peer);
    }

    /**
     * The MADs that arrive within {@code nanos} and match {@code want}; stops early once {@code enough} have arrived
     * ({@code enough == 0} waits the whole time). Other datagrams (RoCE answers to our RC QP, other MADs) are skipped.
     */
    List<byte[]> collect(long nanos, int enough, Predicate<byte[]> want) throws IOException {
        List<byte[]> out = new ArrayList<>();
        long deadline = System.nanoTime() + nanos;
        RawPort.Datagram d;
        while ((d = port.pollUntil(deadline)) != null) {
            byte[] mad = decode(d);
            if (mad == null) continue;
            answered = true;
            if (!want.test(mad)) continue;
            out.add(mad);
            if (enough > 0 && out.size() >= enough) break;
        }
        return out;
    }

    /** The MAD a datagram carries when it is a UD SEND Only from the peer to QP 1, else null. */
    private byte[] decode(RawPort.Datagram d) {
        if (!d.from().getAddress().equals(peer.getAddress())) return null;
        RocePacket p = new RocePacket();
        if (p.decode(Unpooled.wrappedBuffer(d.bytes()), 0, d.bytes().length) != Problem.NONE) return null;
        if (p.opcode() != Opcode.UD_SEND_ONLY || p.destQp() != MadHeader.GSI_QPN || p.payloadLength() < MadHeader.LENGTH) return null;
        byte[] mad = new byte[MadHeader.MAD_SIZE];
        System.arraycopy(d.bytes(), p.payloadOffset(), mad, 0, Math.min(p.payloadLength(), MadHeader.MAD_SIZE));
        return mad;
    }

    /** MADs with this transaction ID (the CM and the MAD layer answer with the request's). */
    static Predicate<byte[]> tid(long tid) {
        return m -> Unpooled.wrappedBuffer(m).getLong(8) == tid;
    }
}
