package io.jroce.endpoint.fault;

import io.jroce.wire.RoceV2;
import io.netty.buffer.ByteBuf;
import io.netty.channel.socket.DatagramPacket;

import java.util.zip.CRC32;

/**
 * {@link FaultAction#REWRITE}: bytes written at an offset of a RoCE datagram (counted from the BTH's first byte), in a
 * copy, never in place (see {@link FaultInjector}, "Buffers"), with the ICRC made valid again.
 *
 * <p>The ICRC is updated without knowing the addresses, ports or IPv4 ID it covers. CRC-32 is affine in its input:
 * for two messages of the same length, {@code crc(a) ^ crc(b) = L(a ^ b)}, where {@code L} is the CRC register
 * started at zero, with no final XOR. Zero bytes leave a zero register at zero, so {@code L} of the difference is
 * {@code L} of the difference from its first changed byte to the end of what the ICRC covers, and
 * {@code L(d) = crc32(d) ^ crc32(zeros of d's length)}. The pseudo-header is unchanged, so it drops out; BTH byte 4 is
 * masked to all-ones in the ICRC (IBA annex A17.4.1), so a change there is no change to it.
 */
final class Rewrite {
    /** BTH byte 4 (FECN, BECN, resv6a), masked in the ICRC. */
    private static final int BTH_BYTE4 = 4;

    private Rewrite() {
    }

    /**
     * A copy of {@code packet} with {@code bytes} at {@code offset} and a valid ICRC again, the original released; or
     * null, leaving the packet alone, when the bytes would reach into the ICRC or past the datagram.
     */
    static DatagramPacket apply(DatagramPacket packet, int offset, byte[] bytes) {
        ByteBuf b = packet.content();
        int icrcAt = b.readableBytes() - RoceV2.ICRC_LENGTH;
        if (offset + bytes.length > icrcAt) {
            return null;
        }
        ByteBuf copy = b.copy();
        int base = copy.readerIndex();
        byte[] delta = new byte[icrcAt - offset];
        for (int i = 0; i < bytes.length; i++) {
            int at = offset + i;
            if (at != BTH_BYTE4) {
                delta[i] = (byte) (copy.getByte(base + at) ^ bytes[i]);
            }
            copy.setByte(base + at, bytes[i]);
        }
        copy.setIntLE(base + icrcAt, copy.getIntLE(base + icrcAt) ^ icrcChange(delta));
        DatagramPacket out = packet.replace(copy);
        packet.release();
        return out;
    }

    /** How the ICRC changes when the covered bytes from some offset to the ICRC change by {@code delta} (XOR). */
    static int icrcChange(byte[] delta) {
        CRC32 crc = new CRC32();
        crc.update(delta);
        int withDelta = (int) crc.getValue();
        crc.reset();
        crc.update(new byte[delta.length]);
        return withDelta ^ (int) crc.getValue();
    }
}
