package io.jroce.cli.conn;

import io.jroce.endpoint.Gid;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * The jroce-to-jroce out-of-band exchange: one {@link PeerInfo} each way over one TCP connection. The
 * client writes first, then reads; the server reads, then writes; both close.
 *
 * <h2>Message format, version {@value #VERSION}</h2>
 * All integers big-endian.
 * <pre>
 * offset  size  field
 *   0      4    magic "JRCE" (0x4a 0x52 0x43 0x45)
 *   4      2    version (u16) = 1
 *   6      4    body length N (u32), at most {@value #MAX_BODY} bytes
 *  10      N    body: a sequence of fields, each a u16 length followed by that many bytes:
 *                 lid (2) | qpn (4) | psn (4) | gid (16) | mtu in bytes, 0 = unspecified (4) | out_reads (4) |
 *                 region count R (2) | R times: name (UTF-8, 0..255) | va (8) | rkey (4) | length (8)
 * </pre>
 * A reader checks the magic and version before anything else. A peer speaking another version gets an
 * error naming both versions; the server still sends its own message first, so the client learns the
 * mismatch too. Fixed-size fields must have exactly their size; the body must be consumed exactly.
 *
 * <p>Every step (connect, accept, each read) has a timeout, so a silent peer ends in an
 * {@link IOException} with a one-line message, never in a hang.
 */
public final class JroceHandshake {
    /** "JRCE". */
    public static final int MAGIC = 0x4a524345;
    /** The TCP port of the exchange unless told otherwise (jroce node --port, jroce demo --port). */
    public static final int DEFAULT_PORT = 18515;
    /** The format version this class speaks. */
    public static final int VERSION = 1;
    /** Largest body accepted. */
    public static final int MAX_BODY = 1 << 20;
    /** Size of the fixed header (magic, version, body length). */
    public static final int HEADER_BYTES = 10;

    private JroceHandshake() {
    }

    /**
     * Listens on {@code bind:port} (null: every interface) for ONE client ({@link OobListener}: connections that do
     * not begin with a jroce header are dropped), reads its info, writes ours and closes. {@code timeout} bounds
     * the wait for the client and each read.
     */
    public static PeerInfo serve(InetAddress bind, int port, PeerInfo local, Duration timeout) throws IOException {
        // a connection whose first bytes are not a jroce header is not our peer: the listener drops it and waits on
        OobListener.Accepted<byte[]> a = OobListener.accept(bind, port, timeout, "jroce handshake", c -> {
            byte[] h = c.readFully(HEADER_BYTES, "the jroce handshake header");
            checkHeader(h, c.peer());
            return h;
        });
        try (OobSocket s = a.socket()) {
            byte[] header = a.greeting();
            int peerVersion = checkHeader(header, s.peer());
            if (peerVersion != VERSION) {
                s.write(encode(local)); // so the client reports the mismatch as well
                throw versionMismatch(s.peer(), peerVersion);
            }
            PeerInfo remote = decodeBody(s.readFully(bodyLength(header, s.peer()), "the jroce handshake body"), s.peer());
            s.write(encode(local));
            return remote;
        }
    }

    /**
     * Connects to {@code host:port} (retrying while the server is not yet listening, up to {@code timeout}),
     * writes our info, reads the server's and closes.
     */
    public static PeerInfo connect(InetAddress host, int port, PeerInfo local, Duration timeout) throws IOException {
        try (OobSocket s = OobSocket.connect(host, port, null, timeout)) {
            s.write(encode(local));
            byte[] header = s.readFully(HEADER_BYTES, "the jroce handshake header");
            int peerVersion = checkHeader(header, s.peer());
            if (peerVersion != VERSION) throw versionMismatch(s.peer(), peerVersion);
            return decodeBody(s.readFully(bodyLength(header, s.peer()), "the jroce handshake body"), s.peer());
        }
    }

    /** The complete message (header and body) for {@code info}. */
    public static byte[] encode(PeerInfo info) {
        try {
            ByteArrayOutputStream body = new ByteArrayOutputStream(128);
            DataOutputStream d = new DataOutputStream(body);
            field(d, 2).writeShort(info.lid());
            field(d, 4).writeInt(info.qpn());
            field(d, 4).writeInt(info.psn());
            field(d, 16).write(info.gid().raw());
            field(d, 4).writeInt(info.mtu());
            field(d, 4).writeInt(info.outReads());
            if (info.regions().size() > 0xFFFF) throw new IllegalArgumentException("more than 65535 regions");
            field(d, 2).writeShort(info.regions().size());
            for (RemoteRegion r : info.regions()) {
                byte[] name = r.name().getBytes(StandardCharsets.UTF_8);
                field(d, name.length).write(name);
                field(d, 8).writeLong(r.va());
                field(d, 4).writeInt(r.rkey());
                field(d, 8).writeLong(r.length());
            }
            d.flush();
            if (body.size() > MAX_BODY) throw new IllegalArgumentException("handshake body of " + body.size() + " bytes exceeds " + MAX_BODY);
            ByteBuffer msg = ByteBuffer.allocate(HEADER_BYTES + body.size());
            msg.putInt(MAGIC).putShort((short) VERSION).putInt(body.size()).put(body.toByteArray());
            return msg.array();
        } catch (IOException e) {
            throw new UncheckedIOException(e); // cannot happen: in memory
        }
    }

    /** Parses a complete message of our version (tests, tools). */
    public static PeerInfo decode(byte[] message) throws IOException {
        if (message.length < HEADER_BYTES) throw new IOException("jroce handshake message too short: " + message.length + " bytes");
        byte[] header = java.util.Arrays.copyOf(message, HEADER_BYTES);
        int v = checkHeader(header, "message");
        if (v != VERSION) throw versionMismatch("message", v);
        int len = bodyLength(header, "message");
        if (message.length != HEADER_BYTES + len) {
            throw new IOException("jroce handshake message has " + message.length + " bytes, header says " + (HEADER_BYTES + len));
        }
        return decodeBody(java.util.Arrays.copyOfRange(message, HEADER_BYTES, message.length), "message");
    }

    private static DataOutputStream field(DataOutputStream d, int length) throws IOException {
        d.writeShort(length);
        return d;
    }

    /** Checks the magic; returns the peer's version. */
    private static int checkHeader(byte[] header, String peer) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(header);
        int magic = b.getInt();
        if (magic != MAGIC) {
            String ascii = new String(header, 0, 4, StandardCharsets.ISO_8859_1).replaceAll("[^\\x20-\\x7e]", ".");
            throw new IOException("peer " + peer + " does not speak the jroce handshake (it began with "
                    + HexFormat.ofDelimiter(" ").formatHex(header, 0, 4) + " \"" + ascii
                    + "\"): for ibv_rc_pingpong or perftest peers use 'jroce pingpong' or 'jroce perf'");
        }
        return b.getShort() & 0xFFFF;
    }

    private static int bodyLength(byte[] header, String peer) throws IOException {
        long len = ByteBuffer.wrap(header, 6, 4).getInt() & 0xFFFFFFFFL;
        if (len > MAX_BODY) {
            throw new IOException("peer " + peer + " announced a jroce handshake body of " + len + " bytes (limit "
                    + MAX_BODY + "): the message is corrupt");
        }
        return (int) len;
    }

    private static IOException versionMismatch(String peer, int peerVersion) {
        return new IOException("peer " + peer + " speaks jroce handshake version " + peerVersion + ", we speak version "
                + VERSION + ": run the same jroce release on both sides");
    }

    private static PeerInfo decodeBody(byte[] body, String peer) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(body);
        try {
            int lid = fixed(b, 2, "lid", peer).getShort() & 0xFFFF;
            int qpn = fixed(b, 4, "qpn", peer).getInt();
            int psn = fixed(b, 4, "psn", peer).getInt();
            byte[] gid = new byte[16];
            fixed(b, 16, "gid", peer).get(gid);
            int mtu = fixed(b, 4, "mtu", peer).getInt();
            int outReads = fixed(b, 4, "out_reads", peer).getInt();
            int count = fixed(b, 2, "region count", peer).getShort() & 0xFFFF;
            List<RemoteRegion> regions = new ArrayList<>(Math.min(count, 1024));
            for (int i = 0; i < count; i++) {
                int nameLen = b.getShort() & 0xFFFF;
                if (nameLen > RemoteRegion.MAX_NAME_BYTES) throw corrupt(peer, "region name of " + nameLen + " bytes");
                byte[] name = new byte[nameLen];
                b.get(name);
                long va = fixed(b, 8, "region va", peer).getLong();
                int rkey = fixed(b, 4, "region rkey", peer).getInt();
                long length = fixed(b, 8, "region length", peer).getLong();
                regions.add(new RemoteRegion(utf8(name, peer), va, rkey, length));
            }
            if (b.hasRemaining()) throw corrupt(peer, b.remaining() + " unexpected trailing bytes");
            return new PeerInfo(lid, qpn, psn, Gid.of(gid), mtu, outReads, regions);
        } catch (BufferUnderflowException e) {
            throw corrupt(peer, "body ends early");
        } catch (IllegalArgumentException e) {
            throw corrupt(peer, e.getMessage());
        }
    }

    private static ByteBuffer fixed(ByteBuffer b, int size, String name, String peer) throws IOException {
        int len = b.getShort() & 0xFFFF;
        if (len != size) throw corrupt(peer, "field " + name + " has " + len + " bytes, expected " + size);
        return b;
    }

    private static String utf8(byte[] name, String peer) throws IOException {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(name)).toString();
        } catch (CharacterCodingException e) {
            throw corrupt(peer, "region name is not UTF-8");
        }
    }

    private static IOException corrupt(String peer, String what) {
        return new IOException("peer " + peer + " sent a malformed jroce handshake (" + what
                + "): run the same jroce release on both sides");
    }
}
