package io.jroce.cli.conform;

import io.jroce.cli.conn.JroceHandshake;
import io.jroce.cli.conn.PeerInfo;
import io.jroce.cli.conn.RemoteRegion;
import io.jroce.endpoint.Access;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.DeviceConfig;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.RcConnect;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.Sge;

import java.io.IOException;
import java.net.InetAddress;
import java.io.DataInputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A jroce endpoint in this JVM that offers a fresh RC QP to every client of the jroce handshake, as a node does
 * with {@code listen qp=... publish=buf,ro}: region "buf" (16 KiB, every remote access) and "ro" (remote read
 * only), {@value #RECEIVES} receives posted on each QP, rd_atomic 16, and a connection manager on QP 1.
 */
final class JrocePeer implements AutoCloseable {
    static final int RECEIVES = 8;
    final Device dev;
    final int tcpPort;
    final AtomicInteger served = new AtomicInteger();
    private final ProtectionDomain pd;
    private final MemoryRegion buf;
    private final MemoryRegion ro;
    private final MemoryRegion recv;
    private final Thread server;
    private final ServerSocket listener;
    /** The connection manager on QP 1, as a node runs one once it uses the CM: the cm cases that need no connection ask it. */
    private final io.jroce.endpoint.cm.CmAgent cm;
    private volatile boolean closed;

    JrocePeer(InetAddress address, Mtu mtu) throws IOException {
        this(new DeviceConfig(address), address, 0, mtu);
    }

    /** A peer on a device opened with {@code config} (e.g. with a fault injector), its exchange on TCP {@code port} (0: any). */
    JrocePeer(DeviceConfig config, InetAddress address, int port, Mtu mtu) throws IOException {
        dev = Device.open(config);
        pd = dev.allocPd();
        buf = pd.allocateAndRegister(16384, Access.ALL);
        // not zeros: a perftest server's buffer holds whatever was there, so the cases must not depend on small values
        // (a boxed comparison of two atomic values once did: equal only below 128)
        byte[] noise = new byte[16384];
        new java.util.Random(7).nextBytes(noise);
        buf.buffer().put(noise);
        ro = pd.allocateAndRegister(4096, Access.LOCAL_WRITE | Access.REMOTE_READ);
        recv = pd.allocateAndRegister(RECEIVES * 4096, Access.LOCAL_WRITE);
        cm = io.jroce.endpoint.cm.CmAgent.open(dev, io.jroce.endpoint.cm.CmConfig.defaults().mtu(mtu));
        listener = new ServerSocket(port, 4, address);
        tcpPort = listener.getLocalPort();
        server = new Thread(() -> serve(listener, mtu), "conform-test-peer");
        server.setDaemon(true);
        server.start();
    }

    /** One listening socket for every client, so a reconnect never races the close of the previous listener. */
    private void serve(ServerSocket listener, Mtu mtu) {
        while (!closed) {
            try (Socket s = listener.accept()) {
                s.setSoTimeout(10_000);
                CompletionQueue cq = dev.createCq(64);
                QueuePair qp = pd.createQp(new QpInitAttr(cq).maxSendWr(16).maxRecvWr(RECEIVES));
                RcConnect.Params p = RcConnect.Params.defaults().mtu(mtu).rdAtomic(16);
                RcConnect.toInit(qp, p);
                for (int i = 0; i < RECEIVES; i++) {
                    qp.postRecv(new ReceiveWorkRequest(i, new Sge(recv.address() + 4096L * i, 4096, recv.lkey())));
                }
                int psn = 0x123456;
                PeerInfo local = new PeerInfo(0, qp.qpNum(), psn, dev.gid(0), mtu.bytes(), 16,
                        List.of(new RemoteRegion("buf", buf.address(), buf.rkey(), buf.length()),
                                new RemoteRegion("ro", ro.address(), ro.rkey(), ro.length())));
                DataInputStream in = new DataInputStream(s.getInputStream());
                byte[] header = new byte[JroceHandshake.HEADER_BYTES];
                in.readFully(header);
                byte[] msg = Arrays.copyOf(header, header.length + ByteBuffer.wrap(header, 6, 4).getInt());
                in.readFully(msg, header.length, msg.length - header.length);
                PeerInfo peer = JroceHandshake.decode(msg);
                s.getOutputStream().write(JroceHandshake.encode(local));
                RcConnect.connect(qp, peer.rcPeer(dev.port()), psn, p);
                served.incrementAndGet();
            } catch (IOException e) {
                if (!closed) System.err.println("test peer: " + e.getMessage());
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        server.interrupt();
        try {
            listener.close(); // ends the server thread's accept
        } catch (IOException e) {
            // closing anyway
        }
        cm.close();
        dev.close();
    }
}
