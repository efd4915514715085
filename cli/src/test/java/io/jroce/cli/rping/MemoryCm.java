package io.jroce.cli.rping;

import io.jroce.cli.conn.CmAgents;
import io.jroce.endpoint.cm.CmAgent;
import io.jroce.endpoint.cm.CmConfig;
import io.jroce.endpoint.cm.MadLoopback;

import java.net.InetAddress;

/**
 * An in-memory QP 1 network for the commands' connection managers (the CM's own transport is tested in endpoint):
 * {@link #install} makes {@link CmAgents} open agents whose MADs are copied between devices by address.
 */
public final class MemoryCm implements AutoCloseable {
    private final MadLoopback mads = new MadLoopback();
    private final CmAgents.Factory previous;

    private MemoryCm() {
        previous = CmAgents.install((dev, config) -> CmAgent.open(dev, mads.port(dev.address()), config));
    }

    public static MemoryCm install() {
        return new MemoryCm();
    }

    /**
     * Waits until an agent at {@code address} is up (a MAD sent before is lost, and its sender resends it only after
     * the CM response timeout, 6 s); false if none came within {@code timeout}.
     */
    public boolean awaitAgent(InetAddress address, java.time.Duration timeout) throws InterruptedException {
        return mads.awaitPort(address, timeout);
    }

    @Override
    public void close() {
        CmAgents.install(previous);
    }
}
