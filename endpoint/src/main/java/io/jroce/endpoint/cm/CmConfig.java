package io.jroce.endpoint.cm;

import io.jroce.endpoint.Mtu;

/**
 * How a {@link CmAgent} behaves: the timeouts it advertises and the caps on what peers can make it hold. The defaults
 * are rdma_cm's (cma.c CMA_CM_RESPONSE_TIMEOUT 20, CMA_MAX_CM_RETRIES 15, CMA_IBOE_PACKET_LIFETIME 18 as observed on
 * a 6.1 kernel) and rdma_rxe's (RXE_LOCAL_CA_ACK_DELAY 15); timeouts are IBTA exponents, 4.096 us &times; 2^x.
 */
public final class CmConfig {
    int cmResponseTimeout = 20;
    int maxCmRetries = 15;
    int packetLifeTime = 18;
    int caAckDelay = 15;
    Mtu mtu = Mtu.MTU_1024;
    int peerUdpPort = -1;
    int maxPending = 256;
    long acceptTimeoutMillis = 20_000;
    int mraServiceTimeout = 24;
    int maxInboundQueue = 1024;
    int maxIds = 4096;
    int madReplyRate = 100;
    long seed = System.nanoTime();

    public static CmConfig defaults() {
        return new CmConfig();
    }

    /** The CM response timeout exponent put in REQs (Local and Remote CM Response Timeout); 20 &asymp; 4.3 s. */
    public CmConfig cmResponseTimeout(int v) { cmResponseTimeout = range(v, 0, 31, "CM response timeout"); return this; }
    /** Max CM Retries put in REQs: how often a REQ, REP or DREQ is resent. */
    public CmConfig maxCmRetries(int v) { maxCmRetries = range(v, 0, 15, "max CM retries"); return this; }
    /** The path's packet lifetime exponent (REQ retry period, ACK timeout). */
    public CmConfig packetLifeTime(int v) { packetLifeTime = range(v, 0, 31, "packet lifetime"); return this; }
    /** This CA's ACK delay exponent (REP Target ACK Delay). */
    public CmConfig caAckDelay(int v) { caAckDelay = range(v, 0, 31, "CA ACK delay"); return this; }
    /**
     * The path MTU this agent asks for in its REQs; 1024 suits rdma_rxe on a 1500-byte link. As the passive side the
     * agent takes the REQ's MTU (as Linux does), whatever this says.
     */
    public CmConfig mtu(Mtu v) { mtu = java.util.Objects.requireNonNull(v, "mtu"); return this; }
    /**
     * The UDP port of the peers' devices, where MADs and the yielded QPs' traffic go: 4791 for real RoCEv2 peers;
     * by default the local device's own port (so that tests with devices on other ports reach each other).
     */
    public CmConfig peerUdpPort(int v) { peerUdpPort = range(v, 1, 65535, "peer UDP port"); return this; }
    /** Incoming connections the agent holds before they are established (over it, REQs are dropped and counted). */
    public CmConfig maxPending(int v) { maxPending = range(v, 1, 1 << 20, "max pending"); return this; }
    /** How long an incoming connection waits for accept/reject before it is rejected (REJ 28). */
    public CmConfig acceptTimeoutMillis(long v) { acceptTimeoutMillis = Math.max(1, v); return this; }
    /** Service Timeout of the MRA sent for a duplicate REQ the application has not answered yet (24 &asymp; 69 s, as cma.c). */
    public CmConfig mraServiceTimeout(int v) { mraServiceTimeout = range(v, 0, 31, "MRA service timeout"); return this; }
    /** Received MADs waiting for the agent's runner; more are dropped and counted. */
    public CmConfig maxInboundQueue(int v) { maxInboundQueue = range(v, 1, 1 << 20, "max inbound queue"); return this; }
    /** All ids the agent holds (application ids, pending and timewait connections). */
    public CmConfig maxIds(int v) { maxIds = range(v, 1, 1 << 20, "max ids"); return this; }
    /**
     * At most this many MAD-layer answers per second (GetResp 0x000C to Gets and Sets no agent takes), with a burst of
     * as many; more are dropped and counted. The kernel does not limit them; QP 1 is open to anyone on the network.
     */
    public CmConfig madReplyRate(int v) { madReplyRate = range(v, 1, 1 << 20, "MAD reply rate"); return this; }
    /** Seed of the comm IDs, transaction IDs, ports and PSNs the agent draws. */
    public CmConfig seed(long v) { seed = v; return this; }

    private static int range(int v, int min, int max, String what) {
        if (v < min || v > max) throw new IllegalArgumentException(what + " must be " + min + ".." + max + ", not " + v);
        return v;
    }
}
