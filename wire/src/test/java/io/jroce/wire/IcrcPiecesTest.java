package io.jroce.wire;

import io.jroce.testkit.TestData;
import io.jroce.wire.GoldenVectors.Vector;
import io.jroce.wire.pcap.PcapFrame;
import io.jroce.wire.pcap.PcapReader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The ICRC over a packet given in pieces (a sender that gathers the payload from registered memory) equals the ICRC
 * over the whole packet: for every golden vector (IPv4, testdata/rocev2-golden.json) and every IPv6 capture, cut at
 * random places into heap, direct and NIO pieces. Randomised: the seed is printed ({@code -Djroce.seed=N} replays).
 */
class IcrcPiecesTest {
    private static final int BTH = 12;
    private static final int ICRC = 4;

    @Test
    void piecesGiveTheWholePacketsIcrcForEveryGoldenVector() {
        Random rnd = new Random(Seeds.seed());
        Icrc icrc = new Icrc();
        for (Vector v : GoldenVectors.all()) {
            byte[] p = v.udpPayload;
            for (int round = 0; round < 20; round++) {
                ByteBuf head = Unpooled.wrappedBuffer(p);
                icrc.beginIpv4(v.srcAddr(), v.dstAddr(), v.ipId(), v.ipFlagsFragment(), v.srcPort(), v.dstPort(), p.length, head, 0);
                feed(icrc, p, BTH, p.length - ICRC, rnd);
                assertEquals(v.icrcU32, icrc.value(), v + " round " + round);
            }
        }
    }

    @Test
    void aChangedByteInAnyPieceChangesTheIcrc() {
        Random rnd = new Random(Seeds.seed() + 1);
        Icrc icrc = new Icrc();
        for (Vector v : GoldenVectors.all()) {
            byte[] p = v.udpPayload.clone();
            if (p.length <= BTH + ICRC) continue;
            int at = BTH + rnd.nextInt(p.length - BTH - ICRC);
            p[at] ^= (byte) (1 << rnd.nextInt(8));
            icrc.beginIpv4(v.srcAddr(), v.dstAddr(), v.ipId(), v.ipFlagsFragment(), v.srcPort(), v.dstPort(), p.length,
                    Unpooled.wrappedBuffer(p), 0);
            feed(icrc, p, BTH, p.length - ICRC, rnd);
            assertNotEquals(v.icrcU32, icrc.value(), v + " with byte " + at + " changed");
        }
    }

    @Test
    void ipv6CapturesInPieces() throws Exception {
        Random rnd = new Random(Seeds.seed() + 2);
        Icrc icrc = new Icrc();
        int n = 0;
        for (PcapFrame f : PcapReader.readAll(TestData.file("ipv6/rocev2-ipv6.pcap"))) {
            ByteBuf buf = f.asByteBuf();
            int off = f.udpPayloadOffset();
            int len = f.udpPayloadLength();
            byte[] p = new byte[len];
            buf.getBytes(off, p);
            byte[] src = f.srcAddress().getAddress();
            byte[] dst = f.dstAddress().getAddress();
            for (int round = 0; round < 20; round++) {
                icrc.beginIpv6(src, dst, f.srcPort(), f.dstPort(), len, buf, off);
                feed(icrc, p, BTH, len - ICRC, rnd);
                assertEquals(Icrc.wireValue(buf, off, len), icrc.value(), f + " round " + round);
            }
            n++;
        }
        assertEquals(9, n, "IPv6 captures");
    }

    @Test
    void theBthComesFromWhereTheHeadSays() {
        Vector v = GoldenVectors.get(1);
        byte[] p = v.udpPayload;
        ByteBuf head = Unpooled.buffer(p.length + 7).writeZero(7).writeBytes(p);
        Icrc icrc = new Icrc();
        icrc.beginIpv4(v.srcAddr(), v.dstAddr(), v.ipId(), v.ipFlagsFragment(), v.srcPort(), v.dstPort(), p.length, head, 7);
        icrc.update(head, 7 + BTH, p.length - BTH - ICRC);
        assertEquals(v.icrcU32, icrc.value());
        assertThrows(IllegalArgumentException.class,
                () -> icrc.beginIpv4(1, 2, 0, Icrc.IPV4_DF, 3, 4, 15, head, 0));
        assertThrows(IndexOutOfBoundsException.class,
                () -> icrc.beginIpv4(1, 2, 0, Icrc.IPV4_DF, 3, 4, 16, head, head.capacity() - 11));
        assertThrows(IndexOutOfBoundsException.class, () -> icrc.update(head, head.capacity() - 3, 4));
    }

    /** Feeds p[from, to) in random pieces of random kinds: heap, direct (pooled-like), NIO view, read-only heap. */
    private static void feed(Icrc icrc, byte[] p, int from, int to, Random rnd) {
        int at = from;
        while (at < to) {
            int n = Math.min(to - at, rnd.nextInt(4) == 0 ? 0 : 1 + rnd.nextInt(Math.max(1, (to - from) / 3 + 1)));
            switch (rnd.nextInt(4)) {
                case 0 -> {
                    // a piece at an offset inside a larger heap buffer
                    ByteBuf b = Unpooled.buffer(n + 5).writeZero(5).writeBytes(p, at, n);
                    icrc.update(b, 5, n);
                }
                case 1 -> {
                    ByteBuf b = Unpooled.directBuffer(n + 3).writeZero(3).writeBytes(p, at, n);
                    icrc.update(b, 3, n);
                    b.release();
                }
                case 2 -> {
                    ByteBuffer d = ByteBuffer.allocateDirect(n + 9);
                    d.position(9);
                    d.put(p, at, n);
                    d.position(9);
                    icrc.update(d);
                }
                default -> icrc.update(ByteBuffer.wrap(p, at, n).asReadOnlyBuffer());
            }
            at += n;
        }
    }
}
