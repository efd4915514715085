package io.jroce.cli.conn;

import io.jroce.endpoint.Gid;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The out-of-band TCP exchange of {@code ibv_rc_pingpong} (rdma-core {@code libibverbs/examples/rc_pingpong.c}
 * {@code pp_client_exch_dest} / {@code pp_server_exch_dest}, GID text from {@code pingpong.c}
 * {@code gid_to_wire_gid} / {@code wire_gid_to_gid}), byte for byte.
 *
 * <h2>Message</h2>
 * {@code sprintf("%04x:%06x:%06x:%s", lid, qpn, psn, gid)} into {@code char msg[sizeof
 * "0000:000000:000000:00000000000000000000000000000000"]}, written with {@code sizeof msg}: always exactly
 * {@value #MESSAGE_BYTES} bytes, the last one NUL. The GID is 32 lowercase hex digits, the 16 raw GID bytes in
 * order ({@code gid_to_wire_gid} prints each 32-bit group after {@code htobe32}, which restores wire order).
 * Example: {@code "0000:000011:3a5c01:00000000000000000000ffffc000020a\0"}.
 *
 * <h2>Sequence</h2>
 * <ol>
 *   <li>client &rarr; server: its 52-byte message (one {@code write});</li>
 *   <li>the server reads 52 bytes, parses them, and moves its QP to RTR and RTS ({@code pp_connect_ctx})
 *       <em>before</em> answering: {@link BeforeReply};</li>
 *   <li>server &rarr; client: its 52-byte message;</li>
 *   <li>the client reads 52 bytes, then client &rarr; server {@code "done\0"} (5 bytes; the server's
 *       {@code read} must return exactly {@code sizeof "done"}); both close the socket. The client moves its
 *       QP to RTR/RTS afterwards, then sends first.</li>
 * </ol>
 * TCP port {@value #DEFAULT_PORT} by default; the server serves one client and stops listening.
 * Our reads are bounded by a timeout; ibv_rc_pingpong's are not.
 */
public final class RcPingpongHandshake {
    /** ibv_rc_pingpong's default TCP port ({@code -p}). */
    public static final int DEFAULT_PORT = 18515;
    /** Length of the address message, including its NUL. */
    public static final int MESSAGE_BYTES = 52;
    /** What the client sends after reading the server's address: {@code "done"} and its NUL. */
    private static final byte[] DONE = {'d', 'o', 'n', 'e', 0};
    private static final Pattern FORMAT = Pattern.compile("([0-9a-fA-F]{1,4}):([0-9a-fA-F]{1,6}):([0-9a-fA-F]{1,6}):([0-9a-fA-F]{32})");

    private RcPingpongHandshake() {
    }

    /** What the server does between reading the client's address and answering (ibv_rc_pingpong: RTR, RTS). */
    @FunctionalInterface
    public interface BeforeReply {
        void accept(PeerInfo remote) throws IOException;
    }

    /** The 5 bytes {@code "done\0"}. */
    public static byte[] done() {
        return DONE.clone();
    }

    /** The 52-byte message for {@code info} (its LID, QPN, PSN and GID). */
    public static byte[] encode(PeerInfo info) {
        String text = String.format(Locale.ROOT, "%04x:%06x:%06x:%s", info.lid(), info.qpn(), info.psn(), info.gid().toHex());
        byte[] ascii = text.getBytes(StandardCharsets.US_ASCII);
        if (ascii.length != MESSAGE_BYTES - 1) throw new IllegalStateException("message of " + ascii.length + " characters: " + text);
        return Arrays.copyOf(ascii, MESSAGE_BYTES); // NUL-terminated
    }

    /**
     * Parses a 52-byte message as {@code sscanf("%x:%x:%x:%s")} would, but strictly: the text up to the first NUL
     * must be LID:QPN:PSN:GID with a 32-digit GID.
     */
    public static PeerInfo decode(byte[] msg) throws IOException {
        int end = 0;
        while (end < msg.length && msg[end] != 0) end++;
        String text = new String(msg, 0, end, StandardCharsets.ISO_8859_1);
        Matcher m = FORMAT.matcher(text);
        if (end == msg.length || !m.matches()) {
            throw new IOException("malformed ibv_rc_pingpong address \"" + printable(msg)
                    + "\" (expected LID:QPN:PSN:GID, e.g. 0000:000011:3a5c01:00000000000000000000ffffc000020a): "
                    + "is the peer ibv_rc_pingpong or jroce pingpong?");
        }
        return new PeerInfo(Integer.parseInt(m.group(1), 16), Integer.parseInt(m.group(2), 16),
                Integer.parseInt(m.group(3), 16), Gid.parseHex(m.group(4).toLowerCase(Locale.ROOT)), 0, 0, java.util.List.of());
    }

    /**
     * Client role: connect (retrying until {@code timeout} while the server is not listening yet), send our
     * address, read the server's, send {@code "done\0"}, close. {@code bind}: local TCP address or null.
     */
    public static PeerInfo client(InetAddress host, int port, InetAddress bind, PeerInfo local, Duration timeout) throws IOException {
        try (OobSocket s = OobSocket.connect(host, port, bind, timeout)) {
            s.write(encode(local));
            PeerInfo remote = decode(s.readFully(MESSAGE_BYTES, "the 52-byte ibv_rc_pingpong address"));
            s.write(DONE);
            return remote;
        }
    }

    /**
     * Server role: accept one client within {@code timeout} ({@link OobListener}: connections that do not send an
     * address message are dropped), read its address, run {@code beforeReply} (move the QP to RTR/RTS), send our
     * address, wait for {@code "done\0"}, close.
     */
    public static PeerInfo server(InetAddress bind, int port, PeerInfo local, Duration timeout, BeforeReply beforeReply) throws IOException {
        return server(bind, port, local, timeout, timeout, beforeReply);
    }

    /** As {@link #server(InetAddress, int, PeerInfo, Duration, BeforeReply)}, waiting up to {@code wait} for a client (null: until interrupted). */
    public static PeerInfo server(InetAddress bind, int port, PeerInfo local, Duration wait, Duration timeout, BeforeReply beforeReply)
            throws IOException {
        // a connection whose first 52 bytes are not an address message is not our peer: the listener drops it
        OobListener.Accepted<PeerInfo> a = OobListener.acceptWaiting(bind, port, wait, timeout, "ibv_rc_pingpong exchange",
                c -> decode(c.readFully(MESSAGE_BYTES, "the 52-byte ibv_rc_pingpong address")));
        try (OobSocket s = a.socket()) {
            PeerInfo remote = a.greeting();
            beforeReply.accept(remote);
            s.write(encode(local));
            byte[] done = s.readFully(DONE.length, "the client's \"done\"");
            if (!Arrays.equals(done, DONE)) {
                throw new IOException("peer " + s.peer() + " ended the ibv_rc_pingpong exchange with \"" + printable(done)
                        + "\" instead of \"done\": is it ibv_rc_pingpong?");
            }
            return remote;
        }
    }

    /**
     * Checks that a peer's GID can be routed to from our GID {@code mine}: RoCEv2 over the same IP version
     * (an IPv4-mapped GID for IPv4, any other for IPv6). ibv_rc_pingpong without {@code -g} announces an
     * all-zero GID (its {@code gidx = -1} default), with which no RoCE packet can be addressed.
     */
    public static void requireRoutable(PeerInfo remote, Gid mine) throws IOException {
        Gid g = remote.gid();
        if (Arrays.equals(g.raw(), new byte[16])) {
            throw new IOException("the peer announced GID 0 (ibv_rc_pingpong or ibv_ud_pingpong without -g): run it with -g <index of its "
                    + (mine.isIpv4Mapped() ? "IPv4" : "IPv6") + " RoCEv2 GID>, e.g. -g 1 on rxe (see 'ibv_devinfo -v')");
        }
        GidFamily.requireSame(mine, g, "-g");
    }

    static String printable(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) {
            int c = x & 0xFF;
            if (c >= 0x20 && c < 0x7f) sb.append((char) c);
            else sb.append(String.format("\\x%02x", c));
        }
        return sb.length() > 120 ? sb.substring(0, 120) + "..." : sb.toString();
    }
}
