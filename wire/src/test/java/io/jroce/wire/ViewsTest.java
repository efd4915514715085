package io.jroce.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

class ViewsTest {
    private static ByteBuf filled(int n, int value) {
        ByteBuf b = Unpooled.buffer(n, n);
        for (int i = 0; i < n; i++) {
            b.setByte(i, value);
        }
        return b;
    }

    @Test
    void bthWriteSetsAllTwelveBytes() {
        ByteBuf b = filled(20, 0xAA);
        BthView bth = new BthView().wrap(b, 4);
        bth.write(0x0B, true, true, 3, 0x8001, 0x123456, true, 0xABCDEF);
        assertEquals("aaaaaaaa" + "0bf08001" + "00123456" + "80abcdef" + "aaaaaaaa", ByteBufUtil.hexDump(b, 0, 20));
        assertEquals(0x0B, bth.opcode());
        assertTrue(bth.se());
        assertTrue(bth.migReq());
        assertEquals(3, bth.padCount());
        assertEquals(0, bth.tver());
        assertEquals(0x8001, bth.pkey());
        assertFalse(bth.fecn());
        assertFalse(bth.becn());
        assertEquals(0x123456, bth.destQp());
        assertTrue(bth.ackReq());
        assertEquals(0, bth.reserved7());
        assertEquals(0xABCDEF, bth.psn());
        assertEquals(0, b.readerIndex());
        assertEquals(0, b.writerIndex());

        // out-of-range values are truncated to the field, never spill into neighbours
        bth.write(0x1FF, false, false, 7, 0x1FFFF, 0x7F000001, false, 0x7F000002);
        assertEquals("ff30ffff" + "00000001" + "00000002", ByteBufUtil.hexDump(b, 4, 12));
    }

    @Test
    void bthSettersTouchOnlyTheirBits() {
        for (int fill : new int[] {0x00, 0xFF}) {
            ByteBuf b = filled(12, fill);
            BthView v = new BthView().wrap(b, 0);
            boolean on = fill == 0;
            v.se(on);
            assertEquals(on, v.se());
            assertEquals(fill == 0xFF, v.migReq());
            v.migReq(on);
            assertEquals(on, v.migReq());
            v.padCount(2);
            assertEquals(2, v.padCount());
            assertEquals(fill & 0xF, v.tver());
            v.tver(5);
            assertEquals(5, v.tver());
            assertEquals(on, v.se());
            v.fecn(on);
            assertEquals(on, v.fecn());
            assertEquals(fill == 0xFF, v.becn());
            v.becn(on);
            assertEquals(on, v.becn());
            v.destQp(0xABCDEF);
            assertEquals(0xABCDEF, v.destQp());
            assertEquals(on, v.becn());
            v.ackReq(on);
            assertEquals(on, v.ackReq());
            assertEquals(fill & 0x7F, v.reserved7());
            v.psn(0x1234567);
            assertEquals(0x234567, v.psn());
            assertEquals(on, v.ackReq());
            v.pkey(0x7FFF);
            assertEquals(0x7FFF, v.pkey());
            v.opcode(0x81);
            assertEquals(0x81, v.opcode());
            assertEquals(5, v.tver());
            assertEquals(2, v.padCount());
        }
    }

    @Test
    void extensionHeaders() {
        ByteBuf b = filled(64, 0x55);
        RethView reth = new RethView().wrap(b, 1).write(0x8000_0000_0000_0001L, 0xDEADBEEF, 0xFFFF_FFF0);
        assertEquals("55" + "8000000000000001" + "deadbeef" + "fffffff0" + "55", ByteBufUtil.hexDump(b, 0, 18));
        assertEquals(0x8000_0000_0000_0001L, reth.va());
        assertEquals(0xDEADBEEF, reth.rkey());
        assertEquals(-16, reth.dmaLength());
        assertEquals(0xFFFF_FFF0L, reth.dmaLengthUnsigned());
        reth.va(7).rkey(8).dmaLength(9);
        assertEquals(7, reth.va());
        assertEquals(8, reth.rkey());
        assertEquals(9, reth.dmaLength());

        AethView aeth = new AethView().wrap(b, 20).write(0x1FF, 0x1ABCDEF);
        assertEquals("ffabcdef", ByteBufUtil.hexDump(b, 20, 4));
        assertEquals(0xFF, aeth.syndrome());
        assertEquals(0xABCDEF, aeth.msn());
        aeth.syndrome(Aeth.ACK_UNLIMITED).msn(0xFFFFFF + 2);
        assertEquals("1f000001", ByteBufUtil.hexDump(b, 20, 4));

        AtomicEthView at = new AtomicEthView().wrap(b, 24).write(0x1122334455667788L, 0x99AABBCC, -2L, 0x0102030405060708L);
        assertEquals("1122334455667788" + "99aabbcc" + "fffffffffffffffe" + "0102030405060708", ByteBufUtil.hexDump(b, 24, 28));
        assertEquals(-2L, at.swapAdd());
        assertEquals(0x0102030405060708L, at.compare());
        at.va(1).rkey(2).swapAdd(3).compare(4);
        assertEquals(1, at.va());
        assertEquals(2, at.rkey());
        assertEquals(3, at.swapAdd());
        assertEquals(4, at.compare());
        assertEquals(0x55, b.getUnsignedByte(52));

        DethView deth = new DethView().wrap(b, 52).write(RoceV2.GSI_QKEY, 0xFF000001);
        assertEquals("80010000" + "00000001", ByteBufUtil.hexDump(b, 52, 8));
        assertEquals(RoceV2.GSI_QKEY, deth.qkey());
        assertEquals(1, deth.srcQp());
        deth.qkey(5).srcQp(0xABCDEF);
        assertEquals("00000005" + "00abcdef", ByteBufUtil.hexDump(b, 52, 8));

        assertEquals(0xCAFEBABE, new ImmDtView().wrap(b, 60).imm(0xCAFEBABE).imm());
        assertEquals("cafebabe", ByteBufUtil.hexDump(b, 60, 4));
        assertEquals(0x01020304, new IethView().wrap(b, 60).rkey(0x01020304).rkey());
        assertEquals(0x77, new AtomicAckEthView().wrap(b, 0).originalData(0x77).originalData());
        assertEquals(0, b.readerIndex());
        assertEquals(0, b.writerIndex());
    }
}
