package io.jroce.endpoint;

import io.jroce.wire.Icrc;
import io.jroce.wire.Opcode;
import io.jroce.wire.RoceV2;
import io.jroce.wire.pcap.PcapFrame;
import io.jroce.wire.pcap.PcapReader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.*;

/**
 * RoCEv2 over IPv6: two devices on ::1 (ephemeral UDP ports, so they can share the address) exchange every
 * RC operation with the ICRC over the IPv6 pseudo-header checked exactly; IPv4 and IPv6 devices in one JVM.
 */
class Ipv6Test {
    private static final InetAddress LOOPBACK6 = Pair.addr("::1");

    private static DeviceConfig v6(Path pcap) {
        DeviceConfig c = new DeviceConfig(LOOPBACK6).port(0);
        return pcap == null ? c : c.pcap(pcap);
    }

    @Test
    void sendWriteReadAndAtomicsOverIpv6Loopback(@TempDir Path dir) throws Exception {
        Path pcapA = dir.resolve("a.pcap");
        try (Pair p = new Pair(v6(pcapA), v6(null))) {
            assertTrue(p.a.isEpoll(), "epoll transport expected on Linux");
            assertNotEquals(p.a.port(), p.b.port());
            assertEquals("::1", p.a.gid(0).toString());
            assertFalse(p.a.gid(0).isIpv4Mapped());
            assertArrayEquals(LOOPBACK6.getAddress(), p.a.gid(0).raw(), "an IPv6 device's GID is its address");
            Pair.exchangeEveryOperation(p, 20_000);
            assertEquals(0, p.a.counters().drops(DropReason.ICRC));
            assertEquals(0, p.b.counters().drops(DropReason.ICRC));
            assertEquals(0, p.a.counters().drops(DropReason.WRONG_SOURCE));
            assertEquals(0, p.b.counters().drops(DropReason.WRONG_SOURCE));
        }
        // every recorded frame is Ethernet/IPv6 (0x86DD) with an ICRC that checks exactly over its IPv6 header
        List<PcapFrame> frames = PcapReader.readAll(pcapA);
        assertTrue(frames.size() > 10, "frames recorded: " + frames.size());
        Icrc icrc = new Icrc();
        for (PcapFrame f : frames) {
            byte[] d = f.data();
            assertEquals(0x86DD, (d[12] & 0xFF) << 8 | (d[13] & 0xFF), "ethertype of " + f);
            assertEquals(6, f.ipVersion(), f.toString());
            assertInstanceOf(Inet6Address.class, f.srcAddress());
            assertTrue(icrc.verifyIpPacket(f.asByteBuf(), f.ipOffset(), f.ipLength()), "ICRC of " + f);
            assertNotEquals(0, udpChecksum(d), "IPv6 requires a UDP checksum: " + f);
        }
    }

    private static int udpChecksum(byte[] frame) {
        int udp = 14 + 40;
        return (frame[udp + 6] & 0xFF) << 8 | (frame[udp + 7] & 0xFF);
    }

    @Test
    void ipv4AndIpv6DevicesInOneProcess() throws Exception {
        try (Pair six = new Pair(v6(null), v6(null));
             Pair four = new Pair(new DeviceConfig(Pair.addr("127.0.0.1")).port(0), new DeviceConfig(Pair.addr("127.0.0.1")).port(0))) {
            Pair.exchangeEveryOperation(six, 20_000);
            Pair.exchangeEveryOperation(four, 20_000);
            assertTrue(four.a.gid(0).isIpv4Mapped());
            assertEquals("::ffff:127.0.0.1", four.a.gid(0).toString());
            // one socket, one family: a QP of the IPv6 device cannot be pointed at the IPv4 one
            QueuePair qp = six.pdA.createQp(new QpInitAttr(six.a.createCq(4)));
            VerbsException e = assertThrows(VerbsException.class, () -> Pair.bringUp(qp, four.b, 1, Mtu.MTU_1024, 0, 0, 1, 1));
            assertTrue(e.getMessage().contains("IPv4") && e.getMessage().contains("IPv6"), e.getMessage());
        }
    }

