package io.jroce.endpoint;

/**
 * Which thread runs a device's work ({@link DeviceConfig#agentMode}): the socket, the engines of its queue pairs,
 * their timers and acknowledgements.
 */
public enum AgentMode {
    /**
     * A thread of the device's own runs everything; application threads hand it their doorbells and wait for it
     * to fill their completion queues. Right for programs that do not poll: a passive server, a node waiting for
     * connections, callers of the Java API that block elsewhere.
     */
    DEDICATED,
    /**
     * The application's own threads run the device when they poll a completion queue or post a work request, so a
     * round trip crosses no thread boundary in this process (a run-to-completion agent, like rdma_rxe running its
     * tasks inline and Aeron's {@code AgentInvoker}). While no application thread has run it for a millisecond, a
     * standby thread runs it instead, so timers, acknowledgements and the connection manager never stall; it
     * steps aside as soon as an application thread polls again.
     *
     * <p>Netty 4.2 pools its per-packet objects (pooled buffers, outbound entries) only on threads that clean up its
     * fast thread-locals; on another thread it makes them anew, some 150 bytes of garbage per packet. A thread that
     * polls a device in this mode should therefore be an {@code io.netty.util.concurrent.FastThreadLocalThread} or
     * run its polling loop inside {@code FastThreadLocalThread.runWithFastThreadLocal(Runnable)} (the jroce command
     * line does); the standby thread is one.
     */
    INVOKED
}
