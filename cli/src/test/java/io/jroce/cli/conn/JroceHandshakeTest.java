package io.jroce.cli.conn;

import io.jroce.endpoint.Gid;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class JroceHandshakeTest {
    private static final Duration T = Duration.ofSeconds(10);

    private static Gid gid(String ipv4) throws Exception {
        return Gid.of(InetAddress.getByName(ipv4));
    }

    private static PeerInfo sample() throws Exception {
        return new PeerInfo(0, 0x11, 0x3a5c01, gid("192.0.2.10"), 4096, 16,
                List.of(new RemoteRegion("buf", 0x7f0012345678L, 0xdeadbeef, 1 << 20)));
    }

    @Test
    void encodesTheDocumentedLayoutByteForByte() throws Exception {
        String body = ""
                + "0002" + "0000"                                   // lid
                + "0004" + "00000011"                               // qpn
                + "0004" + "003a5c01"                               // psn
                + "0010" + "00000000000000000000ffffc000020a"       // gid
                + "0004" + "00001000"                               // mtu 4096
                + "0004" + "00000010"                               // out_reads 16
                + "0002" + "0001"                                   // one region
                + "0003" + "627566"                                 // "buf"
                + "0008" + "00007f0012345678"                       // va
                + "0004" + "deadbeef"                               // rkey
                + "0008" + "0000000000100000";                      // length
        int bodyLen = body.length() / 2;
        String expected = "4a524345" + "0001" + String.format("%08x", bodyLen) + body;
        assertEquals(expected, HexFormat.of().formatHex(JroceHandshake.encode(sample())));
        assertEquals(sample(), JroceHandshake.decode(HexFormat.of().parseHex(expected)));
    }

    @Test
    void bothRolesExchangeTheirInfo() throws Exception {
        int port = 28520;
        PeerInfo server = sample();
        PeerInfo client = new PeerInfo(0, 0x22, 0x000001, gid("127.0.1.2"), 1024, 1, List.of());
        CompletableFuture<PeerInfo> s = CompletableFuture.supplyAsync(() -> {
            try {
                return JroceHandshake.serve(FakePeer.A, port, server, T);
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
        PeerInfo got = JroceHandshake.connect(FakePeer.A, port, client, T);
        assertEquals(server, got);
        assertEquals(client, FakePeer.await(s));
        assertEquals(0xdeadbeef, got.region("buf").orElseThrow().rkey());
    }

    /**
     * Extensions travel as one more region, so the message stays version 1 and an older release still parses it
     * (it sees a region nothing names); what is used is what both sides offer, none with an older peer.
     */
    @Test
    void extensionsTravelAsAPseudoRegionThatOlderPeersParse() throws Exception {
        PeerInfo offering = sample().withExtensions(io.jroce.endpoint.JroceExtensions.ALL);
        byte[] msg = JroceHandshake.encode(offering);
        String hex = HexFormat.of().formatHex(msg);
        assertTrue(hex.startsWith("4a5243450001"), "still version 1: " + hex);
        assertTrue(hex.contains("0002" + "0003" + "627566"), "two regions, the application's first: " + hex);
        assertTrue(hex.contains("0011" + HexFormat.of().formatHex("\0jroce-extensions".getBytes()) + "0008" + "0000000000000003"),
                "the pseudo-region carries the flags in its va: " + hex);
        PeerInfo got = JroceHandshake.decode(msg);
        assertEquals(3, got.extensions());
        assertEquals(sample().regions(), got.published(), "the application's regions are unchanged");
        assertEquals(2, got.regions().size(), "an older release sees one more region");
        // an older release offers nothing: both fall back to plain IBA
        PeerInfo old = JroceHandshake.decode(JroceHandshake.encode(sample()));
        assertEquals(0, old.extensions());
        assertEquals(0, offering.extensions() & old.extensions());
        assertEquals(3, offering.extensions() & got.extensions());
        assertEquals(0, sample().withExtensions(0).extensions());
    }

    /** The receive buffer travels the same way, beside the extensions, and leaves the application's regions alone. */
    @Test
    void theReceiveBufferTravelsAsAPseudoRegionToo() throws Exception {
        PeerInfo telling = sample().withExtensions(io.jroce.endpoint.JroceExtensions.ALL).withReceiveBuffer(131072);
        byte[] msg = JroceHandshake.encode(telling);
        assertTrue(HexFormat.of().formatHex(msg).contains(HexFormat.of().formatHex("\0jroce-receive-buffer".getBytes()) + "0008"
                + "0000000000020000"), "the pseudo-region carries the bytes in its va");
        PeerInfo got = JroceHandshake.decode(msg);
        assertEquals(131072, got.receiveBuffer());
        assertEquals(3, got.extensions());
        assertEquals(sample().regions(), got.published(), "the application's regions are unchanged");
        assertEquals(0, JroceHandshake.decode(JroceHandshake.encode(sample())).receiveBuffer(), "an older release tells nothing");
        assertEquals(List.of(), sample().withReceiveBuffer(131072).withReceiveBuffer(0).regions().stream()
                .filter(r -> r.name().startsWith("\0")).toList(), "0 takes it away");
    }

    private static byte[] header(int version, int bodyLength) {
        return ByteBuffer.allocate(10).putInt(0x4a524345).putShort((short) version).putInt(bodyLength).array();
    }

    @Test
    void aServerNamesBothVersionsAndStillAnswers() throws Exception {
        int port = 28521;
        CompletableFuture<Void> f = FakePeer.client(FakePeer.A, port, (in, out) -> {
            out.write(header(2, 0));
            out.flush();
            byte[] h = FakePeer.read(in, 10);
            assertEquals(1, ByteBuffer.wrap(h, 4, 2).getShort(), "the server tells its version too");
        });
        IOException e = assertThrows(IOException.class, () -> JroceHandshake.serve(FakePeer.A, port, sample(), T));
        FakePeer.await(f);
        assertTrue(e.getMessage().contains("version 2") && e.getMessage().contains("version 1"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"));
    }

    @Test
    void aClientNamesBothVersions() throws Exception {
        try (FakePeer.Server fake = new FakePeer.Server(FakePeer.A)) {
            CompletableFuture<Void> f = fake.run((in, out) -> {
                FakePeer.read(in, 10);
                out.write(header(7, 0));
                out.flush();
            });
            IOException e = assertThrows(IOException.class, () -> JroceHandshake.connect(FakePeer.A, fake.port(), sample(), T));
            FakePeer.await(f);
            assertTrue(e.getMessage().contains("speaks jroce handshake version 7, we speak version 1"), e.getMessage());
        }
    }

    @Test
    void anotherProtocolIsNamed() throws Exception {
        try (FakePeer.Server fake = new FakePeer.Server(FakePeer.A)) {
            CompletableFuture<Void> f = fake.run((in, out) -> {
                FakePeer.read(in, 10);
                out.write("0000:000011:3a5c01:00000000000000000000ffffc000020a\0".getBytes());
                out.flush();
            });
            IOException e = assertThrows(IOException.class, () -> JroceHandshake.connect(FakePeer.A, fake.port(), sample(), T));
            FakePeer.await(f);
            assertTrue(e.getMessage().contains("does not speak the jroce handshake") && e.getMessage().contains("jroce pingpong"), e.getMessage());
        }
    }

    @Test
    void aSilentServerTimesOut() throws Exception {
        try (FakePeer.Server fake = new FakePeer.Server(FakePeer.A)) {
            CompletableFuture<Void> f = fake.run((in, out) -> {
                FakePeer.read(in, JroceHandshake.encode(sample()).length);
                assertTrue(FakePeer.atEof(in)); // silent until we hang up
            });
            long t0 = System.nanoTime();
            IOException e = assertThrows(IOException.class, () -> JroceHandshake.connect(FakePeer.A, fake.port(), sample(), Duration.ofMillis(300)));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms < 5000, "gave up after " + ms + " ms");
            assertTrue(e.getMessage().contains("sent nothing") && e.getMessage().contains("300 ms"), e.getMessage());
            FakePeer.await(f);
        }
    }

    @Test
    void aSilentClientTimesOut() throws Exception {
        int port = 28522;
        CompletableFuture<Void> f = FakePeer.client(FakePeer.A, port, (in, out) -> {
            out.write(header(1, 100)); // promises 100 bytes, sends none
            out.flush();
            assertTrue(FakePeer.atEof(in), "the server hangs up");
        });
        IOException e = assertThrows(IOException.class, () -> JroceHandshake.serve(FakePeer.A, port, sample(), Duration.ofMillis(300)));
        FakePeer.await(f);
        assertTrue(e.getMessage().contains("jroce handshake body"), e.getMessage());
    }

    @Test
    void noClientIsATimeout() {
        IOException e = assertThrows(IOException.class, () -> JroceHandshake.serve(FakePeer.A, 28523, sample(), Duration.ofMillis(200)));
        assertTrue(e.getMessage().contains("no client connected to TCP 127.0.1.1:28523 within 200 ms"), e.getMessage());
    }

    @Test
    void noServerIsATimeout() {
        IOException e = assertThrows(IOException.class, () -> JroceHandshake.connect(FakePeer.A, 28524, sample(), Duration.ofMillis(200)));
        assertTrue(e.getMessage().contains("cannot connect to TCP 127.0.1.1:28524") && e.getMessage().contains("start the server"), e.getMessage());
    }

    @Test
    void corruptBodiesAreRejected() throws Exception {
        byte[] good = JroceHandshake.encode(sample());
        byte[] longer = java.util.Arrays.copyOf(good, good.length + 1);
        ByteBuffer.wrap(longer).putInt(6, good.length + 1 - 10);
        IOException e = assertThrows(IOException.class, () -> JroceHandshake.decode(longer));
        assertTrue(e.getMessage().contains("trailing"), e.getMessage());
        byte[] badField = good.clone();
        badField[11] = 3; // lid field length 3
        assertThrows(IOException.class, () -> JroceHandshake.decode(badField));
        assertArrayEquals(good, JroceHandshake.encode(JroceHandshake.decode(good)));
    }
}
