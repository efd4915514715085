package io.jroce.endpoint.cm;

import io.jroce.endpoint.JroceExtensions;

import java.util.Arrays;

/**
 * What {@link CmId#connect} and {@link CmId#accept} put in the REQ or REP, librdmacm's
 * {@code struct rdma_conn_param}. The defaults are librdmacm's for a null conn_param (cma.c rdma_connect,
 * rdma_accept, ucma_copy_conn_param_to_kern): responder resources and initiator depth {@link #MAX} (connect: the
 * device's maximum; accept: the REQ's, mirrored and clamped to the device's maximum), end-to-end flow control off
 * (the zeroed field), retry count 7, RNR retry count 7.
 */
public final class CmConnParam {
    private byte[] privateData = new byte[0];
    /**
     * librdmacm's RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH: as many as the device allows ({@link CmAgent#MAX_RD_ATOMIC});
     * on accept, as many as the REQ asks, up to that.
     */
    public static final int MAX = 255;
    private int responderResources = MAX;
    private int initiatorDepth = MAX;
    private int retryCount = 7;
    private int rnrRetryCount = 7;
    private boolean flowControl;
    private int extensions;
    private int qkey;

    public static CmConnParam defaults() {
        return new CmConnParam();
    }

    /**
     * The application's private data: at most 56 bytes in a REQ (92 minus rdma_cm's 36-byte header), 196 in a REP,
     * 148 in a REJ.
     */
    public CmConnParam privateData(byte[] v) {
        privateData = v == null ? new byte[0] : v.clone();
        return this;
    }

    /** RDMA READs and atomics this side accepts at once from the peer (becomes max_dest_rd_atomic). */
    public CmConnParam responderResources(int v) {
        responderResources = check(v, 255, "responder resources");
        return this;
    }

    /** RDMA READs and atomics this side may have outstanding towards the peer (becomes max_rd_atomic). */
    public CmConnParam initiatorDepth(int v) {
        initiatorDepth = check(v, 255, "initiator depth");
        return this;
    }

    /** Transport retries (QP retry_cnt), 0..7. */
    public CmConnParam retryCount(int v) {
        retryCount = check(v, 7, "retry count");
        return this;
    }

    /** RNR retries (QP rnr_retry), 0..7 (7 = forever). */
    public CmConnParam rnrRetryCount(int v) {
        rnrRetryCount = check(v, 7, "RNR retry count");
        return this;
    }

    /** The end-to-end flow control bit of REQ and REP. */
    public CmConnParam flowControl(boolean v) {
        flowControl = v;
        return this;
    }

    /**
     * The {@link JroceExtensions} this side is willing to use on the connection; 0, the default, adds nothing to
     * any message, so the REQ and REP are byte for byte those of a plain rdma_cm peer.
     *
     * <p>On {@link CmId#connect} a non-zero value is an <em>offer</em>: an 8-byte trailer at the end of the REQ's
     * 56-byte private data area (bytes 48..55 after rdma_cm's header: ASCII {@code jroceX}, version 1, the flags),
     * sent only when the application's private data is at most 48 bytes (otherwise nothing is offered). On
     * {@link CmId#accept} a non-zero value lets a jroce requester's valid offer be answered: the REP carries the
     * same kind of trailer in the last 8 of its 196 bytes with the flags both offer (only when the application's
     * REP private data is at most 188 bytes); without a valid offer the REP is exactly as with 0. The extensions
     * are in force only when both trailers travelled; the CM then sets them on the QP before RTR
     * ({@link io.jroce.endpoint.QueuePair#setExtensions}) and {@link CmId#extensions} reports them. A side whose
     * value is 0 leaves its QP's extensions as they are. Peers that are not jroce see the offer as opaque private
     * data and answer without a trailer, so nothing changes for them.
     *
     * <p>On the {@link CmEventType#CONNECT_REQUEST} event's {@link CmEvent#param} this is what the requester offered
     * (0: no valid offer), so accepting with that param allows whatever was offered.
     */
    public CmConnParam extensions(int flags) {
        if ((flags & ~JroceExtensions.ALL) != 0) {
            throw new IllegalArgumentException("unknown extension flags 0x" + Integer.toHexString(flags));
        }
        extensions = flags;
        return this;
    }

    /**
     * UDP port space, accept: the Q_Key the SIDR_REP announces and the id's QP uses (rdma_conn_param.qkey); 0, the
     * default, keeps the id's ({@link CmPortSpace#UDP_QKEY} unless set).
     */
    public CmConnParam qkey(int v) {
        qkey = v;
        return this;
    }

    public int qkey() { return qkey; }
    public byte[] privateData() { return privateData.clone(); }
    public int responderResources() { return responderResources; }
    public int initiatorDepth() { return initiatorDepth; }
    public int retryCount() { return retryCount; }
    public int rnrRetryCount() { return rnrRetryCount; }
    public boolean flowControl() { return flowControl; }
    /** See {@link #extensions(int)}. */
    public int extensions() { return extensions; }

    int privateDataLength() { return privateData.length; }
    byte[] privateDataRaw() { return privateData; }

    private static int check(int v, int max, String what) {
        if (v < 0 || v > max) throw new IllegalArgumentException(what + " must be 0.." + max + ", not " + v);
        return v;
    }

    @Override
    public String toString() {
        return "CmConnParam{resp_res=" + responderResources + ", init_depth=" + initiatorDepth + ", retry=" + retryCount
                + ", rnr_retry=" + rnrRetryCount + ", flow_control=" + flowControl
                + (extensions != 0 ? ", extensions=" + JroceExtensions.toString(extensions) : "") + ", private_data="
                + privateData.length + "B" + (privateData.length > 0 ? " " + Arrays.toString(Arrays.copyOf(privateData, Math.min(8, privateData.length))) : "") + "}";
    }
}
