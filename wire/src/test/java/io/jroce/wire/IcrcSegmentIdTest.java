package io.jroce.wire;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The ICRC of segment k of a UDP GSO super-datagram, which leaves with IPv4 ID k: {@link Icrc#writeIpv4} with
 * ID k agrees with a CRC-32 written out here from the IBA A17.4.1 recipe, and with the receive-side solver.
 */
class IcrcSegmentIdTest {
    private static final int SRC = 0x0A000001;
    private static final int DST = 0x0A000002;

    @Test
    void segmentKsIcrcIsTheIcrcForIdK() {
        Icrc icrc = new Icrc();
        int len = BthView.LENGTH + 4096 + RoceV2.ICRC_LENGTH;
        for (int k = 0; k < 64; k++) {
            ByteBuf p = Unpooled.buffer(len);
            new BthView().wrap(p, 0).write(Opcode.RC_RDMA_WRITE_MIDDLE.code(), false, false, 0, RoceV2.DEFAULT_PKEY, 0x11, false, 100 + k);
            p.writerIndex(BthView.LENGTH);
            for (int i = 0; i < 4096; i++) p.writeByte(i * 7 + k);
            p.writeZero(RoceV2.ICRC_LENGTH);
            icrc.writeIpv4(SRC, DST, k, Icrc.IPV4_DF, 4791, 4791, p, 0, len);
            assertEquals(byHand(p, len, k), Icrc.wireValue(p, 0, len), "segment " + k);
            assertEquals(k, icrc.verifyIpv4UnknownId(SRC, DST, 4791, 4791, p, 0, len, false), "the receiver solves ID " + k);
            if (k > 0) assertFalse(icrc.verifyIpv4(SRC, DST, 0, Icrc.IPV4_DF, 4791, 4791, p, 0, len), "ID 0 does not fit segment " + k);
            assertTrue(icrc.verifyIpv4(SRC, DST, k, Icrc.IPV4_DF, 4791, 4791, p, 0, len));
        }
    }

    /** A slice of a pooled direct buffer (how a batched receive hands out datagrams) is fed through its root's NIO view. */
    @Test
    void aSliceOfAPooledDirectBufferGivesTheSameIcrc() {
        Icrc icrc = new Icrc();
        int len = BthView.LENGTH + 1024 + RoceV2.ICRC_LENGTH;
        ByteBuf heap = Unpooled.buffer(len);
        new BthView().wrap(heap, 0).write(Opcode.RC_SEND_ONLY.code(), false, false, 0, RoceV2.DEFAULT_PKEY, 0x12, true, 5);
        heap.writerIndex(BthView.LENGTH);
        for (int i = 0; i < 1024; i++) heap.writeByte(i * 13);
        heap.writeZero(RoceV2.ICRC_LENGTH);
        icrc.writeIpv4(SRC, DST, 3, Icrc.IPV4_DF, 4791, 4791, heap, 0, len);
        ByteBuf batch = PooledByteBufAllocator.DEFAULT.directBuffer(8192);
        try {
            batch.writeZero(777).writeBytes(heap, 0, len).writeZero(100);
            ByteBuf slice = batch.retainedSlice(777, len);
            try {
                assertTrue(slice.unwrap() != null && slice.hasMemoryAddress(), "a derived buffer over native memory");
                assertEquals(3, icrc.verifyIpv4UnknownId(SRC, DST, 4791, 4791, slice, 0, len, false));
                assertEquals(Icrc.wireValue(heap, 0, len), icrc.computeIpv4(SRC, DST, 3, Icrc.IPV4_DF, 4791, 4791, slice, 0, len));
                slice.setByte(500, slice.getByte(500) ^ 1);
                assertEquals(-1, icrc.verifyIpv4UnknownId(SRC, DST, 4791, 4791, slice, 0, len, false), "the slice's own bytes are read");
            } finally {
                slice.release();
            }
        } finally {
            batch.release();
        }
    }

    /** CRC-32 over 8 x 0xFF, the masked IPv4 header (ID k, DF), the masked UDP header, the masked BTH and the rest. */
    private static int byHand(ByteBuf p, int len, int id) {
        byte[] m = new byte[8 + 20 + 8 + len - 4];
        Arrays.fill(m, 0, 8, (byte) 0xFF);
        int ip = 8;
        int total = 20 + 8 + len;
        byte[] hdr = {0x45, (byte) 0xFF, (byte) (total >> 8), (byte) total, (byte) (id >> 8), (byte) id, 0x40, 0,
                (byte) 0xFF, 17, (byte) 0xFF, (byte) 0xFF, 10, 0, 0, 1, 10, 0, 0, 2,
                0x12, (byte) 0xB7, 0x12, (byte) 0xB7, (byte) ((8 + len) >> 8), (byte) (8 + len), (byte) 0xFF, (byte) 0xFF};
        System.arraycopy(hdr, 0, m, ip, hdr.length);
        p.getBytes(0, m, 36, len - 4);
        m[36 + 4] = (byte) 0xFF;
        CRC32 c = new CRC32();
        c.update(m);
        return (int) c.getValue();
    }
}
