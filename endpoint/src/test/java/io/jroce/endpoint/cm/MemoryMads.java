package io.jroce.endpoint.cm;

import java.net.InetAddress;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiPredicate;

/** An in-memory QP-1 network: MadPorts by address, each MAD copied to the port of its destination. */
final class MemoryMads {
    private final Map<InetAddress, MadPort.Receiver> ports = new ConcurrentHashMap<>();
    /** Drops a MAD (to, mad) when it answers true; tests set it to lose chosen messages. */
    volatile BiPredicate<InetAddress, byte[]> drop = (to, mad) -> false;
    final AtomicLong sent = new AtomicLong();

    MadPort port(InetAddress address) {
        return new MadPort() {
            @Override
            public InetAddress localAddress() {
                return address;
            }

            @Override
            public void start(Receiver receiver) {
                ports.put(address, receiver);
            }

            @Override
            public void send(InetAddress peer, byte[] mad) {
                sent.incrementAndGet();
                if (drop.test(peer, mad)) return;
                MadPort.Receiver r = ports.get(peer);
                if (r != null) r.receive(address, 1, mad.clone(), mad.length);
            }

            @Override
            public void close() {
                ports.remove(address);
            }
        };
    }

    /** Delivers raw bytes to the port at {@code to} as if {@code from} had sent them. */
    void inject(InetAddress from, InetAddress to, byte[] mad, int length) {
        MadPort.Receiver r = ports.get(to);
        if (r != null) r.receive(from, 1, mad, length);
    }

    static int attributeId(byte[] mad) {
        return (mad[16] & 0xFF) << 8 | (mad[17] & 0xFF);
    }
}
