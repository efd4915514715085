package io.jroce.cli.perf;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;

/** Whether a process on this host has bound a UDP socket, read from /proc/net/udp (Linux, IPv4). */
final class UdpSockets {
    private static final Path TABLE = Path.of("/proc/net/udp");

    private UdpSockets() {
    }

    /** Waits until {@code address:port} is bound (polling every 5 ms); false after {@code timeout}. */
    static boolean awaitBound(InetAddress address, int port, Duration timeout) throws IOException, InterruptedException {
        if (!(address instanceof Inet4Address) || !Files.isReadable(TABLE)) return true; // cannot tell: go ahead
        byte[] a = address.getAddress();
        // the kernel prints the address as the little-endian host integer of the network-order bytes
        String key = String.format(Locale.ROOT, "%02X%02X%02X%02X:%04X", a[3], a[2], a[1], a[0], port);
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            for (String line : Files.readAllLines(TABLE)) {
                String[] f = line.trim().split("\\s+");
                if (f.length > 1 && f[1].equals(key)) return true;
            }
            Thread.sleep(5);
        }
        return false;
    }
}
