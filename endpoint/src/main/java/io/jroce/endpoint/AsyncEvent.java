package io.jroce.endpoint;

/** Asynchronous events (libibverbs {@code IBV_EVENT_*}) a device reports to its listener. */
public enum AsyncEvent {
    CQ_ERR, QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR, COMM_EST, SQ_DRAINED, QP_LAST_WQE_REACHED
}
