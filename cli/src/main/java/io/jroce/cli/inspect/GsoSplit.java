package io.jroce.cli.inspect;

import io.jroce.wire.BthView;
import io.jroce.wire.Icrc;
import io.jroce.wire.Opcode;
import io.jroce.wire.Problem;
import io.jroce.wire.RocePacket;
import io.jroce.wire.RoceV2;
import io.jroce.wire.pcap.PcapFrame;
import io.netty.buffer.ByteBuf;

/**
 * Recognises a UDP GSO super-datagram in a capture: one UDP datagram whose payload is several RoCE packets
 * of one size back to back (the last may be shorter), as a sender's {@code UDP_SEGMENT} write looks on any
 * device before it is cut, e.g. on a veth or a bridge with the offload. The kernel cuts it into one datagram
 * per packet and gives segment k the IPv4 ID of the captured datagram plus k (net/ipv4/af_inet.c
 * inet_gso_segment), so segment k's ICRC is checked for that ID; IPv6 has no ID and the check is exact.
 *
 * <p>Detection: the segment size s is the smallest for which every chunk starts with a plausible BTH
 * (known opcode, transport version 0, the first chunk's P_Key), the first chunk decodes, and the first
 * chunk's ICRC verifies for the captured ID: a wrong s passes that last test with probability 2^-32.
 * Callers try it only on a datagram that is not one valid RoCE packet.
 */
final class GsoSplit {
    private static final int MIN_PACKET = BthView.LENGTH + RoceV2.ICRC_LENGTH;

    private final Icrc icrc = new Icrc();
    private final RocePacket packet = new RocePacket();
    private final byte[] src16 = new byte[16];
    private final byte[] dst16 = new byte[16];

    /** The segment size of the super-datagram in {@code f}, or 0 if its UDP payload is not one. */
    int segmentSize(PcapFrame f, ByteBuf buf) {
        int off = f.udpPayloadOffset();
        int len = f.udpPayloadLength();
        if (len < 2 * MIN_PACKET || f.isTruncated()) return 0;
        int pkey = buf.getUnsignedShort(off + 2);
        for (int s = MIN_PACKET; s <= len - MIN_PACKET; s++) {
            int n = (len + s - 1) / s;
            if (len - (n - 1) * s < MIN_PACKET) continue; // the last segment could not hold a packet
            boolean plausible = true;
            for (int k = 1; k < n && plausible; k++) plausible = bthLike(buf, off + k * s, pkey);
            if (!plausible || packet.decode(buf, off, s) != Problem.NONE) continue;
            if (segmentIcrcOk(f, buf, off, s, 0)) return s;
        }
        return 0;
    }

    /** Whether segment k ([off, off+len) of the frame's buffer) has the ICRC of its own datagram: IPv4 ID captured + k. */
    boolean segmentIcrcOk(PcapFrame f, ByteBuf buf, int off, int len, int k) {
        try {
            if (f.ipVersion() == 4) {
                return icrc.verifyIpv4(addr(f.srcAddress().getAddress()), addr(f.dstAddress().getAddress()), segmentId(f, k),
                        f.ipFlagsFragment(), f.srcPort(), f.dstPort(), buf, off, len);
            }
            System.arraycopy(f.srcAddress().getAddress(), 0, src16, 0, 16);
            System.arraycopy(f.dstAddress().getAddress(), 0, dst16, 0, 16);
            return icrc.verifyIpv6(src16, dst16, f.srcPort(), f.dstPort(), buf, off, len);
        } catch (RuntimeException e) {
            return false;
        }
    }

    /** The IPv4 ID segment k leaves with once the kernel cuts the datagram; -1 for IPv6. */
    static int segmentId(PcapFrame f, int k) {
        return f.ipVersion() == 4 ? (f.ipId() + k) & 0xFFFF : -1;
    }

    private static boolean bthLike(ByteBuf buf, int at, int pkey) {
        return Opcode.of(buf.getUnsignedByte(at)) != null && (buf.getUnsignedByte(at + 1) & 0x0F) == 0
                && buf.getUnsignedShort(at + 2) == pkey;
    }

    private static int addr(byte[] a) {
        return (a[0] & 0xFF) << 24 | (a[1] & 0xFF) << 16 | (a[2] & 0xFF) << 8 | (a[3] & 0xFF);
    }
}
