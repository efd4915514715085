package io.jroce.cli.conn;

import io.jroce.endpoint.Gid;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RcPingpongHandshakeTest {
    private static final Duration T = Duration.ofSeconds(10);

    /** Bytes of an ASCII string plus one NUL, written by hand (not by the class under test). */
    private static byte[] cstr(String s) {
        byte[] a = s.getBytes(StandardCharsets.US_ASCII);
        return Arrays.copyOf(a, a.length + 1);
    }

    private static Gid gid(String ipv4) throws Exception {
        return Gid.of(InetAddress.getByName(ipv4));
    }

    @Test
    void encodesTheDocumentedExampleByteForByte() throws Exception {
        byte[] expected = cstr("0000:000011:3a5c01:00000000000000000000ffffc000020a");
        assertEquals(52, expected.length);
        assertArrayEquals(expected, RcPingpongHandshake.encode(new PeerInfo(0x11, 0x3a5c01, gid("192.0.2.10"))));
    }

    @Test
    void encodesTheAddressesOfTheRxeCapture() throws Exception {
        // testdata/rxe/rc_pingpong.server.log: QPN 0x000023, PSN 0x54604c, GID ::ffff:10.77.0.11
        assertArrayEquals(cstr("0000:000023:54604c:00000000000000000000ffff0a4d000b"),
                RcPingpongHandshake.encode(new PeerInfo(0x23, 0x54604c, gid("10.77.0.11"))));
        // a non-zero LID and a full-width QPN and PSN
        assertArrayEquals(cstr("beef:fedcba:ffffff:fe800000000000000000000000000001"),
                RcPingpongHandshake.encode(new PeerInfo(0xbeef, 0xfedcba, 0xffffff, Gid.parseHex("fe800000000000000000000000000001"), 0, 0, java.util.List.of())));
    }

    @Test
    void decodesLikeSscanf() throws Exception {
        PeerInfo p = RcPingpongHandshake.decode(cstr("0000:000021:644f46:00000000000000000000ffff0a4d000c"));
        assertEquals(0, p.lid());
        assertEquals(0x21, p.qpn());
        assertEquals(0x644f46, p.psn());
        assertEquals(gid("10.77.0.12"), p.gid());
        // %x takes upper case and fewer digits too
        PeerInfo q = RcPingpongHandshake.decode(Arrays.copyOf(cstr("0:21:ABC:00000000000000000000FFFF0A4D000C"), 52));
        assertEquals(0x21, q.qpn());
        assertEquals(0xabc, q.psn());
        assertEquals(gid("10.77.0.12"), q.gid());
    }

    @Test
    void rejectsMalformedMessagesWithOneLine() {
        IOException e = assertThrows(IOException.class, () -> RcPingpongHandshake.decode(cstr("0000:0001:000011:3a5c01:00000000:000000000000")));
        assertTrue(e.getMessage().contains("malformed ibv_rc_pingpong address"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"));
        byte[] noNul = new byte[52];
        Arrays.fill(noNul, (byte) 'a');
        assertThrows(IOException.class, () -> RcPingpongHandshake.decode(noNul));
    }

    @Test
    void clientFollowsTheRcPingpongSequence() throws Exception {
        PeerInfo me = new PeerInfo(0x11, 0x3a5c01, gid("127.0.1.2"));
        byte[] serverMsg = cstr("0000:000042:123456:00000000000000000000ffff7f000101");
        try (FakePeer.Server fake = new FakePeer.Server(FakePeer.A)) {
            CompletableFuture<Void> f = fake.run((in, out) -> {
                // pp_server_exch_dest: read 52, (connect), write 52, read "done"
                assertArrayEquals(cstr("0000:000011:3a5c01:00000000000000000000ffff7f000102"), FakePeer.read(in, 52));
                out.write(serverMsg);
                out.flush();
                assertArrayEquals(new byte[] {'d', 'o', 'n', 'e', 0}, FakePeer.read(in, 5));
                assertTrue(FakePeer.atEof(in), "the client closes after done");
            });
            PeerInfo remote = RcPingpongHandshake.client(FakePeer.A, fake.port(), null, me, T);
            FakePeer.await(f);
            assertEquals(0x42, remote.qpn());
            assertEquals(0x123456, remote.psn());
            assertEquals(gid("127.0.1.1"), remote.gid());
        }
    }

    @Test
    void serverConnectsItsQpBeforeReplying() throws Exception {
        int port = 28530;
        PeerInfo me = new PeerInfo(0x99, 0x000abc, gid("127.0.1.1"));
        AtomicBoolean connected = new AtomicBoolean();
        CompletableFuture<Void> f = FakePeer.client(FakePeer.A, port, (in, out) -> {
            out.write(cstr("0000:000021:644f46:00000000000000000000ffff7f000102"));
            out.flush();
            byte[] reply = FakePeer.read(in, 52);
            assertTrue(connected.get(), "the server moved its QP to RTR/RTS before answering");
            assertArrayEquals(cstr("0000:000099:000abc:00000000000000000000ffff7f000101"), reply);
            out.write(new byte[] {'d', 'o', 'n', 'e', 0});
            out.flush();
        });
        PeerInfo remote = RcPingpongHandshake.server(FakePeer.A, port, me, T, r -> {
            assertEquals(0x21, r.qpn());
            connected.set(true);
        });
        FakePeer.await(f);
        assertEquals(0x644f46, remote.psn());
        assertEquals(gid("127.0.1.2"), remote.gid());
    }

    @Test
    void serverRefusesAnythingButDone() throws Exception {
        int port = 28531;
        CompletableFuture<Void> f = FakePeer.client(FakePeer.A, port, (in, out) -> {
            out.write(cstr("0000:000021:644f46:00000000000000000000ffff7f000102"));
            out.flush();
            FakePeer.read(in, 52);
            out.write(new byte[] {'n', 'o', 'p', 'e', 0});
            out.flush();
        });
        IOException e = assertThrows(IOException.class, () -> RcPingpongHandshake.server(FakePeer.A, port,
                new PeerInfo(1, 1, gid("127.0.1.1")), T, r -> { }));
        FakePeer.await(f);
        assertTrue(e.getMessage().contains("instead of \"done\""), e.getMessage());
    }

    @Test
    void aSilentServerIsATimeoutNotAHang() throws Exception {
        try (FakePeer.Server fake = new FakePeer.Server(FakePeer.A)) {
            CompletableFuture<Void> f = fake.run((in, out) -> {
                FakePeer.read(in, 52); // reads, never answers, waits for us to hang up
                assertTrue(FakePeer.atEof(in));
            });
            IOException e = assertThrows(IOException.class, () -> RcPingpongHandshake.client(FakePeer.A, fake.port(), null,
                    new PeerInfo(1, 1, gid("127.0.1.2")), Duration.ofMillis(300)));
            assertTrue(e.getMessage().contains("within 300 ms"), e.getMessage());
            FakePeer.await(f);
        }
    }

    @Test
    void aZeroGidIsExplained() {
        Gid mine = Gid.of(java.net.InetAddress.getLoopbackAddress());
        IOException e = assertThrows(IOException.class, () -> RcPingpongHandshake.requireRoutable(
                new PeerInfo(0x21, 1, Gid.of(new byte[16])), mine));
        assertTrue(e.getMessage().contains("-g"), e.getMessage());
    }

    @Test
    void aGidOfTheOtherIpVersionIsRefused() throws Exception {
        Gid v4 = Gid.of(java.net.InetAddress.getByName("192.0.2.1"));
        Gid v6 = Gid.of(java.net.InetAddress.getByName("fd00::2"));
        IOException e = assertThrows(IOException.class, () -> RcPingpongHandshake.requireRoutable(new PeerInfo(0x21, 1, v6), v4));
        assertTrue(e.getMessage().contains("fd00::2 is IPv6 but ours, ::ffff:192.0.2.1, is IPv4")
                && e.getMessage().contains("-g <index of its IPv4 (::ffff:a.b.c.d) RoCEv2 GID>"), e.getMessage());
        e = assertThrows(IOException.class, () -> RcPingpongHandshake.requireRoutable(new PeerInfo(0x21, 1, v4), v6));
        assertTrue(e.getMessage().contains("-g <index of its IPv6 RoCEv2 GID>"), e.getMessage());
        RcPingpongHandshake.requireRoutable(new PeerInfo(0x21, 1, v6), Gid.of(java.net.InetAddress.getByName("fd00::1")));
        RcPingpongHandshake.requireRoutable(new PeerInfo(0x21, 1, v4), Gid.of(java.net.InetAddress.getByName("192.0.2.2")));
    }
}
