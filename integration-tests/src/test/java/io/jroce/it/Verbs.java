package io.jroce.it;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.QpAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.RcConnect;
import io.jroce.endpoint.WorkCompletion;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.fail;

/** Small verbs helpers for the in-JVM integration tests (connect RC QPs, wait for completions, poll with deadlines). */
final class Verbs {
    static final int QP_ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;

    private Verbs() {
    }

    static InetAddress addr(String s) {
        try {
            return InetAddress.getByName(s);
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    static int ipv4(InetAddress a) {
        byte[] b = a.getAddress();
        return (b[0] & 0xFF) << 24 | (b[1] & 0xFF) << 16 | (b[2] & 0xFF) << 8 | (b[3] & 0xFF);
    }

    /** RESET -> INIT -> RTR -> RTS towards {@code peer:peerPort} QPN {@code peerQpn}. */
    static void bringUp(QueuePair qp, InetAddress peer, int peerPort, int peerQpn, Mtu mtu, int rqPsn, int sqPsn, int rdAtomic) {
        bringUp(qp, peer, peerPort, peerQpn, mtu, rqPsn, sqPsn, rdAtomic, 14);
    }

    static void bringUp(QueuePair qp, InetAddress peer, int peerPort, int peerQpn, Mtu mtu, int rqPsn, int sqPsn, int rdAtomic, int timeout) {
        RcConnect.connect(qp, new RcConnect.Peer(peer, peerPort, peerQpn, rqPsn), sqPsn,
                RcConnect.Params.defaults().mtu(mtu).rdAtomic(rdAtomic).minRnrTimer(1).timeout(timeout).accessFlags(QP_ACCESS));
    }

    static void connect(QueuePair a, QueuePair b, Mtu mtu, int psnA, int psnB, int rdAtomic) {
        connect(a, b, mtu, psnA, psnB, rdAtomic, 14);
    }

    static void connect(QueuePair a, QueuePair b, Mtu mtu, int psnA, int psnB, int rdAtomic, int timeout) {
        Device da = a.device();
        Device db = b.device();
        bringUp(a, db.address(), db.port(), b.qpNum(), mtu, psnB, psnA, rdAtomic, timeout);
        bringUp(b, da.address(), da.port(), a.qpNum(), mtu, psnA, psnB, rdAtomic, timeout);
    }

    /** Waits for {@code n} completions; fails after the timeout. */
    static List<WorkCompletion> await(CompletionQueue cq, int n, long timeoutMs) {
        try {
            List<WorkCompletion> got = cq.poll(n, timeoutMs, TimeUnit.MILLISECONDS);
            if (got.size() < n) fail("timed out waiting for " + n + " completions, got " + got);
            return got;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** Polls {@code cond} until true or the deadline; returns the final value (never sleeps longer than 1 ms per round). */
    static boolean waitFor(BooleanSupplier cond, long timeoutMs) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) return cond.getAsBoolean();
            java.util.concurrent.locks.LockSupport.parkNanos(200_000);
        }
        return true;
    }

    /** Heap in use after a few GCs (best effort). */
    static long usedHeapAfterGc() {
        Runtime rt = Runtime.getRuntime();
        long best = Long.MAX_VALUE;
        for (int i = 0; i < 4; i++) {
            System.gc();
            best = Math.min(best, rt.totalMemory() - rt.freeMemory());
        }
        return best;
    }
}
