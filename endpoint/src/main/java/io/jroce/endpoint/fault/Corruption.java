package io.jroce.endpoint.fault;

import io.jroce.wire.BthView;
import io.jroce.wire.RoceV2;
import io.netty.buffer.ByteBuf;
import io.netty.channel.socket.DatagramPacket;

/**
 * {@link FaultAction#CORRUPT}: one flipped bit, placed where the receiver's ICRC check rejects it. Always in a copy, never in
 * place (see {@link FaultInjector}, "Buffers").
 */
final class Corruption {
    /** Bits are numbered byte * 8 + k for mask 1 << k, from the BTH's first byte; BTH byte 4 starts here. */
    private static final long BTH_BYTE4_FIRST_BIT = 4 * 8;
    /** The two single-bit flips a receive check with the DF-clear retry cannot see (Icrc class javadoc). */
    private static final long BLIND_BIT_173 = 173 * 8 + 3;  // byte 173, mask 0x08
    private static final long BLIND_BIT_1834 = 1834 * 8 + 6; // byte 1834, mask 0x40

    private Corruption() {
    }

    /** A copy of the datagram with one bit flipped; the original is released. */
    static DatagramPacket flipOneBit(DatagramPacket packet, long param) {
        ByteBuf b = packet.content();
        ByteBuf copy = b.copy();
        long bit = corruptBit(copy.readableBytes(), param);
        int i = copy.readerIndex() + (int) (bit >>> 3);
        copy.setByte(i, copy.getByte(i) ^ (1 << (int) (bit & 7)));
        DatagramPacket bad = packet.replace(copy);
        packet.release();
        return bad;
    }

    /**
     * The bit to flip in a datagram of {@code len} bytes (len > 0), as byte * 8 + bit (mask 1 << bit), for a
     * random {@code param}. For anything long enough to be RoCE it never picks BTH byte 4 (FECN, BECN, resv6a),
     * which the ICRC masks, so flipping it is no error at all. jroce's receiver checks the ICRC with DF set
     * ({@code tryDfClear = false}), which detects every other single-bit flip (wire {@code Icrc} javadoc). The
     * two flips that a check with the DF-clear retry would accept (byte 173 mask 0x08, byte 1834 mask 0x40,
     * blind spots at every length, in the ICRC bytes too) are avoided as well, so the guarantee holds for
     * such a receiver too.
     */
    static long corruptBit(int len, long param) {
        long bits = (long) len * 8;
        if (len < BthView.LENGTH + RoceV2.ICRC_LENGTH) {
            return Long.remainderUnsigned(param, bits);
        }
        long bit = Long.remainderUnsigned(param, bits - 8);
        if (bit >= BTH_BYTE4_FIRST_BIT) {
            bit += 8;
        }
        if (bit == BLIND_BIT_173 || bit == BLIND_BIT_1834) {
            bit++; // the next bit of the same byte (masks 0x10, 0x80), which is detected
        }
        return bit;
    }
}
