package io.jroce.cli.conn;

import io.jroce.endpoint.Device;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.cm.CmAgent;
import io.jroce.endpoint.cm.CmConfig;

import java.io.IOException;
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

    private static CmAgent overGsi(Device dev, CmConfig config) {
        return CmAgent.open(dev, config);
    }
}
