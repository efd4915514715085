package io.jroce.wire;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Hot-path costs for one RC_RDMA_WRITE_ONLY packet with a 4096-byte payload (UDP payload 4128 bytes) in
 * direct buffers, as a receiver gets them from a socket. Build with {@code mvn -o -Pbench -pl wire package}
 * and run {@code java -jar wire/target/benchmarks.jar}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class WireBenchmark {
    private static final int PAYLOAD = 4096;
    private static final Opcode OP = Opcode.RC_RDMA_WRITE_ONLY;
    private static final int LEN = OP.headerLength() + PAYLOAD + RoceV2.ICRC_LENGTH;
    private static final int SRC = 0x0A4D000B; // 10.77.0.11
    private static final int DST = 0x0A4D000C;
    private static final int SPORT = RoceV2.flowLabelSourcePort(0x25, 0x23);

    private final RocePacket packet = new RocePacket();
    private final Icrc icrc = new Icrc();
    private final BthView bth = new BthView();
    private final RethView reth = new RethView();
    private final CRC32 crc = new CRC32();

    private ByteBuf id0;        // sent with IPv4 ID 0 + DF, as jroce sends
    private ByteBuf idNonZero;  // sent with a kernel-chosen ID, as rxe sends
    private ByteBuf out;        // encode target
    private ByteBuffer crcView; // the covered bytes of id0 after the BTH, for CRC32 alone
    private int psn;

    @Setup(Level.Trial)
    public void setUp() {
        id0 = build(0);
        idNonZero = build(0x718c);
        out = build(0);
        crcView = id0.nioBuffer(0, LEN - RoceV2.ICRC_LENGTH);
        if (icrc.verifyIpv4UnknownId(SRC, DST, SPORT, RoceV2.UDP_PORT, idNonZero, 0, LEN) != 0x718c) {
            throw new IllegalStateException("setup: ID not recovered");
        }
    }

    private ByteBuf build(int ipId) {
        ByteBuf b = Unpooled.directBuffer(LEN, LEN);
        for (int i = 0; i < LEN; i++) {
            b.setByte(i, i * 31);
        }
        bth.wrap(b, 0).write(OP.code(), false, false, 0, RoceV2.DEFAULT_PKEY, 0x23, true, 0x123456);
        reth.wrap(b, OP.rethOffset()).write(0x7f3a5c001000L, 0x1a2b3, PAYLOAD);
        icrc.writeIpv4(SRC, DST, ipId, Icrc.IPV4_DF, SPORT, RoceV2.UDP_PORT, b, 0, LEN);
        return b;
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        id0.release();
        idNonZero.release();
        out.release();
    }

    /** Header decode only. */
    @Benchmark
    public int decode() {
        packet.decode(id0, 0, LEN);
        return packet.payloadLength() + packet.reth().rkey();
    }

    /** Decode + receive-side ICRC check, fast path: ID 0 with DF is one CRC pass. */
    @Benchmark
    public int decodeVerifyId0() {
        packet.decode(id0, 0, LEN);
        return packet.payloadLength() + icrc.verifyIpv4UnknownId(SRC, DST, SPORT, RoceV2.UDP_PORT, id0, 0, LEN);
    }

    /** Decode + receive-side ICRC check with a non-zero IPv4 ID: one CRC pass plus solving for the ID. */
    @Benchmark
    public int decodeVerifyNonZeroId() {
        packet.decode(idNonZero, 0, LEN);
        return packet.payloadLength() + icrc.verifyIpv4UnknownId(SRC, DST, SPORT, RoceV2.UDP_PORT, idNonZero, 0, LEN);
    }

    /** Send side: BTH + RETH write and the ICRC over the 4 KiB packet. */
    @Benchmark
    public int encodeHeadersAndIcrc() {
        psn = Psn.next(psn);
        bth.wrap(out, 0).write(OP.code(), false, false, 0, RoceV2.DEFAULT_PKEY, 0x23, true, psn);
        reth.wrap(out, OP.rethOffset()).write(0x7f3a5c001000L, 0x1a2b3, PAYLOAD);
        icrc.writeIpv4(SRC, DST, 0, Icrc.IPV4_DF, SPORT, RoceV2.UDP_PORT, out, 0, LEN);
        return out.getIntLE(LEN - 4);
    }

    /** java.util.zip.CRC32 alone over the same 4124 bytes: the floor for any ICRC computation. */
    @Benchmark
    public long crc32Only() {
        crc.reset();
        crcView.position(0);
        crc.update(crcView);
        return crc.getValue();
    }
}
