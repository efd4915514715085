package io.jroce.cli.conn;

import io.jroce.endpoint.Gid;
import io.jroce.endpoint.Mtu;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The out-of-band TCP exchange of perftest ({@code ib_send_bw}, {@code ib_write_bw}, {@code ib_read_bw},
 * {@code ib_atomic_bw} and the {@code _lat} tools) in its default mode (plain socket, not {@code -R} rdma_cm),
 * byte for byte. Sources: linux-rdma/perftest {@code src/perftest_communication.c} and {@code .h}, the test
 * mains {@code src/send_bw.c}, {@code write_bw.c}, {@code read_bw.c}, {@code atomic_bw.c}, {@code send_lat.c},
 * {@code write_lat.c}, {@code read_lat.c}, {@code atomic_lat.c} (checked at perftest 6.29 and at tag
 * v4.5-0.20, the release in Debian 12 that produced testdata/rxe/*.log).
 *
 * <h2>Primitive: one exchange ({@code ctx_xchg_data_ethernet}, {@code ctx_hand_shake})</h2>
 * Every exchange is symmetric, with the same fixed size both ways: the <b>client writes, then reads</b>; the
 * <b>server reads, then writes</b> ({@link #exchange}).
 *
 * <h2>Steps, in order</h2>
 * <ol>
 *   <li><b>Version</b> ({@code exchange_versions}): 16 bytes, {@code char version[16]}, NUL-padded ASCII. We
 *       send {@value #OUR_VERSION}. Each side then exits if {@code atof(peer) < 5.70}
 *       ({@code check_version_compatibility}); we refuse such peers too. Why {@value #OUR_VERSION}: it is the
 *       oldest version a current perftest accepts, and it is below 6.28, the version from which both sides
 *       exchange {@code struct perftest_parameters_negotiate} ({@code negotiate_params}: it embeds a raw
 *       host-order {@code struct ibv_device_attr} whose size depends on the build, so we cannot produce it).
 *       Each side decides on the <em>peer's</em> version, so a 6.29 peer skips negotiation with us, and we skip
 *       it too. Every other gate ({@code >= 5.1} MTU exchange, {@code >= 5.31} 2-byte MTU, {@code >= 5.32}
 *       sys data, {@code >= 5.33} 64-bit iteration count) holds for both sides once both are at least 5.70,
 *       so we always do those steps.</li>
 *   <li><b>cycle_buffer</b> ({@code check_sys_data}): 4 bytes, int32 big-endian ({@code hton_int}), the page
 *       size; each side keeps max(own, peer).</li>
 *   <li><b>cache_line_size</b> ({@code check_sys_data}): 4 bytes, int32 big-endian; max(own, peer).</li>
 *   <li><b>MTU</b> ({@code check_mtu}): {@code sprintf(cur, "%d", curr_mtu)} of the {@code enum ibv_mtu} value
 *       (1 = 256 ... 5 = 4096), 2 bytes ({@code sizeof(char[2])}): one ASCII digit and a NUL, e.g.
 *       {@code "3\0"} = 1024. Each side uses min(own, peer) if the peer's value is a valid enum.</li>
 *   <li>(negotiation skipped, see above)</li>
 *   <li><b>Keys</b> ({@code ctx_hand_shake} with {@code ethernet_write_keys} / {@code ethernet_read_keys}),
 *       {@value #KEY_BYTES} bytes per QP: {@code KEY_PRINT_FMT_GID} =
 *       {@code "%04x:%04x:%06x:%06x:%08x:%016llx:"} + 16 &times; {@code "%02x:"} + {@code "%08x:"} + NUL, i.e.
 *       LID : out_reads : QPN : PSN : rkey : VA : GID bytes : SRQN. On RoCE perftest always uses a GID index
 *       ({@code check_link_and_mtu} sets 0 when none was given), hence always this 108-byte form
 *       ({@link #encodeKeys}, {@link #decodeKeys}). The same message, sent again, is how perftest
 *       synchronises ("sync" below: {@link #sync}).</li>
 * </ol>
 * Then the test-specific sequence ({@link Test}; RC, one QP or {@code -q N}, iterations or {@code -D},
 * no duplex), as the test mains do it:
 * <pre>
 * test                        before ctx_connect  after ctx_connect                    before traffic   end of test
 * send_bw                     keys x N            sync, keys x N                       sync (*)         each prints its own report; sync (close)
 * write_bw, read_bw, atomic_bw keys x N           keys x N, sync                       -                sync, report, sync (close)
 * send_lat                    keys x N            sync, keys x N                       sync (*)         sync (close)
 * write_lat                   sync, keys x N      keys x N, sync                       -                (sockets just close)
 * read_lat, atomic_lat        sync, keys x N      keys x N, sync                       -                sync (close)
 * (*) after the receiver has posted its receive WQEs ({@code ctx_set_recv_wqes}).
 * </pre>
 * In write/read/atomic_bw and read/atomic_lat the server does not take part in the traffic: right after
 * setup it enters the end-of-test steps and waits there until the client has finished.
 *
 * <p><b>Report</b> ({@code xchg_bw_reports}): five exchanges, each of one big-endian field ({@code hton_long},
 * {@code hton_double}): size (u64), iters (u64; u32 for peers before 5.33), bw_peak, bw_avg, msgRate_avg
 * (IEEE doubles). The server prints the client's numbers.
 */
public final class PerftestHandshake implements Closeable {
    /** perftest's default TCP port ({@code DEF_PORT}). */
    public static final int DEFAULT_PORT = 18515;
    /** The version we advertise. */
    public static final String OUR_VERSION = "5.70";
    /** Oldest peer version we (and perftest) accept. */
    public static final double MIN_PEER_VERSION = 5.70;
    /** Peers from this version on negotiate parameters; since we advertise less, neither side does. */
    public static final double NEGOTIATION_VERSION = 6.28;
    /** {@code MAX_VERSION}. */
    public static final int VERSION_BYTES = 16;
    /** {@code KEY_MSG_SIZE_GID}. */
    public static final int KEY_BYTES = 108;
    /** perftest's {@code DEF_CACHE_LINE_SIZE}. */
    public static final int DEFAULT_CACHE_LINE = 64;
    /** perftest's {@code DEF_PAGE_SIZE}. */
    public static final int DEFAULT_CYCLE_BUFFER = 4096;

    /** The perftest tools this exchange covers. */
    public enum Test {
        SEND_BW("ib_send_bw", "Send", false), WRITE_BW("ib_write_bw", "RDMA_Write", false), READ_BW("ib_read_bw", "RDMA_Read", false),
        ATOMIC_BW("ib_atomic_bw", "Atomic", false), SEND_LAT("ib_send_lat", "Send", true), WRITE_LAT("ib_write_lat", "RDMA_Write", true),
        READ_LAT("ib_read_lat", "RDMA_Read", true), ATOMIC_LAT("ib_atomic_lat", "Atomic", true);

        private final String tool;
        private final String verbName;
        private final boolean latency;

        Test(String tool, String verbName, boolean latency) {
            this.tool = tool;
            this.verbName = verbName;
            this.latency = latency;
        }

        /** "ib_write_bw". */
        public String tool() { return tool; }
        /** perftest's {@code testsStr}: "Send", "RDMA_Write", "RDMA_Read", "Atomic". */
        public String verbName() { return verbName; }
        public boolean isLatency() { return latency; }
        public boolean isSend() { return this == SEND_BW || this == SEND_LAT; }
        /** READ and atomics: out_reads matters. */
        public boolean isReadOrAtomic() { return this == READ_BW || this == READ_LAT || this == ATOMIC_BW || this == ATOMIC_LAT; }
        /** A sync before the first key exchange (write/read/atomic _lat). */
        boolean syncFirst() { return this == WRITE_LAT || this == READ_LAT || this == ATOMIC_LAT; }
        /** Where the sync after connect goes: right after ctx_connect (send tests) or after the second keys. */
        boolean syncRightAfterConnect() { return isSend(); }
        /** Whether the server sits out the traffic and goes straight to the end-of-test steps. */
        public boolean serverIsPassive() { return this == WRITE_BW || this == READ_BW || this == ATOMIC_BW || this == READ_LAT || this == ATOMIC_LAT; }
    }

    /**
     * One QP's key message: LID, out_reads, QPN, PSN, rkey, VA of the buffer the peer may access, GID, SRQN.
     */
    public record Keys(int lid, int outReads, int qpn, int psn, int rkey, long va, Gid gid, int srqn) {
        public Keys {
            java.util.Objects.requireNonNull(gid, "gid");
        }

        /** As a {@link PeerInfo} with one region named "buf" (length unknown: 0). */
        public PeerInfo toPeerInfo(int mtu) {
            return new PeerInfo(lid & 0xFFFF, qpn & 0xFFFFFF, psn & 0xFFFFFF, gid, mtu, outReads,
                    List.of(new RemoteRegion("buf", va, rkey, 0)));
        }
    }

    /** The numbers of a BW report ({@code struct bw_report_data} without the per-port fields). */
    public record BwReport(long size, long iters, double bwPeak, double bwAvg, double msgRate) {
    }

    private final ExchangeChannel socket;
    private final boolean client;
    /** -R: keys travel as the binary {@code struct pingpong_dest} ({@code rdma_write_keys}), not as text. */
    private final boolean rdmaCm;
    private String peerVersion;
    /** Server role: the client's version message, read by the listener before the exchange began. */
    private byte[] clientVersion;

    private PerftestHandshake(ExchangeChannel socket, boolean client, boolean rdmaCm) {
        this.socket = socket;
        this.client = client;
        this.rdmaCm = rdmaCm;
    }

    /**
     * perftest {@code -R}: the same exchanges over an RC QP the connection manager connected ({@code use_rdma_cm}:
     * {@code ctx_xchg_data_rdma}), keys in binary ({@link #encodeBinaryKeys}).
     */
    public static PerftestHandshake overQp(ExchangeChannel channel, boolean client) {
        return new PerftestHandshake(channel, client, true);
    }

    /** Whether this is the {@code -R} exchange. */
    public boolean isRdmaCm() {
        return rdmaCm;
    }

    /**
     * Server role: listen on {@code bind:port} (null: all interfaces) and accept one client within {@code timeout}
     * ({@link OobListener}: connections whose first 16 bytes are not a version string are dropped).
     */
    public static PerftestHandshake accept(InetAddress bind, int port, Duration timeout) throws IOException {
        return accept(bind, port, timeout, timeout);
    }

    /** As {@link #accept(InetAddress, int, Duration)}, waiting up to {@code wait} for a client (null: until interrupted). */
    public static PerftestHandshake accept(InetAddress bind, int port, Duration wait, Duration timeout) throws IOException {
        OobListener.Accepted<byte[]> a = OobListener.acceptWaiting(bind, port, wait, timeout, "perftest exchange", c -> {
            byte[] v = c.readFully(VERSION_BYTES, "the 16-byte perftest version");
            if (!looksLikeVersion(v)) {
                throw new IOException("peer " + c.peer() + " sent \"" + RcPingpongHandshake.printable(v)
                        + "\" where the 16-byte perftest version belongs: it speaks another protocol");
            }
            return v;
        });
        PerftestHandshake hs = new PerftestHandshake(a.socket(), false, false);
        hs.clientVersion = a.greeting();
        return hs;
    }

    /** A perftest version message: a digit, then printable ASCII up to the NUL padding (any version number: old ones are refused later, by name). */
    static boolean looksLikeVersion(byte[] v) {
        if (v.length == 0 || v[0] < '0' || v[0] > '9') return false;
        for (byte b : v) {
            if (b == 0) return true;
            if (b < 0x20 || b > 0x7e) return false;
        }
        return false; // strncpy into char[16] always leaves a NUL for versions shorter than 16
    }

    /** Client role: connect to {@code host:port}, retrying until {@code timeout}. */
    public static PerftestHandshake connect(InetAddress host, int port, InetAddress bind, Duration timeout) throws IOException {
        return new PerftestHandshake(OobSocket.connect(host, port, bind, timeout), true, false);
    }

    public boolean isClient() {
        return client;
    }

    /** The underlying socket or QP channel (its timeout applies to each following read). */
    public ExchangeChannel socket() {
        return socket;
    }

    /** The peer's version string, after {@link #exchangeVersions()}. */
    public String peerVersion() {
        return peerVersion;
    }

    /** One symmetric exchange of {@code mine.length} bytes: client writes then reads, server reads then writes. */
    public byte[] exchange(byte[] mine, String what) throws IOException {
        return exchange(mine, what, false);
    }

    /** {@code last}: the session's last exchange, whose last message (the server's) goes with {@link ExchangeChannel#writeLast}. */
    private byte[] exchange(byte[] mine, String what, boolean last) throws IOException {
        if (client) {
            socket.write(mine);
            return socket.readFully(mine.length, what);
        }
        byte[] theirs = socket.readFully(mine.length, what);
        if (last) socket.writeLast(mine);
        else socket.write(mine);
        return theirs;
    }

    // ---- steps 1..4 -------------------------------------------------------------------------------

    /** Step 1: 16-byte versions; refuses peers older than 5.70. Returns the peer's version string. */
    public String exchangeVersions() throws IOException {
        byte[] theirs;
        if (clientVersion != null) {
            theirs = clientVersion; // the server half of the exchange: the listener has read it already
            clientVersion = null;
            socket.write(encodeVersion(OUR_VERSION));
        } else {
            theirs = exchange(encodeVersion(OUR_VERSION), "the 16-byte perftest version");
        }
        int end = 0;
        while (end < theirs.length && theirs[end] != 0) end++;
        String v = new String(theirs, 0, end, StandardCharsets.ISO_8859_1);
        double num = atof(v);
        if (!(num >= MIN_PEER_VERSION)) {
            throw new IOException("peer " + socket.peer() + " announced perftest version \""
                    + RcPingpongHandshake.printable(Arrays.copyOf(theirs, end)) + "\"; we speak the perftest exchange of version "
                    + OUR_VERSION + " and need a peer of 5.70 or newer: use a newer perftest, or jroce perf on both sides");
        }
        peerVersion = v;
        return v;
    }

    /** Steps 2 and 3: cycle buffer and cache line size, each the max of both sides: {@code {cycle, cacheLine}}. */
    public int[] exchangeSysData(int cycleBuffer, int cacheLineSize) throws IOException {
        int cb = ByteBuffer.wrap(exchange(ByteBuffer.allocate(4).putInt(cycleBuffer).array(), "the peer's cycle buffer size")).getInt();
        int cl = ByteBuffer.wrap(exchange(ByteBuffer.allocate(4).putInt(cacheLineSize).array(), "the peer's cache line size")).getInt();
        return new int[] {Math.max(cb, cycleBuffer), Math.max(cl, cacheLineSize)};
    }

    /** Step 4: MTU as an ASCII {@code ibv_mtu} digit and NUL; returns min(ours, peer's) (ours if the peer's is invalid). */
    public Mtu exchangeMtu(Mtu ours) throws IOException {
        byte[] theirs = exchange(encodeMtu(ours), "the peer's MTU");
        int end = theirs[0] == 0 ? 0 : theirs[1] == 0 ? 1 : 2;
        int rem;
        try {
            rem = Integer.parseInt(new String(theirs, 0, end, StandardCharsets.US_ASCII).trim());
        } catch (NumberFormatException e) {
            rem = 0; // strtol gives 0: invalid, keep ours
        }
        if (rem >= 1 && rem <= 5 && rem < ours.ibvEnum()) return Mtu.ofIbvEnum(rem);
        return ours;
    }

    /** Steps 1-4 in order. Returns {@code {cycle, cacheLine}} and the agreed MTU through {@link Preamble}. */
    public Preamble preamble(int cycleBuffer, int cacheLineSize, Mtu mtu) throws IOException {
        String v = exchangeVersions();
        int[] sys = exchangeSysData(cycleBuffer, cacheLineSize);
        Mtu m = exchangeMtu(mtu);
        return new Preamble(v, sys[0], sys[1], m);
    }

    /** What the preamble agreed. */
    public record Preamble(String peerVersion, int cycleBuffer, int cacheLineSize, Mtu mtu) {
    }

    // ---- keys -------------------------------------------------------------------------------------

    /** One key exchange: 108 bytes of text, or with -R the 56-byte binary struct. */
    public Keys exchangeKeys(Keys mine) throws IOException {
        return exchangeKeys(mine, false);
    }

    private Keys exchangeKeys(Keys mine, boolean last) throws IOException {
        if (rdmaCm) return decodeBinaryKeys(exchange(encodeBinaryKeys(mine), "the 56-byte perftest struct pingpong_dest", last));
        return decodeKeys(exchange(encodeKeys(mine), "the 108-byte perftest key message", last));
    }

    /** A key exchange used as a barrier (the answer is checked for format only). */
    public void sync(Keys mine) throws IOException {
        exchangeKeys(mine);
    }

    /** The session's last barrier: the server, which writes last, sends with {@link ExchangeChannel#writeLast}. */
    private void lastSync(Keys mine) throws IOException {
        exchangeKeys(mine, true);
    }

    /** Does {@code ctx_connect} (RTR/RTS of every QP) given the peer's keys. */
    @FunctionalInterface
    public interface Connector {
        void connect(List<Keys> remote) throws IOException;
    }

    /**
     * Everything between the preamble and the traffic for {@code test}: the key exchanges and syncs around
     * {@code ctx_connect} (see the table above). Returns the peer's keys (from the first exchange).
     */
    public List<Keys> setUp(Test test, List<Keys> mine, Connector connector) throws IOException {
        return setUp(test, mine, null, connector);
    }

    /** Connects the test QPs through the connection manager (-R's {@code create_rdma_cm_connection}). */
    @FunctionalInterface
    public interface CmConnector {
        void connect() throws IOException;
    }

    /**
     * {@link #setUp(Test, List, Connector)}; with -R ({@code cm} not null) first {@code create_rdma_cm_connection}:
     * a sync, the test QPs connected by {@code cm} (a second rdma_cm connection per QP, to the same port), a sync.
     * {@code connector} then runs where {@code ctx_connect} would (perftest skips it with -R; pass one that
     * does nothing).
     */
    public List<Keys> setUp(Test test, List<Keys> mine, CmConnector cm, Connector connector) throws IOException {
        if (mine.isEmpty()) throw new IllegalArgumentException("no QPs");
        if (cm != null) {
            // my_dest is still zeroed here in perftest: the message is only a barrier
            Keys zero = new Keys(0, 0, 0, 0, 0, 0, Gid.of(new byte[16]), 0);
            sync(zero);
            cm.connect();
            sync(zero);
        }
        if (test.syncFirst()) sync(mine.get(0));
        List<Keys> remote = new ArrayList<>(mine.size());
        for (Keys k : mine) remote.add(exchangeKeys(k));
        // perftest: 'Found Incompatibility issue with GID types' (not checked with -R)
        if (!rdmaCm) GidFamily.requireSame(mine.get(0).gid(), remote.get(0).gid(), "-x");
        connector.connect(remote);
        if (test.syncRightAfterConnect()) sync(mine.get(0));
        for (Keys k : mine) exchangeKeys(k);
        if (!test.syncRightAfterConnect()) sync(mine.get(0));
        return remote;
    }

    /** send_bw / send_lat: the sync after the receiver posted its receive WQEs; nothing for the others. */
    public void beforeTraffic(Test test, Keys mine0) throws IOException {
        if (test.isSend()) sync(mine0);
    }

    /**
     * The end of the test. write/read/atomic_bw: sync, report exchange, closing sync (returns the peer's
     * report); send_bw, send_lat, read_lat, atomic_lat: closing sync; write_lat: nothing. Returns null when no
     * report was exchanged. The socket stays open; {@link #close()} it.
     */
    public BwReport finish(Test test, Keys mine0, BwReport myReport) throws IOException {
        switch (test) {
            case WRITE_BW, READ_BW, ATOMIC_BW -> {
                sync(mine0);
                BwReport theirs = exchangeReport(myReport == null ? new BwReport(0, 0, 0, 0, 0) : myReport);
                lastSync(mine0);
                return theirs;
            }
            case SEND_BW, SEND_LAT, READ_LAT, ATOMIC_LAT -> {
                lastSync(mine0);
                return null;
            }
            default -> {
                return null;
            }
        }
    }

    /** {@code xchg_bw_reports}: five big-endian fields, each its own exchange. */
    public BwReport exchangeReport(BwReport mine) throws IOException {
        long size = ByteBuffer.wrap(exchange(ByteBuffer.allocate(8).putLong(mine.size()).array(), "the report's size")).getLong();
        long iters;
        if (peerVersion != null && atof(peerVersion) < 5.33) {
            iters = ByteBuffer.wrap(exchange(ByteBuffer.allocate(4).putInt((int) mine.iters()).array(), "the report's iterations")).getInt() & 0xFFFFFFFFL;
        } else {
            iters = ByteBuffer.wrap(exchange(ByteBuffer.allocate(8).putLong(mine.iters()).array(), "the report's iterations")).getLong();
        }
        double peak = exchangeDouble(mine.bwPeak(), "the report's peak bandwidth");
        double avg = exchangeDouble(mine.bwAvg(), "the report's average bandwidth");
        double rate = exchangeDouble(mine.msgRate(), "the report's message rate");
        return new BwReport(size, iters, peak, avg, rate);
    }

    private double exchangeDouble(double v, String what) throws IOException {
        return ByteBuffer.wrap(exchange(ByteBuffer.allocate(8).putDouble(v).array(), what)).getDouble();
    }

    @Override
    public void close() {
        socket.close();
    }

    // ---- formats ----------------------------------------------------------------------------------

    /** 16 bytes: the ASCII version, NUL-padded ({@code strncpy} into {@code char[16]}). */
    public static byte[] encodeVersion(String version) {
        byte[] ascii = version.getBytes(StandardCharsets.US_ASCII);
        if (ascii.length >= VERSION_BYTES) throw new IllegalArgumentException("version too long: " + version);
        return Arrays.copyOf(ascii, VERSION_BYTES);
    }

    /** 2 bytes: the {@code ibv_mtu} enum value as one ASCII digit, then NUL. */
    public static byte[] encodeMtu(Mtu mtu) {
        return new byte[] {(byte) ('0' + mtu.ibvEnum()), 0};
    }

    /** The 108-byte {@code KEY_PRINT_FMT_GID} message, NUL-terminated. */
    public static byte[] encodeKeys(Keys k) {
        StringBuilder sb = new StringBuilder(KEY_BYTES);
        sb.append(String.format(Locale.ROOT, "%04x:%04x:%06x:%06x:%08x:%016x:", k.lid() & 0xFFFF, k.outReads() & 0xFFFF,
                k.qpn() & 0xFFFFFF, k.psn() & 0xFFFFFF, k.rkey(), k.va()));
        for (byte b : k.gid().raw()) sb.append(String.format(Locale.ROOT, "%02x:", b & 0xFF));
        sb.append(String.format(Locale.ROOT, "%08x:", k.srqn()));
        byte[] ascii = sb.toString().getBytes(StandardCharsets.US_ASCII);
        if (ascii.length != KEY_BYTES - 1) {
            throw new IllegalArgumentException("a field is wider than perftest's format allows: " + sb);
        }
        return Arrays.copyOf(ascii, KEY_BYTES);
    }

    /**
     * The 56-byte {@code struct pingpong_dest} of {@code rdma_write_keys} (x86-64 layout, fields big-endian):
     * lid, out_reads, qpn, psn, rkey (4 bytes each), 4 bytes of padding, vaddr (8), gid (16 raw bytes), srqn,
     * gid_index (4 each; perftest reads neither).
     */
    public static byte[] encodeBinaryKeys(Keys k) {
        ByteBuffer b = ByteBuffer.allocate(QpChannel.RECV_BYTES);
        b.putInt(k.lid()).putInt(k.outReads()).putInt(k.qpn()).putInt(k.psn()).putInt(k.rkey()).putInt(0).putLong(k.va());
        b.put(k.gid().raw()).putInt(k.srqn()).putInt(0);
        return b.array();
    }

    /** Parses {@link #encodeBinaryKeys}' layout as {@code rdma_read_keys} does (srqn and gid_index are not read). */
    public static Keys decodeBinaryKeys(byte[] msg) throws IOException {
        if (msg.length != QpChannel.RECV_BYTES) throw new IOException("perftest struct pingpong_dest has " + msg.length + " bytes, not 56");
        ByteBuffer b = ByteBuffer.wrap(msg);
        int lid = b.getInt(0);
        int outReads = b.getInt(4);
        int qpn = b.getInt(8);
        int psn = b.getInt(12);
        int rkey = b.getInt(16);
        long va = b.getLong(24);
        byte[] gid = Arrays.copyOfRange(msg, 32, 48);
        return new Keys(lid, outReads, qpn & 0xFFFFFF, psn & 0xFFFFFF, rkey, va, Gid.of(gid), 0);
    }

    /**
     * Parses a 108-byte key message the way {@code ethernet_read_keys} does: colon-separated hex fields (LID,
     * out_reads, QPN, PSN, rkey, VA, 16 GID bytes, SRQN).
     */
    public static Keys decodeKeys(byte[] msg) throws IOException {
        if (msg.length != KEY_BYTES) throw new IOException("perftest key message has " + msg.length + " bytes, not " + KEY_BYTES);
        int end = 0;
        while (end < msg.length && msg[end] != 0) end++;
        String text = new String(msg, 0, end, StandardCharsets.ISO_8859_1);
        String[] f = text.split(":", -1);
        // 6 fields + 16 GID bytes + SRQN + the empty string after the trailing ':'
        if (f.length != 24 || !f[23].isEmpty()) throw malformed(msg);
        try {
            int lid = (int) hex(f[0], 4);
            int outReads = (int) hex(f[1], 4);
            int qpn = (int) hex(f[2], 6);
            int psn = (int) hex(f[3], 6);
            int rkey = (int) hex(f[4], 8);
            long va = Long.parseUnsignedLong(check(f[5], 16), 16);
            byte[] gid = new byte[16];
            for (int i = 0; i < 16; i++) gid[i] = (byte) hex(f[6 + i], 2);
            int srqn = (int) hex(f[22], 8);
            return new Keys(lid, outReads, qpn, psn, rkey, va, Gid.of(gid), srqn);
        } catch (NumberFormatException e) {
            throw malformed(msg);
        }
    }

    private static long hex(String s, int maxDigits) {
        return Long.parseLong(check(s, maxDigits), 16);
    }

    private static String check(String s, int maxDigits) {
        if (s.isEmpty() || s.length() > maxDigits) throw new NumberFormatException(s);
        for (int i = 0; i < s.length(); i++) {
            if (Character.digit(s.charAt(i), 16) < 0) throw new NumberFormatException(s);
        }
        return s;
    }

    private static IOException malformed(byte[] msg) {
        return new IOException("malformed perftest key message \"" + RcPingpongHandshake.printable(msg)
                + "\" (expected LID:OUT_READS:QPN:PSN:RKEY:VA:16 GID bytes:SRQN:): the peer must use a GID (-x on RoCE) "
                + "and no --data_validation");
    }

    /** C's {@code atof} for version strings: the longest leading decimal number, 0 if none. */
    static double atof(String s) {
        int i = 0;
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
        int start = i;
        if (i < s.length() && (s.charAt(i) == '+' || s.charAt(i) == '-')) i++;
        boolean digits = false;
        while (i < s.length() && Character.isDigit(s.charAt(i))) { i++; digits = true; }
        if (i < s.length() && s.charAt(i) == '.') {
            i++;
            while (i < s.length() && Character.isDigit(s.charAt(i))) { i++; digits = true; }
        }
        if (!digits) return 0;
        try {
            return Double.parseDouble(s.substring(start, i));
        } catch (NumberFormatException e) {
            return 0;
        }
    }
}
