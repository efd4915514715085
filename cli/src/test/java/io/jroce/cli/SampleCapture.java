package io.jroce.cli;

import io.jroce.wire.AethView;
import io.jroce.wire.Aeth;
import io.jroce.wire.AtomicAckEthView;
import io.jroce.wire.AtomicEthView;
import io.jroce.wire.BthView;
import io.jroce.wire.Icrc;
import io.jroce.wire.Opcode;
import io.jroce.wire.RethView;
import io.jroce.wire.RoceV2;
import io.jroce.wire.pcap.PcapWriter;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.function.Consumer;

/**
 * Builds {@code cli/examples/sample.pcap}: a small RC exchange between 127.0.0.1 (QPN 0x11) and 127.0.0.2
 * (QPN 0x12), PMTU 256, IPv4 ID 0 with DF, correct ICRCs, fixed timestamps (byte-reproducible):
 *
 * <ol>
 *   <li>SEND_ONLY (30 bytes, pad 2) and its ACK;</li>
 *   <li>RDMA WRITE of 600 bytes as FIRST/MIDDLE/LAST (256+256+88) and the ACK of the LAST;</li>
 *   <li>RDMA READ_REQUEST of 64 bytes and READ_RESPONSE_ONLY;</li>
 *   <li>FETCH_ADD (+1) and ATOMIC_ACKNOWLEDGE with the original value.</li>
 * </ol>
 *
 * {@code SampleCaptureTest} checks that the committed file equals {@link #build()}. To regenerate it after a
 * deliberate change: {@code mvn -o -pl cli test -Dtest=SampleCaptureTest -Djroce.regenerateSample=true}.
 */
public final class SampleCapture {
    static final int A = 0x7F000001;       // 127.0.0.1, requester
    static final int B = 0x7F000002;       // 127.0.0.2, responder
    static final int QPN_A = 0x000011;
    static final int QPN_B = 0x000012;
    static final int PMTU = 256;
    static final long T0 = 1_704_067_200_000_000_000L; // 2024-01-01T00:00:00Z
    static final long STEP = 100_000L;                  // 100 us between packets
    static final int PSN_A = 0x000100;                  // the requester's first PSN
    static final long VA = 0x00007f3a5c000000L;
    static final int RKEY = 0x00001234;

    /** Both directions of an RC connection use one UDP source port (rdma_get_udp_sport(0, lqpn, rqpn)). */
    static int rcSourcePort(int lqpn, int rqpn) {
        long v = (long) lqpn * rqpn;
        v ^= v >>> 20;
        v ^= v >>> 40;
        int fl = (int) (v & 0xFFFFF);
        return 0xC000 | ((fl & 0x3FFF) ^ ((fl & 0xFC000) >>> 14));
    }

    private final PcapWriter writer;
    private final Icrc icrc = new Icrc();
    private final BthView bth = new BthView();
    private long time = T0;

    private SampleCapture(PcapWriter writer) {
        this.writer = writer;
    }

