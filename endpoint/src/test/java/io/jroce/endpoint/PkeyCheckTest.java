package io.jroce.endpoint;

import io.jroce.wire.Aeth;
import io.jroce.wire.AethView;
import io.jroce.wire.BthView;
import io.jroce.wire.Icrc;
import io.jroce.wire.Opcode;
import io.jroce.wire.Problem;
import io.jroce.wire.RethView;
import io.jroce.wire.RocePacket;
import io.jroce.wire.RoceV2;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The P_Key check on receive (IBA 9.6.1.1 and 10.9; rdma_rxe rxe_recv.c check_keys with rxe_verbs.h pkey_match
 * against the device's one P_Key, 0xFFFF): a packet whose BTH P_Key is not 0xFFFF or 0x7FFF is dropped silently
 * and counted as {@link DropReason#PKEY}, requests and responses alike. The peer is a plain UDP socket that
 * crafts packets with a valid ICRC, so nothing but the P_Key is wrong with them.
 */
class PkeyCheckTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();
    private static final int LO = 0x7F000001;
    private static final int PEER_QPN = 0x77;
    private static final int PEER_PSN = 0x1000;
    private static final int OUR_PSN = 0x2000;
    private static final int REGION = 256;

    /** A device with one RC QP connected to a raw socket that plays the peer. */
    private static final class Rig implements AutoCloseable {
        final Device dev;
        final DatagramSocket raw;
        final CompletionQueue cq;
        final QueuePair qp;
        final MemoryRegion target;
        final byte[] image;
        final byte[] out = new byte[512];
        final ByteBuf outBuf = Unpooled.wrappedBuffer(out);

        Rig() throws Exception {
            raw = new DatagramSocket(new InetSocketAddress(LOOPBACK, 0));
            raw.setSoTimeout(10_000);
            dev = Device.open(new DeviceConfig(LOOPBACK).port(0));
            ProtectionDomain pd = dev.allocPd();
            cq = dev.createCq(16);
            qp = pd.createQp(new QpInitAttr(cq).maxSendWr(8).maxRecvWr(8));
            RcConnect.connect(qp, new RcConnect.Peer(LOOPBACK, raw.getLocalPort(), PEER_QPN, PEER_PSN), OUR_PSN,
                    RcConnect.Params.defaults().mtu(Mtu.MTU_1024));
            target = pd.allocateAndRegister(REGION, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            image = Bytes.fillCanary(target, new Random(11));
        }

        /** An RDMA WRITE Only with AckReq of {@code data} to {@code offset} in the target region. */
        void sendWrite(int pkey, int psn, int offset, byte[] data) throws Exception {
            int len = Opcode.RC_RDMA_WRITE_ONLY.headerLength() + data.length + RoceV2.ICRC_LENGTH;
            new BthView().wrap(outBuf, 0).write(Opcode.RC_RDMA_WRITE_ONLY.code(), false, false, 0, pkey, qp.qpNum(), true, psn);
            new RethView().wrap(outBuf, BthView.LENGTH).write(target.address() + offset, target.rkey(), data.length);
            System.arraycopy(data, 0, out, Opcode.RC_RDMA_WRITE_ONLY.headerLength(), data.length);
            send(len);
        }

        /** An Acknowledge with the given AETH syndrome for {@code psn}. */
        void sendAck(int pkey, int psn, int syndrome, int msn) throws Exception {
            int len = Opcode.RC_ACKNOWLEDGE.headerLength() + RoceV2.ICRC_LENGTH;
            new BthView().wrap(outBuf, 0).write(Opcode.RC_ACKNOWLEDGE.code(), false, false, 0, pkey, qp.qpNum(), false, psn);
            new AethView().wrap(outBuf, BthView.LENGTH).write(syndrome, msn);
            send(len);
        }

        private void send(int len) throws Exception {
            new Icrc().writeIpv4(LO, LO, 0, Icrc.IPV4_DF, raw.getLocalPort(), dev.port(), outBuf, 0, len);
            raw.send(new DatagramPacket(out, len, new InetSocketAddress(LOOPBACK, dev.port())));
        }

        /** The next datagram the device sends to the peer, decoded. */
        RocePacket receive() throws Exception {
            byte[] in = new byte[2048];
            DatagramPacket d = new DatagramPacket(in, in.length);
            raw.receive(d);
            RocePacket p = new RocePacket();
            assertEquals(Problem.NONE, p.decode(Unpooled.wrappedBuffer(in, 0, d.getLength()), 0, d.getLength()));
            return p;
        }

        @Override
        public void close() {
            try {
                dev.close();
            } finally {
                raw.close();
            }
        }
    }

    private static byte[] filled(int n, int value) {
        byte[] b = new byte[n];
        Arrays.fill(b, (byte) value);
        return b;
    }

    /**
     * A WRITE with a foreign P_Key, then the same PSN with the default P_Key: only the second is executed and
     * acknowledged (MSN 1, one datagram out in all), the first moved no byte and counts as drop_pkey.
     */
    @ParameterizedTest(name = "P_Key {0}")
    @ValueSource(ints = {0x1234, 0x9234, 0x0000, 0x8000, 0x7FFE, 0xFFFE})
    void writeWithAForeignPkeyIsDroppedSilently(int pkey) throws Exception {
        try (Rig r = new Rig()) {
            r.sendWrite(pkey, PEER_PSN, 0, filled(32, 0xAA));
            r.sendWrite(RoceV2.DEFAULT_PKEY, PEER_PSN, 64, filled(32, 0x55));

            RocePacket ack = r.receive();
            assertEquals(Opcode.RC_ACKNOWLEDGE, ack.opcode());
            assertEquals(PEER_PSN, ack.psn());
            assertEquals(Aeth.Kind.ACK, Aeth.kind(ack.aeth().syndrome()));
            assertEquals(1, ack.aeth().msn(), "one request executed");

            // the ACK was sent after both datagrams were handled (one event loop, in order of arrival)
            DeviceCounters c = r.dev.counters();
            assertEquals(1, c.drops(DropReason.PKEY), c.toString());
            assertEquals(1L, c.asMap().get("drop_pkey"));
            assertEquals(1, c.totalDrops(), c.toString());
            assertEquals(1, c.packetsOut, "the ACK of the good WRITE and nothing else");
            assertEquals(QpState.RTS, r.qp.state());
            byte[] expected = r.image.clone();
            System.arraycopy(filled(32, 0x55), 0, expected, 64, 32);
            assertArrayEquals(expected, Bytes.image(r.target), "only the WRITE with the default P_Key landed");
        }
    }

    /** A limited member of the default partition (0x7FFF) matches the device's full-member 0xFFFF. */
    @Test
    void writeFromALimitedMemberOfTheDefaultPartitionIsAccepted() throws Exception {
        try (Rig r = new Rig()) {
            r.sendWrite(0x7FFF, PEER_PSN, 8, filled(16, 0x3C));
            RocePacket ack = r.receive();
            assertEquals(Opcode.RC_ACKNOWLEDGE, ack.opcode());
            assertEquals(PEER_PSN, ack.psn());
            assertEquals(Aeth.Kind.ACK, Aeth.kind(ack.aeth().syndrome()));
            assertEquals(0, r.dev.counters().drops(DropReason.PKEY));
            byte[] expected = r.image.clone();
            System.arraycopy(filled(16, 0x3C), 0, expected, 8, 16);
            assertArrayEquals(expected, Bytes.image(r.target));
        }
    }

    /**
     * Responses are checked too: a NAK (remote access error) with a foreign P_Key does not fail the WRITE; the ACK
     * with the default P_Key that follows completes it.
     */
    @Test
    void responseWithAForeignPkeyIsDroppedSilently() throws Exception {
        try (Rig r = new Rig()) {
            MemoryRegion local = r.qp.pd().allocateAndRegister(64, Access.LOCAL_WRITE);
            r.qp.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(local, 0, 64)).remote(0x1000, 0x42).signaled());
            RocePacket req = r.receive();
            assertEquals(Opcode.RC_RDMA_WRITE_ONLY, req.opcode());
            assertEquals(OUR_PSN, req.psn());
            assertEquals(RoceV2.DEFAULT_PKEY, req.pkey(), "jroce sends the default P_Key");

            r.sendAck(0x1234, OUR_PSN, Aeth.nak(Aeth.NakCode.REMOTE_ACCESS_ERROR), 0);
            r.sendAck(RoceV2.DEFAULT_PKEY, OUR_PSN, Aeth.ACK_UNLIMITED, 1);
            WorkCompletion wc = Pair.awaitOne(r.cq);
            Wcs.assertOk(wc, 1, WcOpcode.RDMA_WRITE, 64, r.qp);
            assertEquals(QpState.RTS, r.qp.state());
            assertEquals(1, r.dev.counters().drops(DropReason.PKEY));
            assertTrue(r.dev.counters().totalDrops() == 1, r.dev.counters().toString());
        }
    }
}
