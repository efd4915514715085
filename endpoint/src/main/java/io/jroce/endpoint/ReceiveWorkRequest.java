package io.jroce.endpoint;

import java.util.Arrays;

/** A receive work request: wr_id and the scatter list an incoming SEND lands in. Nothing else. */
public final class ReceiveWorkRequest {
    private static final Sge[] NO_SGES = new Sge[0];

    private long wrId;
    private Sge[] sgl = NO_SGES;
    private ReceiveWorkRequest next;

    public ReceiveWorkRequest() {
    }

    public ReceiveWorkRequest(long wrId, Sge... sgl) {
        this.wrId = wrId;
        sgl(sgl);
    }

    public long wrId() { return wrId; }
    public Sge[] sgl() { return sgl; }
    public ReceiveWorkRequest next() { return next; }

    public ReceiveWorkRequest wrId(long v) { wrId = v; return this; }
    public ReceiveWorkRequest sgl(Sge... v) { sgl = v == null ? NO_SGES : v; return this; }
    public ReceiveWorkRequest next(ReceiveWorkRequest v) { next = v; return this; }

    @Override
    public String toString() {
        return "ReceiveWorkRequest{wrId=" + wrId + ", sgl=" + Arrays.toString(sgl) + "}";
    }
}
