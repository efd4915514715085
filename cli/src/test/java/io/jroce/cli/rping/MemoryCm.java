package io.jroce.cli.rping;

import io.jroce.cli.conn.CmAgents;
import io.jroce.endpoint.cm.CmAgent;
import io.jroce.endpoint.cm.CmConfig;
import io.jroce.endpoint.cm.MadPort;

import java.net.InetAddress;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An in-memory QP 1 network for the commands' connection managers (the CM's own transport is tested in endpoint):
 * {@link #install} makes {@link CmAgents} open agents whose MADs are copied between devices by address.
 */
public final class MemoryCm implements AutoCloseable {
    private final Map<InetAddress, MadPort.Receiver> ports = new ConcurrentHashMap<>();
    private final CmAgents.Factory previous;

    private MemoryCm() {
        previous = CmAgents.install((dev, config) -> CmAgent.open(dev, port(dev.address()), config));
    }

    public static MemoryCm install() {
        return new MemoryCm();
    }

    private MadPort port(InetAddress address) {
        return new MadPort() {
            @Override
            public InetAddress localAddress() {
                return address;
            }

            @Override
            public void start(Receiver receiver) {
                synchronized (ports) {
                    ports.put(address, receiver);
                    ports.notifyAll();
                }
            }

            @Override
            public void send(InetAddress peer, byte[] mad) {
                MadPort.Receiver r = ports.get(peer);
                if (r != null) r.receive(address, 1, mad.clone(), mad.length);
            }

            @Override
            public void close() {
                ports.remove(address);
            }
        };
    }

    /**
     * Waits until an agent at {@code address} is up (a MAD sent before is lost, and its sender resends it only after
     * the CM response timeout, 6 s); false if none came within {@code timeout}.
     */
    public boolean awaitAgent(InetAddress address, java.time.Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (ports) {
            while (!ports.containsKey(address)) {
                long left = deadline - System.nanoTime();
                if (left <= 0) return false;
                java.util.concurrent.TimeUnit.NANOSECONDS.timedWait(ports, left);
            }
        }
        return true;
    }

    @Override
    public void close() {
        CmAgents.install(previous);
    }
}
