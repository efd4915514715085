package io.jroce.wire.mad;

import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * SIDR_REQ and SIDR_REP against bytes laid out by hand from IBTA 12.11 Tables 115 and 116 (ibta_vol1_c12.h
 * CM_SIDR_REQ_* / CM_SIDR_REP_*: offsets from the end of the 24-byte MAD header).
 */
class SidrCodecTest {

    @Test
    void sidrReqFieldsSitWhereTheTableSays() {
        byte[] m = new byte[256];
        SidrReq r = new SidrReq().wrap(Unpooled.wrappedBuffer(m), 0).init(0x0102030405060708L)
                .requestId(0xA1B2C3D4).pkey(0xFFFF).serviceId(0x0000000001111234L);
        r.privateData(0, new byte[] {0x00, 0x40}, 2); // rdma_cm header: version 0, IPv4
        byte[] want = new byte[256];
        // MAD header: base version 1, class CM, class version 2, Send; TID; attribute 0x0017
        System.arraycopy(new byte[] {1, 7, 2, 3, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0x17}, 0, want, 0, 18);
        System.arraycopy(new byte[] {(byte) 0xA1, (byte) 0xB2, (byte) 0xC3, (byte) 0xD4}, 0, want, 24, 4); // Request ID
        want[28] = (byte) 0xFF; // P_Key
        want[29] = (byte) 0xFF;
        System.arraycopy(new byte[] {0, 0, 0, 0, 1, 0x11, 0x12, 0x34}, 0, want, 32, 8); // Service ID
        want[41] = 0x40; // private data from byte 40
        assertArrayEquals(want, m);
        assertEquals(0xA1B2C3D4, r.requestId());
        assertEquals(0xFFFF, r.pkey());
        assertEquals(0x0000000001111234L, r.serviceId());
        assertEquals(40, r.privateDataIndex());
        assertThrows(IllegalArgumentException.class, () -> r.privateData(200, new byte[17], 17));
    }

    @Test
    void sidrRepFieldsSitWhereTheTableSays() {
        byte[] m = new byte[256];
        SidrRep r = new SidrRep().wrap(Unpooled.wrappedBuffer(m), 0).init(9).requestId(0x11223344)
                .status(SidrRep.REJECT).qpn(0xABCDEF).serviceId(0x0000000001111234L).qkey(0x01234567)
                .privateData(new byte[] {0x5A}, 1);
        byte[] want = new byte[256];
        System.arraycopy(new byte[] {1, 7, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0x18}, 0, want, 0, 18);
        System.arraycopy(new byte[] {0x11, 0x22, 0x33, 0x44, 2}, 0, want, 24, 5); // Request ID, Status
        System.arraycopy(new byte[] {(byte) 0xAB, (byte) 0xCD, (byte) 0xEF}, 0, want, 32, 3); // QPN, upper 24 bits
        System.arraycopy(new byte[] {0, 0, 0, 0, 1, 0x11, 0x12, 0x34}, 0, want, 36, 8); // Service ID
        System.arraycopy(new byte[] {0x01, 0x23, 0x45, 0x67}, 0, want, 44, 4); // Q_Key
        want[120] = 0x5A; // private data from byte 120
        assertArrayEquals(want, m);
        assertEquals(0x11223344, r.requestId());
        assertEquals(SidrRep.REJECT, r.status());
        assertEquals(0xABCDEF, r.qpn());
        assertEquals(0x01234567, r.qkey());
        byte[] pd = new byte[SidrRep.PRIVATE_DATA_LENGTH];
        r.copyPrivateData(pd, 0);
        assertEquals(0x5A, pd[0]);
        assertEquals(136, pd.length);
        assertEquals(256, SidrRep.PRIVATE_DATA_OFFSET + SidrRep.PRIVATE_DATA_LENGTH);
        assertEquals(256, SidrReq.PRIVATE_DATA_OFFSET + SidrReq.PRIVATE_DATA_LENGTH);
    }
}
