package io.jroce.endpoint;

import io.jroce.wire.Icrc;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Gathered send ({@link GatherSend}): a packet's payload leaves from the registered memory as pieces of the
 * datagram, with the ICRC computed over the pieces, and the datagram on the wire is what the copying path sends.
 * A plain UDP socket catches a UD SEND gathered from three SGEs (one short enough to be copied) and checks its bytes
 * and ICRC; SEND, WRITE and READ between two devices go through the gathering sender, and again with every datagram
 * completed by a copy and queued on the channel, as when the socket would block.
 */
class GatherSendTest {
    private static final InetAddress A = Pair.addr("127.0.92.1");
    private static final InetAddress B = Pair.addr("127.0.92.2");

    @Test
    void aGatheredUdSendIsThePacketTheCopyingPathSends() throws Exception {
        byte[][] wire = new byte[2][];
        for (int round = 0; round < 2; round++) {
            boolean zeroCopy = round == 0;
            try (Device d = Device.open(new DeviceConfig(A).port(0).warmUp(false).zeroCopy(zeroCopy));
                 DatagramSocket peer = new DatagramSocket(new InetSocketAddress(B, 0))) {
                peer.setSoTimeout(10_000);
                GatherSend gs = d.transport().port().gather();
                if (zeroCopy) assertNotNull(gs, "gathering with epoll"); else assertNull(gs, "off when turned off");
                ProtectionDomain pd = d.allocPd();
                CompletionQueue cq = d.createCq(4);
                QueuePair qp = UdTest.udQp(pd, cq, 0x1234, 0x100);
                MemoryRegion src = pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
                byte[] data = new byte[4096];
                new Random(92).nextBytes(data);
                src.buffer().put(data);
                AddressHandle ah = pd.createAh(B, peer.getLocalPort());
                // 500 + 100 + 400 bytes: the 100 are below GATHER_MIN and copied, the others gathered
                Sge[] sgl = {Sge.of(src, 10, 500), Sge.of(src, 1000, 100), Sge.of(src, 2000, 400)};
                qp.postSend(new SendWorkRequest(1, WrOpcode.SEND, sgl).ud(ah, 0x77, 0x1234).signaled());
                assertEquals(WcStatus.SUCCESS, Pair.awaitOne(cq).status());
                DatagramPacket got = new DatagramPacket(new byte[2048], 2048);
                peer.receive(got);
                byte[] pkt = Arrays.copyOf(got.getData(), got.getLength());
                assertEquals(12 + 8 + 1000 + 4, pkt.length, "BTH, DETH, payload, ICRC");
                byte[] want = new byte[1000];
                System.arraycopy(data, 10, want, 0, 500);
                System.arraycopy(data, 1000, want, 500, 100);
                System.arraycopy(data, 2000, want, 600, 400);
                assertArrayEquals(want, Arrays.copyOfRange(pkt, 20, 1020), "the payload, in SGE order");
                assertTrue(new Icrc().verifyIpv4(ipv4(A), ipv4(B), 0, Icrc.IPV4_DF, d.port(), peer.getLocalPort(),
                        Unpooled.wrappedBuffer(pkt), 0, pkt.length), "ICRC over the gathered pieces");
                if (zeroCopy) assertEquals(1, d.transport().call(() -> gs.gathered), "sent with its pieces in the region");
                wire[round] = pkt;
            }
        }
        // the same packet both ways but the source QPN in the DETH (and so the ICRC): a QP number is the device's
        byte[] gathered = wire[0].clone();
        byte[] copied = wire[1].clone();
        for (byte[] p : new byte[][] {gathered, copied}) {
            Arrays.fill(p, 17, 20, (byte) 0);
            Arrays.fill(p, p.length - 4, p.length, (byte) 0);
        }
        assertArrayEquals(copied, gathered, "gathered and copied packets");
    }

