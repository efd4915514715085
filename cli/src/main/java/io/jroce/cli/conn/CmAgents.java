package io.jroce.cli.conn;

import io.jroce.endpoint.Device;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.cm.CmAgent;
import io.jroce.endpoint.cm.CmConfig;
import io.jroce.endpoint.cm.CmEventChannel;
import io.jroce.endpoint.cm.CmEventType;
import io.jroce.endpoint.cm.CmId;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * Where the commands that use the connection manager ({@code rping}, {@code perf -R}) get their {@link CmAgent}:
 * over the device's QP 1. Tests install an agent over an in-memory MAD network instead ({@link #install}).
 */
public final class CmAgents {
    /** Makes the agent of a device. */
    @FunctionalInterface
    public interface Factory {
        CmAgent open(Device dev, CmConfig config) throws IOException;
    }

    private static volatile Factory factory = CmAgents::overGsi;

    private CmAgents() {
    }

    /**
     * The connection manager of {@code dev}, whose connections may use up to {@code mtu}: the passive side takes
     * min(REQ MTU, this) and the REP cannot tell the active side, so this must be the device's real path MTU (the
     * interface's), not a default, or an rxe client sending 4096-byte packets gets NAKs.
     */
    public static CmAgent open(Device dev, Mtu mtu) throws IOException {
        return io.jroce.cli.ExitCleanup.register(factory.open(dev, CmConfig.defaults().mtu(mtu)));
    }

    /** Replaces how agents are made (tests); returns the previous factory so it can be put back. */
    public static Factory install(Factory f) {
        Factory old = factory;
        factory = Objects.requireNonNull(f, "factory");
        return old;
    }

    /**
     * The end of a command's connection manager: destroys {@code ids} (newest first), closes the channel, then lets
     * released connections finish their timewait for up to {@code releaseWait} before the agent closes, as the
     * kernel's CM outlives the process that made them (a peer's DREQ repeated in timewait still gets its DREP).
     */
    public static void close(CmAgent agent, CmEventChannel channel, List<CmId> ids, Duration releaseWait) throws InterruptedException {
        for (int i = ids.size() - 1; i >= 0; i--) {
            try {
                ids.get(i).close();
            } catch (RuntimeException ignored) {
                // closing anyway
            }
        }
        channel.close();
        agent.awaitReleased(releaseWait);
        agent.close();
    }

    /** librdmacm's rdma_event_str. */
    public static String eventName(CmEventType t) {
        return "RDMA_CM_EVENT_" + t.name();
    }

    private static CmAgent overGsi(Device dev, CmConfig config) {
        return CmAgent.open(dev, config);
    }
}