    /** The capture file's bytes. */
    static byte[] build() throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PcapWriter w = new PcapWriter(bytes)) {
            new SampleCapture(w).exchange();
        }
        return bytes.toByteArray();
    }

    private void exchange() throws IOException {
        int psn = PSN_A;
        int msn = 0;
        // 1. SEND_ONLY + ACK
        byte[] hello = "hello from jroce over RoCEv2!\n".getBytes(StandardCharsets.US_ASCII);
        request(Opcode.RC_SEND_ONLY, true, psn, hello, b -> { });
        ack(psn, ++msn);
        psn++;
        // 2. RDMA WRITE of 600 bytes: FIRST (RETH) / MIDDLE / LAST, then the ACK of the LAST
        byte[] data = pattern(600, 0x10);
        int first = psn;
        request(Opcode.RC_RDMA_WRITE_FIRST, false, psn++, slice(data, 0, PMTU),
                b -> new RethView().wrap(b, Opcode.RC_RDMA_WRITE_FIRST.rethOffset()).write(VA, RKEY, data.length));
        request(Opcode.RC_RDMA_WRITE_MIDDLE, false, psn++, slice(data, PMTU, PMTU), b -> { });
        request(Opcode.RC_RDMA_WRITE_LAST, true, psn, slice(data, 2 * PMTU, data.length - 2 * PMTU), b -> { });
        ack(psn, ++msn);
        psn++;
        assert psn == first + 3;
        // 3. RDMA READ of 64 bytes (one response packet, one PSN)
        int readPsn = psn;
        request(Opcode.RC_RDMA_READ_REQUEST, true, psn, new byte[0],
                b -> new RethView().wrap(b, Opcode.RC_RDMA_READ_REQUEST.rethOffset()).write(VA + 0x400, RKEY, 64));
        int readMsn = ++msn;
        response(Opcode.RC_RDMA_READ_RESPONSE_ONLY, readPsn, pattern(64, 0xA0),
                b -> new AethView().wrap(b, Opcode.RC_RDMA_READ_RESPONSE_ONLY.aethOffset()).write(Aeth.ACK_UNLIMITED, readMsn));
        psn++;
        // 4. FETCH_ADD +1 on an 8-byte-aligned counter holding 41; ATOMIC_ACKNOWLEDGE returns 41
        int atomicPsn = psn;
        request(Opcode.RC_FETCH_ADD, true, psn, new byte[0],
                b -> new AtomicEthView().wrap(b, Opcode.RC_FETCH_ADD.atomicEthOffset()).write(VA + 0x800, RKEY, 1L, 0L));
        int atomicMsn = ++msn;
        response(Opcode.RC_ATOMIC_ACKNOWLEDGE, atomicPsn, new byte[0], b -> {
            new AethView().wrap(b, Opcode.RC_ATOMIC_ACKNOWLEDGE.aethOffset()).write(Aeth.ACK_UNLIMITED, atomicMsn);
            new AtomicAckEthView().wrap(b, Opcode.RC_ATOMIC_ACKNOWLEDGE.atomicAckEthOffset()).originalData(41L);
        });
    }

    private void request(Opcode op, boolean last, int psn, byte[] payload, Consumer<ByteBuf> ext) throws IOException {
        packet(A, B, QPN_B, op, last, psn, payload, ext);
    }

    private void response(Opcode op, int psn, byte[] payload, Consumer<ByteBuf> ext) throws IOException {
        packet(B, A, QPN_A, op, false, psn, payload, ext);
    }

    private void ack(int psn, int msn) throws IOException {
        response(Opcode.RC_ACKNOWLEDGE, psn, new byte[0],
                b -> new AethView().wrap(b, Opcode.RC_ACKNOWLEDGE.aethOffset()).write(Aeth.ACK_UNLIMITED, msn));
    }

    /** BTH + extension headers + payload + pad + ICRC, wrapped in Ethernet/IPv4 (ID 0, DF)/UDP. */
    private void packet(int src, int dst, int destQp, Opcode op, boolean ackReq, int psn, byte[] payload,
                        Consumer<ByteBuf> ext) throws IOException {
        int pad = -payload.length & 3;
        int len = op.headerLength() + payload.length + pad + 4;
        ByteBuf b = Unpooled.buffer(len).writeZero(len);
        bth.wrap(b, 0).write(op.code(), false, false, pad, 0xFFFF, destQp, ackReq, psn);
        ext.accept(b);
        b.setBytes(op.headerLength(), payload);
        int sport = rcSourcePort(QPN_A, QPN_B);
        icrc.writeIpv4(src, dst, 0, Icrc.IPV4_DF, sport, RoceV2.UDP_PORT, b, 0, len);
        writer.writeUdpIpv4(time, src, sport, dst, RoceV2.UDP_PORT, 0, Icrc.IPV4_DF, b, 0, len);
        time += STEP;
    }

    private static byte[] pattern(int n, int seed) {
        byte[] d = new byte[n];
        for (int i = 0; i < n; i++) {
            d[i] = (byte) (seed + i);
        }
        return d;
    }

    private static byte[] slice(byte[] d, int off, int n) {
        byte[] s = new byte[n];
        System.arraycopy(d, off, s, 0, n);
        return s;
    }

    /** The committed file: cli/examples/sample.pcap (works from the cli module or the repository root). */
    public static Path committedFile() {
        Path p = Paths.get("examples/sample.pcap");
        return Files.isDirectory(Paths.get("examples")) ? p : Paths.get("cli/examples/sample.pcap");
    }

    /** Writes the sample to {@code args[0]}, or to the committed location. */
    public static void main(String[] args) throws IOException {
        Path out = args.length > 0 ? Paths.get(args[0]) : committedFile();
        Files.write(out, build());
        System.out.println("wrote " + out.toAbsolutePath());
    }
}
