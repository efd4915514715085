package io.jroce.cli.conform;

import io.jroce.cli.conn.JroceHandshake;
import io.jroce.cli.conn.PeerInfo;
import io.jroce.cli.conn.RemoteRegion;
import io.jroce.endpoint.Gid;
import io.jroce.wire.Aeth;
import io.jroce.wire.Opcode;
import io.jroce.wire.RoceV2;

import java.io.IOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.SocketException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A deliberately broken RoCE peer: it offers a QP through the jroce handshake, then answers every RC request
 * packet with an ACK at the packet's own PSN, whatever its PSN, ICRC, TVer or R_Key. It never checks anything,
 * so a conformance run must find it departing wherever the spec asks for a NAK or for silence.
 */
final class AckEverythingPeer implements AutoCloseable {
    static final int QPN = 0x000321;
    final int tcpPort;
    final AtomicInteger acked = new AtomicInteger();
    private final DatagramSocket udp;
    private final Thread handshake;
    private final Thread responder;
    private volatile int testerQpn = -1;
    private final int answers;

    AckEverythingPeer(InetAddress address) throws IOException {
        this(address, Integer.MAX_VALUE, null);
    }

    /** A peer that falls silent for good after {@code answers} ACKs and announces {@code gid} (null: its address). */
    AckEverythingPeer(InetAddress address, int answers, Gid gid) throws IOException {
        this.answers = answers;
        udp = new DatagramSocket(new InetSocketAddress(address, RoceV2.UDP_PORT));
        try (ServerSocket s = new ServerSocket(0, 1, address)) {
            tcpPort = s.getLocalPort();
        }
        PeerInfo local = new PeerInfo(0, QPN, 0x10, gid != null ? gid : Gid.of(address), 1024, 16, List.of(new RemoteRegion("buf", 0x10000, 0x77, 4096)));
        handshake = new Thread(() -> {
            try {
                testerQpn = JroceHandshake.serve(address, tcpPort, local, Duration.ofSeconds(30)).qpn();
            } catch (IOException e) {
                System.err.println("ack-everything peer: " + e.getMessage());
            }
        }, "ack-everything-handshake");
        handshake.setDaemon(true);
        handshake.start();
        responder = new Thread(this::respond, "ack-everything-udp");
        responder.setDaemon(true);
        responder.start();
    }

    private void respond() {
        byte[] buf = new byte[9000];
        DatagramPacket dp = new DatagramPacket(buf, buf.length);
        while (!udp.isClosed()) {
            try {
                udp.receive(dp);
            } catch (SocketException e) {
                return; // closed
            } catch (IOException e) {
                continue;
            }
            if (dp.getLength() < 12 || testerQpn < 0 || acked.get() >= answers) continue;
            Opcode op = Opcode.of(buf[0] & 0xFF);
            if (op == null || !op.isRc() || !op.isRequest()) continue; // reserved, UD or a response: not a request it knows
            int psn = (buf[9] & 0xFF) << 16 | (buf[10] & 0xFF) << 8 | (buf[11] & 0xFF);
            InetSocketAddress from = (InetSocketAddress) dp.getSocketAddress();
            InetSocketAddress to = new InetSocketAddress(from.getAddress(), RoceV2.UDP_PORT);
            byte[] ack = Packet.of(Opcode.RC_ACKNOWLEDGE).qp(testerQpn).psn(psn).aeth(Aeth.ACK_UNLIMITED, 0)
                    .build((InetSocketAddress) udp.getLocalSocketAddress(), to);
            try {
                udp.send(new DatagramPacket(ack, ack.length, to));
                acked.incrementAndGet();
            } catch (IOException e) {
                return;
            }
        }
    }

    @Override
    public void close() {
        udp.close();
        try {
            responder.join(); // a receive in progress holds the socket's port until it returns
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
