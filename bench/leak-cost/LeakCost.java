import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetector.Level;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * What Netty's leak detection costs per packet buffer: allocates, fills and releases pooled direct
 * buffers of one RoCE packet (4128 bytes: a WRITE ONLY with 4096 payload bytes) as jroce's transmit path
 * does, with the detector at Netty's default level (SIMPLE) and DISABLED, alternating, several rounds.
 * Times are the thread's CPU time, so that other processes on a loaded machine count less.
 *
 *   java -cp cli/target/jroce.jar bench/leak-cost/LeakCost.java [rounds] [buffers per round]
 */
public final class LeakCost {
    public static void main(String[] args) {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 2_000_000;
        PooledByteBufAllocator alloc = PooledByteBufAllocator.DEFAULT;
        Level[] levels = {Level.SIMPLE, Level.DISABLED};
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long sink = 0;
        for (int r = -1; r < rounds; r++) { // round -1 warms up the JIT and the pool
            StringBuilder line = new StringBuilder(r < 0 ? "warm-up" : "round " + r);
            for (Level level : levels) {
                ResourceLeakDetector.setLevel(level);
                long t0 = mx.getCurrentThreadCpuTime();
                for (int i = 0; i < n; i++) {
                    ByteBuf b = alloc.directBuffer(4128, 4128);
                    b.writeLong(i);
                    b.writerIndex(4128);
                    sink += b.getByte(4);
                    b.release();
                }
                long ns = mx.getCurrentThreadCpuTime() - t0;
                line.append(String.format("  %s %.1f CPU ns/buffer", level, (double) ns / n));
            }
            System.out.println(line);
        }
        if (sink == 42) System.out.println();
    }
}
