package io.jroce.endpoint;

/**
 * The transport service of a queue pair ({@code enum ibv_qp_type}): reliable connected, or unreliable
 * datagram (one QP talks to many peers, each send names its destination by an {@link AddressHandle}).
 */
public enum QpType {
    /** Reliable connected ({@code IBV_QPT_RC}). */
    RC,
    /** Unreliable datagram ({@code IBV_QPT_UD}): single-packet messages, no ACKs, Q_Key checked. */
    UD
}
