package io.jroce.endpoint.cm;

import io.jroce.wire.mad.CmaHeader;

/**
 * rdma_cm's port spaces (rdma_cma.h {@code enum rdma_ucm_port_space}) a {@link CmId} can live in. Each has its own
 * ports; a port's service ID is {@code (port space << 16) + port} (cma.c rdma_get_service_id).
 */
public enum CmPortSpace {
    /** RDMA_PS_TCP: RC connections, REQ/REP/RTU. */
    TCP(CmaHeader.PS_TCP),
    /** RDMA_PS_UDP: UD, Service ID Resolution (SIDR_REQ/SIDR_REP) for the peer's QPN and Q_Key. */
    UDP(CmaHeader.PS_UDP);

    /** RDMA_UDP_QKEY: the Q_Key rdma_cm gives the QPs of the UDP port space unless the application sets one. */
    public static final int UDP_QKEY = 0x01234567;

    private final int value;

    CmPortSpace(int value) {
        this.value = value;
    }

    /** The rdma_ucm_port_space value (0x0106, 0x0111). */
    public int value() {
        return value;
    }

    /** The service ID of {@code port} in this port space. */
    public long serviceId(int port) {
        return CmaHeader.serviceId(value, port);
    }
}
