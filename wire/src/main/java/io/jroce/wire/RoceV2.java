package io.jroce.wire;

/** RoCEv2 encapsulation constants (IBTA annex A17) and the UDP source port conventions of Linux. */
public final class RoceV2 {
    /** IANA-assigned RoCEv2 UDP destination port ({@code ROCE_V2_UDP_DPORT}). */
    public static final int UDP_PORT = 4791;
    public static final int ICRC_LENGTH = 4;
    /** Full-membership default partition ({@code IB_DEFAULT_PKEY_FULL}); rxe always sends it. */
    public static final int DEFAULT_PKEY = 0xFFFF;
    /** Well-known Q_Key of QP1, the General Services Interface ({@code IB_QP1_QKEY}, rxe's {@code GSI_QKEY}). */
    public static final int GSI_QKEY = 0x80010000;

    /** Source ports live in 0xC000..0xFFFF (IB_ROCE_UDP_ENCAP_VALID_PORT_MIN..MAX). */
    private static final int SPORT_BASE = 0xC000;
    private static final int GOLDEN_RATIO_32 = 0x61C88647;

    private RoceV2() {
    }

    /**
     * The per-QP source port rxe picks at QP creation: {@code 0xC000 + hash_32(qpn, 14)}, the multiplicative
     * hash keeping the top 14 bits (rxe_qp.c). Receivers must accept any source port; this only matters for
     * looking like rxe and keeping one flow per QP so ECMP does not reorder it.
     */
    public static int qpSourcePort(int qpn) {
        return SPORT_BASE + (((qpn * GOLDEN_RATIO_32) >>> 18) & 0x3FFF);
    }

    /**
     * {@code rdma_get_udp_sport(0, lqpn, rqpn)} (include/rdma/ib_verbs.h), what recent rxe uses after
     * modify_qp with a GRH: a flow label from the product of both QPNs, folded to 14 bits. Symmetric in its
     * arguments, so both directions of a connection use the same port.
     */
    public static int flowLabelSourcePort(int lqpn, int rqpn) {
        long v = (lqpn & 0xFFFFFFFFL) * (rqpn & 0xFFFFFFFFL);
        v ^= v >>> 20;
        v ^= v >>> 40;
        int fl = (int) (v & 0xFFFFF);
        return SPORT_BASE | ((fl & 0x3FFF) ^ ((fl & 0xFC000) >>> 14));
    }

    /**
     * IBA 10.9 partition key matching, as rdma_rxe's {@code pkey_match} (rxe_verbs.h): the low 15 bits
     * (the partition) are equal and not zero, and at least one of the two keys has the membership bit
     * (bit 15) set, so two limited members of a partition never match each other.
     */
    public static boolean pkeyMatch(int key1, int key2) {
        int partition = key1 & 0x7FFF;
        return partition != 0 && partition == (key2 & 0x7FFF) && ((key1 | key2) & 0x8000) != 0;
    }

    /** Pad bytes so that payload + pad is a multiple of 4 (BTH PadCnt). */
    public static int padFor(int payloadLength) {
        return (-payloadLength) & 3;
    }
}
