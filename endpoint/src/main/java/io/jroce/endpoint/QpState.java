package io.jroce.endpoint;

/** Queue pair states (IBA 10.3.1). */
public enum QpState {
    RESET, INIT, RTR, RTS, SQD, SQE, ERR;

    /** Receives may be posted from INIT on (IBA 10.3.1: posting to the RQ in RESET is an error). */
    boolean acceptsReceives() {
        return this != RESET;
    }

    /** Sends may be posted only where the send queue will process them: RTS, or SQD (queued). */
    boolean acceptsSends() {
        return this == RTS || this == SQD;
    }
}
