package io.jroce.endpoint.cm;

/** The events of a {@link CmEventChannel}, named and meant as librdmacm's {@code enum rdma_cm_event_type}. */
public enum CmEventType {
    /** {@link CmId#resolveAddr} finished (RDMA_CM_EVENT_ADDR_RESOLVED). */
    ADDR_RESOLVED,
    /** {@link CmId#resolveRoute} finished (RDMA_CM_EVENT_ROUTE_RESOLVED). */
    ROUTE_RESOLVED,
    /**
     * A REQ reached a listening id: {@link CmEvent#id()} is a new id for the connection, to be
     * {@link CmId#accept accepted} or {@link CmId#reject rejected} (RDMA_CM_EVENT_CONNECT_REQUEST).
     */
    CONNECT_REQUEST,
    /** Moving the QP to RTR/RTS with the peer's REP failed; a REJ was sent (RDMA_CM_EVENT_CONNECT_ERROR). */
    CONNECT_ERROR,
    /** No answer after all CM retries (REQ or REP), status -110 ETIMEDOUT (RDMA_CM_EVENT_UNREACHABLE). */
    UNREACHABLE,
    /** The peer sent a REJ; {@link CmEvent#status()} is its reason (RDMA_CM_EVENT_REJECTED). */
    REJECTED,
    /** The connection is up: REP+RTU sent (active) or RTU received (passive) (RDMA_CM_EVENT_ESTABLISHED). */
    ESTABLISHED,
    /** The connection was released by either side, or the DREQ went unanswered (RDMA_CM_EVENT_DISCONNECTED). */
    DISCONNECTED,
    /** The id's timewait ended; its comm ID may be reused (RDMA_CM_EVENT_TIMEWAIT_EXIT). */
    TIMEWAIT_EXIT,
    /**
     * The REP of a connection whose QP the application connects itself ({@link CmId#ownQp}) arrived: the application
     * takes its QP to RTR and RTS ({@link CmId#initQpAttr}) and then calls {@link CmId#establish}, which sends the RTU
     * (RDMA_CM_EVENT_CONNECT_RESPONSE).
     */
    CONNECT_RESPONSE
}
