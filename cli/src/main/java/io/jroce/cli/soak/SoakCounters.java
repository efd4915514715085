package io.jroce.cli.soak;

import java.io.PrintWriter;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * What one side verified (messages and bytes per operation), how many verifications failed and how many
 * completions came back with an error. Written by the side's driver thread, read by the thread that reports.
 * The first {@link #SHOWN} failures are printed, one line each; the rest are counted.
 */
final class SoakCounters {
    static final int SHOWN = 20;

    private final AtomicLongArray messages = new AtomicLongArray(SoakOp.ALL.length);
    private final AtomicLongArray bytes = new AtomicLongArray(SoakOp.ALL.length);
    private final AtomicLong failures = new AtomicLong();
    private final AtomicLong errorCompletions = new AtomicLong();
    private final PrintWriter err;
    private final String side;

    SoakCounters(PrintWriter err, String side) {
        this.err = err;
        this.side = side;
    }

    void verified(SoakOp op, long len) {
        messages.incrementAndGet(op.ordinal());
        bytes.addAndGet(op.ordinal(), len);
    }

    /** A message that is not what was sent: printed (the first {@link #SHOWN}) and counted. */
    void failed(int qp, SoakOp op, long round, String what) {
        long n = failures.incrementAndGet();
        if (n <= SHOWN) {
            synchronized (err) {
                err.println("jroce soak: " + side + ": VERIFICATION FAILED on QP " + qp + ", " + op + " of round " + round + ": " + what);
                if (n == SHOWN) err.println("jroce soak: " + side + ": further failures are counted, not shown");
                err.flush();
            }
        }
    }

    /** A completion with an error status: the QP is in the error state from then on. */
    void errorCompletion(int qp, String what) {
        long n = errorCompletions.incrementAndGet();
        if (n <= SHOWN) {
            synchronized (err) {
                err.println("jroce soak: " + side + ": QP " + qp + " failed: " + what);
                err.flush();
            }
        }
    }

    long messages(SoakOp op) {
        return messages.get(op.ordinal());
    }

    long bytes(SoakOp op) {
        return bytes.get(op.ordinal());
    }

    long failures() {
        return failures.get();
    }

    long errorCompletions() {
        return errorCompletions.get();
    }
}
