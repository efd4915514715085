package io.jroce.cli.soak;

import io.jroce.cli.conn.OobSocket;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The TCP exchange between the two sides of a soak: the client's HELLO (settings and its QPs), the server's KEYS
 * (its QPs and regions), then, while the traffic runs, SAMPLE requests answered with the server's figures, and at
 * the end STOP (the rounds the client completed on each QP) answered with FINAL (the server's figures and what it
 * found wrong). Every message is a type byte, a u32 body length (at most {@value #MAX_BODY}) and the body, integers
 * big-endian; the HELLO begins with the magic "JSOK" and version {@value #VERSION}.
 */
final class SoakLink implements AutoCloseable {
    static final int MAGIC = 0x4a534f4b; // "JSOK"
    static final int VERSION = 1;
    static final int MAX_BODY = 1 << 20;
    static final int HEADER = 5;

    static final int HELLO = 1;
    static final int KEYS = 2;
    static final int SAMPLE_REQUEST = 3;
    static final int SAMPLE = 4;
    static final int STOP = 5;
    static final int FINAL = 6;

    private final OobSocket socket;

    SoakLink(OobSocket socket) {
        this.socket = socket;
    }

    OobSocket socket() {
        return socket;
    }

    /** The client's settings and QPs. */
    record Hello(int qps, int depth, int maxLen, int maxReply, long seed, int extensions, int mtu, long intervalMillis, InetAddress address,
                 int[] qpn, int[] psn) {
    }

    /** The server's QPs and, per QP, its region (one region per QP, laid out by {@link SoakLayout}). */
    record Keys(InetAddress address, int mtu, int[] qpn, int[] psn, long[] va, int[] rkey) {
    }

    /** The server's last figures and every problem it found, one line each. */
    record Final(SoakSample sample, List<String> problems) {
    }

    // ------------------------------------------------------------------------------------------ writing

    void sendHello(Hello h) throws IOException {
        send(HELLO, out -> {
            out.writeInt(MAGIC);
            out.writeShort(VERSION);
            out.writeInt(h.qps());
            out.writeInt(h.depth());
            out.writeInt(h.maxLen());
            out.writeInt(h.maxReply());
            out.writeLong(h.seed());
            out.writeInt(h.extensions());
            out.writeInt(h.mtu());
            out.writeLong(h.intervalMillis());
            writeAddress(out, h.address());
            for (int i = 0; i < h.qps(); i++) {
                out.writeInt(h.qpn()[i]);
                out.writeInt(h.psn()[i]);
            }
        });
    }

    void sendKeys(Keys k) throws IOException {
        send(KEYS, out -> {
            writeAddress(out, k.address());
            out.writeInt(k.mtu());
            out.writeInt(k.qpn().length);
            for (int i = 0; i < k.qpn().length; i++) {
                out.writeInt(k.qpn()[i]);
                out.writeInt(k.psn()[i]);
                out.writeLong(k.va()[i]);
                out.writeInt(k.rkey()[i]);
            }
        });
    }

    void requestSample() throws IOException {
        send(SAMPLE_REQUEST, out -> { });
    }

    void sendSample(SoakSample s) throws IOException {
        send(SAMPLE, s::write);
    }

    void sendStop(long[] completedRounds) throws IOException {
        send(STOP, out -> {
            out.writeInt(completedRounds.length);
            for (long r : completedRounds) out.writeLong(r);
        });
    }

    void sendFinal(Final f) throws IOException {
        send(FINAL, out -> {
            f.sample().write(out);
            out.writeInt(f.problems().size());
            for (String p : f.problems()) out.writeUTF(p.length() > 1000 ? p.substring(0, 1000) : p);
        });
    }

    private interface Body {
        void write(DataOutputStream out) throws IOException;
    }

    private void send(int type, Body body) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeByte(type);
        out.writeInt(0);
        body.write(out);
        out.flush();
        byte[] b = bytes.toByteArray();
        ByteBuffer.wrap(b).putInt(1, b.length - HEADER);
        socket.write(b);
    }

    private static void writeAddress(DataOutputStream out, InetAddress a) throws IOException {
        byte[] raw = a.getAddress();
        out.writeByte(raw.length);
        out.write(raw);
    }

    // ------------------------------------------------------------------------------------------ reading

    /** The next message, which must be of type {@code expected}; {@code what} names it in errors. */
    DataInputStream receive(int expected, String what) throws IOException {
        byte[] header = socket.readFully(HEADER, what);
        return body(header, expected, what);
    }

    /** The body of a message whose header was read already (the server's greeting). */
    DataInputStream body(byte[] header, int expected, String what) throws IOException {
        int type = header[0];
        int len = ByteBuffer.wrap(header).getInt(1);
        if (type != expected) throw new IOException("peer " + socket.peer() + " sent message type " + type + " where " + what + " was due");
        if (len < 0 || len > MAX_BODY) throw new IOException("peer " + socket.peer() + " announced a " + len + "-byte " + what);
        return new DataInputStream(new ByteArrayInputStream(socket.readFully(len, what)));
    }

    /** The HELLO's header, checked: an {@link IOException} for a connection that is not a soak client. */
    static byte[] greeting(OobSocket s) throws IOException {
        byte[] h = s.readFully(HEADER + 6, "the soak HELLO");
        ByteBuffer b = ByteBuffer.wrap(h);
        if (h[0] != HELLO || b.getInt(HEADER) != MAGIC) throw new IOException("not a jroce soak client");
        if (b.getShort(HEADER + 4) != VERSION) {
            throw new IOException("the soak client speaks version " + b.getShort(HEADER + 4) + ", we speak " + VERSION);
        }
        return h;
    }

    /** The rest of a HELLO whose first {@code HEADER + 6} bytes {@link #greeting} read. */
    Hello readHello(byte[] greeting) throws IOException {
        int len = ByteBuffer.wrap(greeting).getInt(1) - 6;
        if (len < 0 || len > MAX_BODY) throw new IOException("peer " + socket.peer() + " announced a bad HELLO");
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(socket.readFully(len, "the soak HELLO")));
        int qps = in.readInt();
        int depth = in.readInt();
        int maxLen = in.readInt();
        int maxReply = in.readInt();
        long seed = in.readLong();
        int ext = in.readInt();
        int mtu = in.readInt();
        long interval = in.readLong();
        InetAddress address = readAddress(in);
        if (qps < 1 || qps > 1024) throw new IOException("peer " + socket.peer() + " asked for " + qps + " QPs");
        int[] qpn = new int[qps];
        int[] psn = new int[qps];
        for (int i = 0; i < qps; i++) {
            qpn[i] = in.readInt();
            psn[i] = in.readInt();
        }
        return new Hello(qps, depth, maxLen, maxReply, seed, ext, mtu, interval, address, qpn, psn);
    }

    Keys readKeys() throws IOException {
        DataInputStream in = receive(KEYS, "the soak server's KEYS");
        InetAddress address = readAddress(in);
        int mtu = in.readInt();
        int n = in.readInt();
        if (n < 1 || n > 1024) throw new IOException("peer " + socket.peer() + " sent " + n + " QPs");
        int[] qpn = new int[n];
        int[] psn = new int[n];
        long[] va = new long[n];
        int[] rkey = new int[n];
        for (int i = 0; i < n; i++) {
            qpn[i] = in.readInt();
            psn[i] = in.readInt();
            va[i] = in.readLong();
            rkey[i] = in.readInt();
        }
        return new Keys(address, mtu, qpn, psn, va, rkey);
    }

    SoakSample readSample() throws IOException {
        return SoakSample.read(receive(SAMPLE, "the soak server's SAMPLE"));
    }

    /** The next request of the client: {@link #SAMPLE_REQUEST} or {@link #STOP}; for STOP, the rounds. */
    int nextRequest(List<long[]> stopRounds) throws IOException {
        byte[] header = socket.readFully(HEADER, "the soak client's next request");
        if (header[0] == SAMPLE_REQUEST) {
            body(header, SAMPLE_REQUEST, "a SAMPLE request");
            return SAMPLE_REQUEST;
        }
        DataInputStream in = body(header, STOP, "a SAMPLE request or STOP");
        int n = in.readInt();
        if (n < 0 || n > 1024) throw new IOException("peer " + socket.peer() + " sent a STOP for " + n + " QPs");
        long[] rounds = new long[n];
        for (int i = 0; i < n; i++) rounds[i] = in.readLong();
        stopRounds.add(rounds);
        return STOP;
    }

    Final readFinal() throws IOException {
        DataInputStream in = receive(FINAL, "the soak server's FINAL");
        SoakSample s = SoakSample.read(in);
        int n = in.readInt();
        if (n < 0 || n > 10_000) throw new IOException("peer " + socket.peer() + " sent " + n + " problems");
        List<String> problems = new ArrayList<>();
        for (int i = 0; i < n; i++) problems.add(in.readUTF());
        return new Final(s, problems);
    }

    private static InetAddress readAddress(DataInputStream in) throws IOException {
        int len = in.readUnsignedByte();
        if (len != 4 && len != 16) throw new IOException("bad address length " + len);
        byte[] raw = new byte[len];
        in.readFully(raw);
        return InetAddress.getByAddress(raw);
    }

    @Override
    public void close() {
        socket.close();
    }
}
