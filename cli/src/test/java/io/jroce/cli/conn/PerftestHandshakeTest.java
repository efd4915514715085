package io.jroce.cli.conn;

import io.jroce.cli.conn.PerftestHandshake.BwReport;
import io.jroce.cli.conn.PerftestHandshake.Keys;
import io.jroce.cli.conn.PerftestHandshake.Test;
import io.jroce.endpoint.Gid;
import io.jroce.endpoint.Mtu;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PerftestHandshakeTest {
    private static final Duration T = Duration.ofSeconds(10);
    private static final AtomicInteger PORT = new AtomicInteger(28540);

    private static byte[] cstr(String s) {
        byte[] a = s.getBytes(StandardCharsets.US_ASCII);
        return Arrays.copyOf(a, a.length + 1);
    }

    private static Gid gid(String ipv4) throws Exception {
        return Gid.of(InetAddress.getByName(ipv4));
    }

    @org.junit.jupiter.api.Test
    void keyMessageMatchesTheDocumentedFormat() throws Exception {
        // values of testdata/rxe/write_bw.client.log (local address), out_reads 1, SRQN 0
        Keys k = new Keys(0, 1, 0x23, 0x4e65b0, 0x1784, 0x56340e01a328L, gid("10.77.0.12"), 0);
        byte[] expected = cstr("0000:0001:000023:4e65b0:00001784:000056340e01a328:"
                + "00:00:00:00:00:00:00:00:00:00:ff:ff:0a:4d:00:0c:00000000:");
        assertEquals(108, expected.length);
        assertArrayEquals(expected, PerftestHandshake.encodeKeys(k));
        assertEquals(k, PerftestHandshake.decodeKeys(expected));
        // all-ones fields: 32-bit rkey and 64-bit VA print unsigned
        Keys big = new Keys(0xffff, 0x10, 0xffffff, 0xffffff, 0xffffffff, -1L, Gid.parseHex("fe80000000000000020c29fffe123456"), 0x12345678);
        byte[] e2 = cstr("ffff:0010:ffffff:ffffff:ffffffff:ffffffffffffffff:"
                + "fe:80:00:00:00:00:00:00:02:0c:29:ff:fe:12:34:56:12345678:");
        assertArrayEquals(e2, PerftestHandshake.encodeKeys(big));
        assertEquals(big, PerftestHandshake.decodeKeys(e2));
    }

    @org.junit.jupiter.api.Test
    void malformedKeysAreRejected() {
        byte[] short59 = Arrays.copyOf(cstr("0000:0001:000023:4e65b0:00001784:000056340e01a328:00000000"), 108);
        IOException e = assertThrows(IOException.class, () -> PerftestHandshake.decodeKeys(short59));
        assertTrue(e.getMessage().contains("-x"), e.getMessage());
        assertThrows(IOException.class, () -> PerftestHandshake.decodeKeys(new byte[59]));
    }

    @org.junit.jupiter.api.Test
    void versionAndMtuFormats() {
        byte[] v = new byte[16];
        v[0] = '5';
        v[1] = '.';
        v[2] = '7';
        v[3] = '0';
        assertArrayEquals(v, PerftestHandshake.encodeVersion("5.70"));
        assertArrayEquals(new byte[] {'3', 0}, PerftestHandshake.encodeMtu(Mtu.MTU_1024));
        assertArrayEquals(new byte[] {'5', 0}, PerftestHandshake.encodeMtu(Mtu.MTU_4096));
        assertEquals(6.29, PerftestHandshake.atof("6.29"), 1e-9);
        assertEquals(5.7, PerftestHandshake.atof("5.70abc"), 1e-9);
        assertEquals(0, PerftestHandshake.atof("x"), 1e-9);
    }

    /**
     * A perftest peer written from perftest's sources (independently of the class under test): the exchange
     * sizes in order, each done in the peer's role (client: write then read; server: read then write).
     */
    private static final class FakePerftest {
        final boolean client;
        final DataInputStream in;
        final OutputStream out;
        final List<byte[]> received = new ArrayList<>();

        FakePerftest(boolean client, DataInputStream in, OutputStream out) {
            this.client = client;
            this.in = in;
            this.out = out;
        }

        byte[] xchg(byte[] mine) throws IOException {
            byte[] theirs = new byte[mine.length];
            if (client) {
                out.write(mine);
                out.flush();
                in.readFully(theirs);
            } else {
                in.readFully(theirs);
                out.write(mine);
                out.flush();
            }
            received.add(theirs);
            return theirs;
        }

        byte[] keys(int qpn) {
            String s = String.format("0000:0001:%06x:%06x:%08x:%016x:", qpn, 0x111111, 0xabcd, 0x7f0000001000L);
            s += "00:00:00:00:00:00:00:00:00:00:ff:ff:7f:00:01:02:" + "00000000:";
            return cstr(s);
        }

        /** The whole sequence of a perftest 6.29 tool (no negotiation: we announce 5.70), RC, n QPs. */
        void run(Test t, int n) throws IOException {
            byte[] v = new byte[16];
            System.arraycopy("6.29".getBytes(StandardCharsets.US_ASCII), 0, v, 0, 4);
            assertEquals("5.70", new String(xchg(v), StandardCharsets.US_ASCII).trim().replace("\0", ""));
            assertEquals(4096, ByteBuffer.wrap(xchg(ByteBuffer.allocate(4).putInt(4096).array())).getInt());
            assertEquals(64, ByteBuffer.wrap(xchg(ByteBuffer.allocate(4).putInt(64).array())).getInt());
            assertArrayEquals(new byte[] {'5', 0}, xchg(new byte[] {'3', 0})); // we offer 4096, they 1024
            boolean lat = t.name().endsWith("_LAT");
            boolean send = t.name().startsWith("SEND");
            if (lat && !send) xchg(keys(0x40));                          // write/read/atomic_lat: first handshake
            for (int i = 0; i < n; i++) xchg(keys(0x40 + i));             // keys per QP
            // ctx_connect
            if (send) xchg(keys(0x40));                                   // send_bw/send_lat: sync after connect
            for (int i = 0; i < n; i++) xchg(keys(0x40 + i));             // keys again, printed as remote
            if (!send) xchg(keys(0x40));                                  // "additional handshake after RTR"
            if (send) xchg(keys(0x40));                                   // after ctx_set_recv_wqes
            switch (t) {
                case WRITE_BW, READ_BW, ATOMIC_BW -> {
                    xchg(keys(0x40));                                     // end sync
                    xchg(ByteBuffer.allocate(8).putLong(65536).array());  // size
                    xchg(ByteBuffer.allocate(8).putLong(5000).array());   // iters
                    xchg(ByteBuffer.allocate(8).putDouble(1.5).array());  // bw_peak
                    xchg(ByteBuffer.allocate(8).putDouble(1.25).array()); // bw_avg
                    xchg(ByteBuffer.allocate(8).putDouble(0.5).array());  // msgRate
                    xchg(keys(0x40));                                     // ctx_close_connection
                }
                case SEND_BW, SEND_LAT, READ_LAT, ATOMIC_LAT -> xchg(keys(0x40)); // ctx_close_connection
                default -> { } // write_lat: no closing handshake
            }
            assertTrue(FakePeer.atEof(in), "nothing more after the last exchange");
        }
    }

    private static List<Keys> ourKeys(int n) throws Exception {
        List<Keys> l = new ArrayList<>();
        for (int i = 0; i < n; i++) l.add(new Keys(0, 1, 0x20 + i, 0x222222, 0x1234, 0x7f0000002000L, gid("127.0.1.1"), 0));
        return l;
    }

    /** Drives our side through the whole test and checks what the fake saw and answered. */
    private static void drive(PerftestHandshake hs, Test t, int n, FakePerftest[] fake) throws Exception {
        try (hs) {
            PerftestHandshake.Preamble pre = hs.preamble(4096, 64, Mtu.MTU_4096);
            assertEquals("6.29", pre.peerVersion());
            assertEquals(Mtu.MTU_1024, pre.mtu(), "min of both sides");
            List<Keys> mine = ourKeys(n);
            AtomicInteger connects = new AtomicInteger();
            List<Keys> remote = hs.setUp(t, mine, r -> {
                assertEquals(n, r.size());
                connects.incrementAndGet();
            });
            assertEquals(1, connects.get());
            assertEquals(0x40, remote.get(0).qpn());
            assertEquals(0x7f0000001000L, remote.get(0).va());
            assertEquals(0xabcd, remote.get(0).rkey());
            hs.beforeTraffic(t, mine.get(0));
            BwReport r = hs.finish(t, mine.get(0), new BwReport(65536, 5000, 9.0, 8.0, 0.25));
            switch (t) {
                case WRITE_BW, READ_BW, ATOMIC_BW -> {
                    assertEquals(new BwReport(65536, 5000, 1.5, 1.25, 0.5), r);
                }
                default -> assertNull(r);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Test.class)
    void weAreTheClientOfAPerftestServer(Test t) throws Exception {
        int n = t.isLatency() ? 1 : 2;
        FakePerftest[] fake = new FakePerftest[1];
        try (FakePeer.Server server = new FakePeer.Server(FakePeer.A)) {
            CompletableFuture<Void> f = server.run((in, out) -> {
                fake[0] = new FakePerftest(false, in, out);
                fake[0].run(t, n);
            });
            drive(PerftestHandshake.connect(FakePeer.A, server.port(), FakePeer.B, T), t, n, fake);
            FakePeer.await(f);
        }
        // what we sent: our keys parse back, the report (if any) is big-endian
        List<byte[]> got = fake[0].received;
        Keys k = PerftestHandshake.decodeKeys(got.get(t.isLatency() && !t.isSend() ? 5 : 4));
        assertEquals(0x20, k.qpn());
        if (t == Test.WRITE_BW || t == Test.READ_BW || t == Test.ATOMIC_BW) {
            int at = got.size() - 6;
            assertEquals(65536, ByteBuffer.wrap(got.get(at)).getLong());
            assertEquals(5000, ByteBuffer.wrap(got.get(at + 1)).getLong());
            assertEquals(9.0, ByteBuffer.wrap(got.get(at + 2)).getDouble());
            assertEquals(8.0, ByteBuffer.wrap(got.get(at + 3)).getDouble());
            assertEquals(0.25, ByteBuffer.wrap(got.get(at + 4)).getDouble());
        }
    }

    @ParameterizedTest
    @EnumSource(Test.class)
    void weAreTheServerOfAPerftestClient(Test t) throws Exception {
        int n = t.isLatency() ? 1 : 3;
        int port = PORT.getAndIncrement();
        FakePerftest[] fake = new FakePerftest[1];
        CompletableFuture<Void> f = FakePeer.client(FakePeer.A, port, (in, out) -> {
            fake[0] = new FakePerftest(true, in, out);
            fake[0].run(t, n);
        });
        drive(PerftestHandshake.accept(FakePeer.A, port, T), t, n, fake);
        FakePeer.await(f);
        assertEquals("5.70", new String(fake[0].received.get(0), StandardCharsets.US_ASCII).replace("\0", ""));
        assertEquals(16, fake[0].received.get(0).length);
    }

    @org.junit.jupiter.api.Test
    void peersOlderThan570AreRefused() throws Exception {
        try (FakePeer.Server server = new FakePeer.Server(FakePeer.A)) {
            CompletableFuture<Void> f = server.run((in, out) -> {
                FakePeer.read(in, 16);
                byte[] v = Arrays.copyOf("5.60".getBytes(StandardCharsets.US_ASCII), 16);
                out.write(v);
                out.flush();
            });
            try (PerftestHandshake hs = PerftestHandshake.connect(FakePeer.A, server.port(), null, T)) {
                IOException e = assertThrows(IOException.class, hs::exchangeVersions);
                assertTrue(e.getMessage().contains("\"5.60\"") && e.getMessage().contains("5.70"), e.getMessage());
            }
            FakePeer.await(f);
        }
    }

    @org.junit.jupiter.api.Test
    void mtuIsTheSmallerValidOne() throws Exception {
        for (String[] c : new String[][] {{"2", "MTU_512"}, {"5", "MTU_2048"}, {"9", "MTU_2048"}, {"x", "MTU_2048"}}) {
            try (FakePeer.Server server = new FakePeer.Server(FakePeer.A)) {
                CompletableFuture<Void> f = server.run((in, out) -> {
                    assertArrayEquals(new byte[] {'4', 0}, FakePeer.read(in, 2));
                    out.write(new byte[] {(byte) c[0].charAt(0), 0});
                    out.flush();
                });
                try (PerftestHandshake hs = PerftestHandshake.connect(FakePeer.A, server.port(), null, T)) {
                    assertEquals(Mtu.valueOf(c[1]), hs.exchangeMtu(Mtu.MTU_2048), c[0]);
                }
                FakePeer.await(f);
            }
        }
    }
}
