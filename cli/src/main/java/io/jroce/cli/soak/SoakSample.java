package io.jroce.cli.soak;

import io.jroce.endpoint.Device;
import io.jroce.endpoint.QpCounters;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QueuePair;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * One side's figures at one moment, cumulative since the traffic began: its process's memory, its device's
 * retransmissions, what it verified and what failed. Retransmissions are the device's Go-Back-N rewinds and
 * ACK timeouts (counter {@code retransmits}) plus every QP's tail-loss probes and selective resends (with the
 * jroce extensions a lost packet is resent alone, and the device counter sees only the timeouts). The heap is measured after a full collection
 * ({@link System#gc()}, a stop-the-world collection under G1 unless the JVM runs with
 * {@code -XX:+ExplicitGCInvokesConcurrent} or ignores it with {@code -XX:+DisableExplicitGC}), so it is the
 * live set, not the garbage of the moment; the RSS is the kernel's VmRSS of the process.
 */
record SoakSample(long rssBytes, long heapAfterGcBytes, long retransmits, long failures, long errorCompletions, int qpsInError,
                  long[] messages, long[] bytes) {

    /** Takes the sample: a full collection first, then the heap in use and the RSS. */
    static SoakSample take(Device dev, List<QueuePair> qps, SoakCounters c) {
        System.gc();
        long heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        long[] m = new long[SoakOp.ALL.length];
        long[] b = new long[SoakOp.ALL.length];
        for (SoakOp op : SoakOp.ALL) {
            m[op.ordinal()] = c.messages(op);
            b[op.ordinal()] = c.bytes(op);
        }
        int inError = 0;
        long retransmissions = dev.counters().retransmits;
        for (QueuePair qp : qps) {
            if (qp.state() == QpState.ERR) inError++;
            QpCounters qc = qp.counters();
            retransmissions += qc.probes + qc.selectiveRetransmits;
        }
        return new SoakSample(rss(), heap, retransmissions, c.failures(), c.errorCompletions(), inError, m, b);
    }

    /** VmRSS of this process from /proc/self/status, in bytes; -1 where there is none. */
    static long rss() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    String[] f = line.substring(6).trim().split("\\s+");
                    return Long.parseLong(f[0]) * 1024; // the kernel prints kB
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }

    long messages(SoakOp op) {
        return messages[op.ordinal()];
    }

    long bytes(SoakOp op) {
        return bytes[op.ordinal()];
    }

    void write(DataOutputStream out) throws IOException {
        out.writeLong(rssBytes);
        out.writeLong(heapAfterGcBytes);
        out.writeLong(retransmits);
        out.writeLong(failures);
        out.writeLong(errorCompletions);
        out.writeInt(qpsInError);
        for (SoakOp op : SoakOp.ALL) {
            out.writeLong(messages[op.ordinal()]);
            out.writeLong(bytes[op.ordinal()]);
        }
    }

    static SoakSample read(DataInputStream in) throws IOException {
        long rss = in.readLong();
        long heap = in.readLong();
        long retx = in.readLong();
        long failures = in.readLong();
        long errors = in.readLong();
        int inError = in.readInt();
        long[] m = new long[SoakOp.ALL.length];
        long[] b = new long[SoakOp.ALL.length];
        for (SoakOp op : SoakOp.ALL) {
            m[op.ordinal()] = in.readLong();
            b[op.ordinal()] = in.readLong();
        }
        return new SoakSample(rss, heap, retx, failures, errors, inError, m, b);
    }
}
