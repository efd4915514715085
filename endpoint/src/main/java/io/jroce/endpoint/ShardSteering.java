package io.jroce.endpoint;

import io.netty.channel.Channel;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.unix.Buffer;
import io.netty.channel.unix.RawUnixChannelOption;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Has the kernel deliver each datagram of a device with several event loops to the socket of the shard that owns
 * its destination QP ({@link Shards#ownerIndex}), so that no shard reads a datagram it must hand over
 * ({@link ShardRouter}). A classic BPF program is attached to the shards' {@code SO_REUSEPORT} group with
 * {@code setsockopt(SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF)}; for each datagram it returns the index of the socket
 * that gets it. How the kernel runs it (Linux net/core/sock_reuseport.c):
 * <ul>
 *   <li>{@code reuseport_select_sock} runs the group's program on every datagram for an unconnected socket of the
 *       group (net/ipv4/udp.c {@code udp4_lib_lookup2} and net/ipv6/udp.c {@code udp6_lib_lookup2} call
 *       {@code inet_lookup_reuseport} / {@code inet6_lookup_reuseport} with {@code hdr_len = sizeof(struct udphdr)});</li>
 *   <li>{@code run_bpf_filter} pulls the UDP header first, so the program sees the UDP payload from offset 0: the
 *       BTH, whose 32-bit big-endian word at offset 4 holds the destination QP in its low 24 bits (IBA 9.2);</li>
 *   <li>the index picks {@code reuse->socks[index]}, the sockets in the order they joined the group
 *       ({@code __reuseport_add_sock} appends; a socket that leaves is replaced by the last, which only happens
 *       when the device closes). Shard i binds i-th, so index i is shard i's socket;</li>
 *   <li>an index at or past the group's size falls back to the 4-tuple hash ({@code reuseport_select_sock_by_hash});
 *       a datagram shorter than 8 bytes fails the load, which ends a classic program with 0: shard 0 drops it as
 *       malformed.</li>
 * </ul>
 * The program: {@code A = word[4] & 0xFFFFFF; return A == 1 ? 0 : A % count} (QP 1, the GSI, is shard 0's). The
 * kernel copies it at attach ({@code sk_reuseport_attach_filter}), and the program belongs to the group, not to the
 * socket it was set on.
 *
 * <p>{@link ShardRouter} stays on as the fallback: datagrams read before the program is attached, segments of a
 * coalesced UDP GRO read (one read, possibly several QPs), and devices where steering is off or refused all still
 * reach their owner by hand-off. Needs the epoll transport and a 64-bit JVM (the {@code struct sock_fprog} layout
 * built here: a {@code u16} length, padding to 8, a pointer).
 */
final class ShardSteering {
    /** SOL_SOCKET (1), SO_ATTACH_REUSEPORT_CBPF (51): asm-generic/socket.h. */
    private static final int SOL_SOCKET = 1;
    private static final int SO_ATTACH_REUSEPORT_CBPF = 51;
    /** struct sock_fprog on a 64-bit ABI: u16 len, 6 bytes padding, struct sock_filter *filter. */
    static final int FPROG_BYTES = 16;
    /** struct sock_filter: u16 code, u8 jt, u8 jf, u32 k. */
    static final int INSN_BYTES = 8;
    private static final RawUnixChannelOption ATTACH =
            new RawUnixChannelOption("SO_ATTACH_REUSEPORT_CBPF", SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, FPROG_BYTES);

    // classic BPF opcodes (linux/bpf_common.h)
    static final int LD_W_ABS = 0x00 | 0x00 | 0x20;  // BPF_LD | BPF_W | BPF_ABS
    static final int AND_K = 0x04 | 0x50 | 0x00;     // BPF_ALU | BPF_AND | BPF_K
    static final int JEQ_K = 0x05 | 0x10 | 0x00;     // BPF_JMP | BPF_JEQ | BPF_K
    static final int RET_K = 0x06 | 0x00;            // BPF_RET | BPF_K
    static final int MOD_K = 0x04 | 0x90 | 0x00;     // BPF_ALU | BPF_MOD | BPF_K
    static final int RET_A = 0x06 | 0x10;            // BPF_RET | BPF_A

    /** The system property that turns steering off ({@code jroce.steer=false}): to measure the hand-off path. */
    static final String PROPERTY = "jroce.steer";

    private ShardSteering() {
    }

    /** The program's instructions for {@code count} shards, as {@code {code, jt, jf, k}} rows. */
    static int[][] instructions(int count) {
        if (count < 2) throw new IllegalArgumentException("steering needs two shards or more, not " + count);
        return new int[][] {
                {LD_W_ABS, 0, 0, 4},         // A = the BTH's second word (big-endian): reserved byte, destination QP
                {AND_K, 0, 0, 0xFF_FFFF},    // A = the destination QP
                {JEQ_K, 0, 1, Device.GSI_QPN}, // QP 1: next instruction, else skip it
                {RET_K, 0, 0, 0},            // the GSI is shard 0's
                {MOD_K, 0, 0, count},        // others: QP number modulo the shard count
                {RET_A, 0, 0, 0},
        };
    }

    /** The instructions as an array of {@code struct sock_filter} in native byte order. */
    static ByteBuffer program(int count) {
        int[][] insns = instructions(count);
        ByteBuffer b = ByteBuffer.allocateDirect(insns.length * INSN_BYTES).order(ByteOrder.nativeOrder());
        for (int[] i : insns) {
            b.putShort((short) i[0]).put((byte) i[1]).put((byte) i[2]).putInt(i[3]);
        }
        return b.flip();
    }

    /**
     * Attaches the program for {@code count} shards to the reuseport group of {@code channel} (a bound epoll
     * datagram channel of the group) and returns null, or returns why it could not.
     */
    static String attach(Channel channel, int count) {
        if (!(channel instanceof EpollDatagramChannel)) return "not an epoll socket";
        ByteBuffer program = program(count);
        ByteBuffer fprog = ByteBuffer.allocateDirect(FPROG_BYTES).order(ByteOrder.nativeOrder());
        try {
            int addressSize = Buffer.addressSize();
            if (addressSize != 8) return "a " + (addressSize * 8) + "-bit JVM (struct sock_fprog is built for 64-bit)";
            fprog.putShort(0, (short) (program.remaining() / INSN_BYTES));
            fprog.putLong(8, Buffer.memoryAddress(program)); // the kernel copies the instructions from here
            channel.config().setOption(ATTACH, fprog);
            return null;
        } catch (RuntimeException | LinkageError e) { // ChannelException(errno), or no native address support
            return e.getCause() != null ? e.getCause().toString() : e.toString();
        } finally {
            Reference.reachabilityFence(program); // the kernel read it through a raw address during the call
        }
    }
}