    @Test
    void sendWriteAndReadGathered() throws Exception {
        try (Pair p = new Pair(new DeviceConfig(A).port(0).warmUp(false), new DeviceConfig(B).port(0).warmUp(false))) {
            GatherSend a = p.a.transport().port().gather();
            GatherSend b = p.b.transport().port().gather();
            Pair.exchangeEveryOperation(p, 100_000);
            assertTrue(p.a.transport().call(() -> a.gathered) > 100_000 / 1024, "SEND and WRITE packets gathered: " + a.gathered);
            assertTrue(p.b.transport().call(() -> b.gathered) > 100_000 / 1024 / 2, "READ responses gathered: " + b.gathered);
            assertEquals(0, a.copied + b.copied, "nothing waited for the socket");
            assertEquals(0, p.a.counters().totalDrops() + p.b.counters().totalDrops(), "drops");
        }
    }

    @Test
    void datagramsTheSocketDoesNotTakeAreCompletedByACopyAndQueued() throws Exception {
        try (Pair p = new Pair(new DeviceConfig(A).port(0).warmUp(false), new DeviceConfig(B).port(0).warmUp(false))) {
            GatherSend a = p.a.transport().port().gather();
            GatherSend b = p.b.transport().port().gather();
            p.a.transport().call(() -> a.viaChannel = true);
            p.b.transport().call(() -> b.viaChannel = true);
            Pair.exchangeEveryOperation(p, 100_000);
            assertTrue(p.a.transport().call(() -> a.copied) > 100_000 / 1024, "SEND and WRITE packets copied: " + a.copied);
            assertTrue(p.b.transport().call(() -> b.copied) > 100_000 / 1024 / 2, "READ responses copied: " + b.copied);
            assertEquals(0, a.gathered + b.gathered, "none sent with pieces");
            assertEquals(0, p.a.counters().totalDrops() + p.b.counters().totalDrops(), "drops");
        }
    }

    @Test
    void gsoRunsTheSocketDoesNotTakeAreQueuedWhole() throws Exception {
        try (Pair p = new Pair(new DeviceConfig(A).port(0).warmUp(false).gso(true), new DeviceConfig(B).port(0).warmUp(false).gso(true))) {
            GatherSend a = p.a.transport().port().gather();
            GatherSend b = p.b.transport().port().gather();
            p.a.transport().call(() -> a.viaChannel = true);
            p.b.transport().call(() -> b.viaChannel = true);
            Pair.exchangeEveryOperation(p, 100_000);
            // each run is one segmented datagram, so its packets keep the IPv4 IDs their ICRCs were stamped for
            assertTrue(p.a.transport().call(() -> a.runsViaChannel) > 0, "WRITE runs queued as segmented datagrams");
            assertTrue(p.b.transport().call(() -> b.runsViaChannel) > 0, "READ response runs queued as segmented datagrams");
            assertEquals(0, a.gathered + b.gathered, "none sent with pieces");
            assertEquals(0, p.a.counters().totalDrops() + p.b.counters().totalDrops(), "drops");
        }
    }

    @Test
    void aCaptureGetsWholePackets() throws Exception {
        java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("gather");
        java.nio.file.Path pcap = dir.resolve("a.pcap");
        try (Pair p = new Pair(new DeviceConfig(A).port(0).warmUp(false).pcap(pcap), new DeviceConfig(B).port(0).warmUp(false))) {
            GatherSend a = p.a.transport().port().gather();
            Pair.exchangeEveryOperation(p, 20_000);
            assertEquals(0, p.a.transport().call(() -> a.gathered), "no pieces while recording");
        }
        Icrc icrc = new Icrc();
        int n = 0;
        for (io.jroce.wire.pcap.PcapFrame f : io.jroce.wire.pcap.PcapReader.readAll(pcap)) {
            assertTrue(icrc.verifyIpPacket(f.asByteBuf(), f.ipOffset(), f.ipLength()), f.toString());
            n++;
        }
        assertTrue(n > 20, n + " packets captured");
    }

    private static int ipv4(InetAddress a) {
        return ByteBuffer.wrap(a.getAddress()).getInt();
    }
}
