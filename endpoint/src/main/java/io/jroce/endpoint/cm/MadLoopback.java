package io.jroce.endpoint.cm;

import java.net.InetAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiPredicate;

/**
 * QP 1 inside one JVM: {@link MadPort}s by address, each MAD copied to the port of its destination, nothing on a
 * socket. For tests and simulations of the connection manager ({@code CmAgent.open(device, loopback.port(address),
 * config)}): messages can be dropped by rule, injected as if from any address, and counted.
 */
public final class MadLoopback {
    private final Map<InetAddress, MadPort.Receiver> ports = new ConcurrentHashMap<>();
    private final Map<Integer, byte[]> lastSent = new ConcurrentHashMap<>();
    private final AtomicLong sent = new AtomicLong();
    private volatile byte[] last;
    private volatile BiPredicate<InetAddress, byte[]> drop = (to, mad) -> false;

    /** A port at {@code address}; it receives from the moment its agent starts it until it is closed. */
    public MadPort port(InetAddress address) {
        return new MadPort() {
            private volatile Receiver mine;

            @Override
            public InetAddress localAddress() {
                return address;
            }

            @Override
            public void start(Receiver receiver) {
                synchronized (ports) {
                    mine = receiver;
                    ports.put(address, receiver);
                    ports.notifyAll();
                }
            }

            @Override
            public void send(InetAddress peer, byte[] mad) {
                sent.incrementAndGet();
                lastSent.put(attributeId(mad), mad.clone());
                last = mad.clone();
                if (drop.test(peer, mad)) return;
                MadPort.Receiver r = ports.get(peer);
                if (r != null) r.receive(address, 1, mad.clone(), mad.length);
            }

            @Override
            public void close() {
                Receiver r = mine;
                if (r != null) ports.remove(address, r); // not a later agent's port at the same address
            }
        };
    }

    /** Drops a MAD (destination, bytes) when {@code rule} answers true; to lose chosen messages. */
    public void drop(BiPredicate<InetAddress, byte[]> rule) {
        drop = rule;
    }

    /** Delivers raw bytes to the port at {@code to} as if {@code from} had sent them. */
    public void inject(InetAddress from, InetAddress to, byte[] mad, int length) {
        MadPort.Receiver r = ports.get(to);
        if (r != null) r.receive(from, 1, mad, length);
    }

    /** How many MADs the ports sent, dropped ones included. */
    public long sent() {
        return sent.get();
    }

    /** A copy of the last MAD sent with this attribute ID (e.g. {@code CmAttribute.REQ.id()}), or null. */
    public byte[] lastSent(int attributeId) {
        byte[] m = lastSent.get(attributeId);
        return m == null ? null : m.clone();
    }

    /** A copy of the last MAD any port sent, or null. */
    public byte[] lastSent() {
        byte[] m = last;
        return m == null ? null : m.clone();
    }

    /**
     * Waits until a port at {@code address} is started (a MAD sent to it before is lost, and its sender resends it
     * only after the CM response timeout); false if none was within {@code timeout}.
     */
    public boolean awaitPort(InetAddress address, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (ports) {
            while (!ports.containsKey(address)) {
                long left = deadline - System.nanoTime();
                if (left <= 0) return false;
                TimeUnit.NANOSECONDS.timedWait(ports, left);
            }
        }
        return true;
    }

    /** The attribute ID of a MAD (its bytes 16-17): which CM message it is. */
    public static int attributeId(byte[] mad) {
        return (mad[16] & 0xFF) << 8 | (mad[17] & 0xFF);
    }
}
