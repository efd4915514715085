package io.jroce.cli.inspect;

import io.jroce.cli.Cli;
import io.jroce.testkit.Json;
import io.jroce.wire.BthView;
import io.jroce.wire.Icrc;
import io.jroce.wire.Opcode;
import io.jroce.wire.RoceV2;
import io.jroce.wire.pcap.PcapWriter;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A crafted capture of UDP GSO super-datagrams as a veth or bridge shows them before segmentation: several
 * RoCE packets of one size back to back in one UDP datagram, packet k's ICRC computed for IPv4 ID base + k.
 * {@code jroce inspect} must show each contained packet, labelled, with its own ICRC verdict.
 */
class InspectGsoTest {
    private static final int SRC = 0xC0000214; // 192.0.2.20
    private static final int DST = 0xC0000215; // 192.0.2.21
    private static final int SEG_PAYLOAD = 256;
    private static final int SEG = BthView.LENGTH + SEG_PAYLOAD + RoceV2.ICRC_LENGTH; // 272

    @TempDir
    Path dir;

    /** Three 256-byte WRITE_MIDDLEs and a 128-byte WRITE_LAST to QP 0x33, PSN 10.., ICRCs for IDs base..base+3. */
    private static ByteBuf superDatagram(int base, boolean ipv6, byte[] src16, byte[] dst16, int corruptSegment) {
        ByteBuf all = Unpooled.buffer();
        Icrc icrc = new Icrc();
        for (int k = 0; k < 4; k++) {
            boolean last = k == 3;
            int payload = last ? 128 : SEG_PAYLOAD;
            int len = BthView.LENGTH + payload + RoceV2.ICRC_LENGTH;
            ByteBuf p = Unpooled.buffer(len);
            new BthView().wrap(p, 0).write((last ? Opcode.RC_RDMA_WRITE_LAST : Opcode.RC_RDMA_WRITE_MIDDLE).code(), false, false, 0,
                    RoceV2.DEFAULT_PKEY, 0x33, last, 10 + k);
            p.writerIndex(BthView.LENGTH);
            for (int i = 0; i < payload; i++) p.writeByte(k * 31 + i);
            p.writeZero(RoceV2.ICRC_LENGTH);
            if (ipv6) icrc.writeIpv6(src16, dst16, 50000, 4791, p, 0, len);
            else icrc.writeIpv4(SRC, DST, base + k, Icrc.IPV4_DF, 50000, 4791, p, 0, len);
            if (k == corruptSegment) p.setByte(BthView.LENGTH + 5, p.getByte(BthView.LENGTH + 5) ^ 0x10);
            all.writeBytes(p);
        }
        return all;
    }

    @Test
    void eachPacketOfASuperDatagramIsDecodedAndCheckedForItsSegmentsId() throws Exception {
        Path cap = dir.resolve("gso.pcap");
        try (PcapWriter w = new PcapWriter(cap)) {
            ByteBuf d = superDatagram(7, false, null, null, -1);
            w.writeUdpIpv4(1_000, SRC, 50000, DST, 4791, 7, Icrc.IPV4_DF, d, 0, d.readableBytes());
        }
        Cli.Result r = Cli.run("inspect", cap.toString());
        assertEquals(0, r.exit(), r.out() + r.err());
        List<String> lines = r.outLines();
        for (int k = 0; k < 4; k++) {
            String line = lines.get(k);
            assertTrue(line.startsWith("    1  "), "every packet is of frame 1: " + line);
            assertTrue(line.contains((k == 3 ? " RC_RDMA_WRITE_LAST " : " RC_RDMA_WRITE_MIDDLE ")), line);
            assertTrue(line.contains(" gso=" + k + "/4 ip_id=" + (7 + k) + " dqpn=0x000033 psn=0x" + String.format("%06x", 10 + k)), line);
            assertTrue(line.contains(" payload_len=" + (k == 3 ? 128 : 256) + " icrc=ok"), line);
        }
        assertEquals("4 RoCEv2 packets (UDP port 4791) in 1 frame: 0 malformed, 0 bad ICRC", lines.get(4));
        assertEquals("1 UDP GSO super-datagram (captured before segmentation) held 4 of these packets", lines.get(5));

        Cli.Result j = Cli.run("inspect", "--json", cap.toString());
        assertEquals(0, j.exit());
        Map<String, Object> third = Json.object(j.outLines().get(2));
        assertEquals(Map.of("segment", 2L, "segments", 4L, "ip_id", 9L), normalise(third.get("gso")));
        assertEquals("ok", third.get("icrc"));
        @SuppressWarnings("unchecked")
        Map<String, Object> summary = (Map<String, Object>) Json.object(j.outLines().get(4)).get("summary");
        assertEquals(1L, ((Number) summary.get("gso_datagrams")).longValue());
        assertEquals(4L, ((Number) summary.get("gso_packets")).longValue());
    }