    @Test
    void icrcIsCheckedExactlyOnReceive() throws Exception {
        try (Device dev = Device.open(v6(null));
             DatagramSocket sock = new DatagramSocket(new InetSocketAddress(LOOPBACK6, 0))) {
            byte[] src = LOOPBACK6.getAddress();
            int sport = sock.getLocalPort();
            // a SEND ONLY to a QP that does not exist: a correct ICRC gets it past the ICRC check to the QP lookup
            ByteBuf good = sendOnly(0x123456);
            new Icrc().writeIpv6(src, src, sport, dev.port(), good, 0, good.writerIndex());
            ByteBuf bad = good.copy();
            bad.setByte(bad.writerIndex() - 1, bad.getByte(bad.writerIndex() - 1) ^ 0x01);
            send(sock, good, dev.port());
            send(sock, bad, dev.port());
            awaitDrops(dev, 2);
            assertEquals(1, dev.counters().drops(DropReason.UNKNOWN_QP), dev.counters().toString());
            assertEquals(1, dev.counters().drops(DropReason.ICRC), dev.counters().toString());
        }
    }

    /**
     * rdma_rxe sends UDP checksum 0 over IPv6 (rxe_net.c prepare_udp_hdr); a plain Linux socket drops such
     * datagrams, ours accepts them (UDP_NO_CHECK6_RX). The sender here zeroes its checksum with UDP_NO_CHECK6_TX.
     */
    @Test
    void aZeroUdpChecksumAsRxeSendsItIsAccepted() throws Exception {
        io.netty.channel.MultiThreadIoEventLoopGroup group = new io.netty.channel.MultiThreadIoEventLoopGroup(1,
                io.netty.channel.epoll.EpollIoHandler.newFactory());
        try (Device dev = Device.open(v6(null))) {
            io.netty.channel.Channel ch = new io.netty.bootstrap.Bootstrap().group(group)
                    .channelFactory(() -> new io.netty.channel.epoll.EpollDatagramChannel(io.netty.channel.socket.SocketProtocolFamily.INET6))
                    .option(new io.netty.channel.unix.IntegerUnixChannelOption("UDP_NO_CHECK6_TX", 17, 101), 1)
                    .handler(new io.netty.channel.ChannelInboundHandlerAdapter())
                    .bind(new InetSocketAddress(LOOPBACK6, 0)).sync().channel();
            try {
                byte[] src = LOOPBACK6.getAddress();
                int sport = ((InetSocketAddress) ch.localAddress()).getPort();
                ByteBuf good = sendOnly(0x123456);
                new Icrc().writeIpv6(src, src, sport, dev.port(), good, 0, good.writerIndex());
                ch.writeAndFlush(new io.netty.channel.socket.DatagramPacket(good, new InetSocketAddress(LOOPBACK6, dev.port()))).sync();
                awaitDrops(dev, 1);
                assertEquals(1, dev.counters().drops(DropReason.UNKNOWN_QP), "past the kernel and the ICRC: " + dev.counters());
            } finally {
                ch.close().sync();
            }
        } finally {
            group.shutdownGracefully(0, 100, TimeUnit.MILLISECONDS).sync();
        }
    }

    private static ByteBuf sendOnly(int destQp) {
        int len = Opcode.RC_SEND_ONLY.headerLength() + 4 + RoceV2.ICRC_LENGTH;
        ByteBuf b = Unpooled.buffer(len, len);
        new io.jroce.wire.BthView().wrap(b, 0).write(Opcode.RC_SEND_ONLY.code(), false, false, 0, RoceV2.DEFAULT_PKEY, destQp, true, 7);
        b.writerIndex(len);
        return b;
    }

    private static void send(DatagramSocket sock, ByteBuf b, int port) throws Exception {
        byte[] bytes = Arrays.copyOf(b.array(), b.writerIndex());
        sock.send(new DatagramPacket(bytes, bytes.length, new InetSocketAddress(LOOPBACK6, port)));
    }

    /** Waits (by asking the event loop, never by sleeping a fixed time) until {@code n} datagrams were dropped. */
    private static void awaitDrops(Device dev, long n) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (totalDrops(dev) < n) {
            if (System.nanoTime() > deadline) fail("expected " + n + " drops: " + dev.counters());
            Pair.barrier(dev);
            Thread.onSpinWait();
        }
    }

    private static long totalDrops(Device dev) {
        DeviceCounters c = dev.counters();
        long t = 0;
        for (DropReason r : DropReason.values()) t += c.drops(r);
        return t;
    }
}
