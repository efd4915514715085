package io.jroce.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class RoceV2Test {
    @Test
    void rxeQpSourcePorts() {
        // rdma_rxe's per-QP UDP source port (rxe_qp.c: 0xC000 + hash_32(qpn, 14)), as in the golden vectors
        assertEquals(57236, RoceV2.qpSourcePort(0x11));
        assertEquals(52639, RoceV2.qpSourcePort(0xd2));
        assertEquals(57236, GoldenVectors.get(1).srcPort());
        for (int qpn = 0; qpn < 1 << 24; qpn += 4099) {
            int p = RoceV2.qpSourcePort(qpn);
            assertTrue(p >= 0xC000 && p <= 0xFFFF);
        }
    }

    @Test
    void flowLabelSourcePorts() {
        assertEquals(GoldenVectors.get(35).srcPort(), RoceV2.flowLabelSourcePort(0x11, 0xd2));
        assertEquals(52722, RoceV2.flowLabelSourcePort(0xd2, 0x11)); // symmetric
        // testdata/README.md: RC source ports of real rxe connections
        assertEquals(50447, RoceV2.flowLabelSourcePort(0x25, 0x23)); // write_bw
        assertEquals(50307, RoceV2.flowLabelSourcePort(0x21, 0x23)); // rc_pingpong
        // large QPNs exercise the 64-bit product and both folds
        int p = RoceV2.flowLabelSourcePort(0xFFFFFF, 0xFFFFFE);
        assertTrue(p >= 0xC000 && p <= 0xFFFF);
    }

    @Test
    void pad() {
        assertEquals(0, RoceV2.padFor(0));
        assertEquals(3, RoceV2.padFor(1));
        assertEquals(2, RoceV2.padFor(2));
        assertEquals(1, RoceV2.padFor(3));
        assertEquals(0, RoceV2.padFor(4096));
        assertEquals(3, RoceV2.padFor(13)); // golden vector 2
        assertEquals(4791, RoceV2.UDP_PORT);
        assertEquals(0x80010000, RoceV2.GSI_QKEY);
    }

    @Test
    void pkeyMatchAgainstTheDefaultPartition() {
        // the device's table holds 0xFFFF: a full or limited member of the default partition matches it
        assertTrue(RoceV2.pkeyMatch(0xFFFF, RoceV2.DEFAULT_PKEY));
        assertTrue(RoceV2.pkeyMatch(0x7FFF, RoceV2.DEFAULT_PKEY));
        for (int other : new int[] {0x1234, 0x9234, 0x0000, 0x8000, 0x7FFE, 0xFFFE, 0x0001}) {
            assertFalse(RoceV2.pkeyMatch(other, RoceV2.DEFAULT_PKEY), Integer.toHexString(other));
        }
    }

    @Test
    void twoLimitedMembersDoNotMatch() {
        assertFalse(RoceV2.pkeyMatch(0x7FFF, 0x7FFF));
        assertFalse(RoceV2.pkeyMatch(0x1234, 0x1234));
        assertTrue(RoceV2.pkeyMatch(0x1234, 0x9234));
        assertTrue(RoceV2.pkeyMatch(0x9234, 0x1234));
        assertTrue(RoceV2.pkeyMatch(0x9234, 0x9234));
        assertFalse(RoceV2.pkeyMatch(0x8000, 0x8000), "partition 0 is invalid");
    }
}