    @Test
    void aCorruptSegmentFailsAloneAndAnOrdinaryBadPacketIsNotSplit() throws Exception {
        Path cap = dir.resolve("gso-bad.pcap");
        try (PcapWriter w = new PcapWriter(cap)) {
            ByteBuf d = superDatagram(0, false, null, null, 2);
            w.writeUdpIpv4(1_000, SRC, 50000, DST, 4791, 0, Icrc.IPV4_DF, d, 0, d.readableBytes());
            // the same datagram captured with another ID: the first packet's ICRC no longer fits, so no split
            ByteBuf e = superDatagram(0, false, null, null, -1);
            w.writeUdpIpv4(2_000, SRC, 50000, DST, 4791, 100, Icrc.IPV4_DF, e, 0, e.readableBytes());
        }
        Cli.Result r = Cli.run("inspect", cap.toString());
        assertEquals(1, r.exit(), r.out());
        List<String> lines = r.outLines();
        assertTrue(lines.get(0).endsWith("icrc=ok") && lines.get(1).endsWith("icrc=ok"), r.out());
        assertTrue(lines.get(2).contains("gso=2/4") && lines.get(2).endsWith("icrc=bad"), "the corrupt segment: " + lines.get(2));
        assertTrue(lines.get(3).endsWith("icrc=ok"), lines.get(3));
        assertTrue(lines.get(4).startsWith("    2  ") && !lines.get(4).contains("gso=") && lines.get(4).endsWith("icrc=bad"),
                "an unexplained datagram is one bad packet, not a super-datagram: " + lines.get(4));
        assertEquals("5 RoCEv2 packets (UDP port 4791) in 2 frames: 0 malformed, 2 bad ICRC", lines.get(5));
    }

    @Test
    void anIpv6SuperDatagramIsCheckedExactly() throws Exception {
        byte[] src = InetAddress.getByName("fd00:77::20").getAddress();
        byte[] dst = InetAddress.getByName("fd00:77::21").getAddress();
        Path cap = dir.resolve("gso6.pcap");
        try (PcapWriter w = new PcapWriter(cap)) {
            ByteBuf d = superDatagram(0, true, src, dst, -1);
            w.writeUdpIpv6(1_000, src, 50000, dst, 4791, d, 0, d.readableBytes());
        }
        Cli.Result r = Cli.run("inspect", cap.toString());
        assertEquals(0, r.exit(), r.out());
        assertTrue(r.outLines().get(1).contains(" gso=1/4 dqpn="), "no IPv4 ID for IPv6: " + r.outLines().get(1));
        assertFalse(r.out().contains("ip_id"), r.out());
        assertTrue(r.out().contains("4 RoCEv2 packets (UDP port 4791) in 1 frame: 0 malformed, 0 bad ICRC"), r.out());
    }

    private static Map<String, Long> normalise(Object gso) {
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) gso;
        Map<String, Long> out = new java.util.HashMap<>();
        m.forEach((k, v) -> out.put(k, ((Number) v).longValue()));
        return out;
    }
}
