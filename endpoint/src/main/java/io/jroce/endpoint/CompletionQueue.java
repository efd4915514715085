package io.jroce.endpoint;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A completion queue: a ring of fixed depth that the device's event loop fills and application threads
 * poll. Entries are stored as parallel arrays and copied into caller-owned {@link WorkCompletion}s, so
 * neither side allocates per completion.
 *
 * <p>Overflow is an error, never a silent drop: when the ring is full the CQ is marked overrun, the QP
 * whose completion did not fit goes to the error state (IBA 11.4.2.1: a CQ overrun is an affiliated
 * error), and {@link #poll} throws once the entries that did fit have been read.
 *
 * <p>Polling takes no lock: pollers copy completions out and claim them with one compare-and-set of the consumer
 * index, so several threads may poll one CQ. On a device with several event loops the queue pairs of one CQ may
 * belong to different loops: producers then take {@link #pushLock} (a short, rarely contended section); with one
 * loop, the default, the single producer takes none. A poller that found nothing for its spin time parks on
 * {@link #signal}, and only then does a producer take that monitor to wake it.
 */
public final class CompletionQueue {
    private final Device device;
    private final long spinNanos;
    private final int depth;
    private final int mask;
    private final long[] wrId;
    private final byte[] status;
    private final byte[] opcode;
    private final int[] byteLen;
    private final int[] immOrInv;
    private final int[] qpNum;
    private final int[] flags;
    private final int[] srcQp;
    private final int[] srcPort;
    private final int[] vendorErr;

    /** Next slot the producer (the event loop) writes. */
    private volatile long tail;
    /** Next slot a consumer reads. */
    private volatile long head;
    private volatile boolean overrun;
    private volatile String overrunDetail;

    private final Object signal = new Object();
    private volatile int waiters;
    private volatile int armed; // 0 none, 1 any completion, 2 solicited only
    private long events;        // guarded by signal
    private volatile Runnable listener;
    /** Non-null when several event loops may produce (a device with more than one shard). */
    private final Object pushLock;
    /** The device's agent when its threads run it ({@link AgentMode#INVOKED}): polls drive it; else null. */
    private final DeviceAgent agent;

    /**
     * How long a waiting poll of a dedicated device spins before it parks (system property jroce.cq.spinMicros,
     * default 300). The spin yields the core on every empty look, so that the device's own thread runs at once when
     * it shares that core. Measured on a 2-core VM, a 64-byte SEND between two dedicated processes: with 50 us of
     * spinning without yielding, every wait parked and had to be woken (half round trip 92-113 us typical, 229-317
     * us at the 99th percentile); with 300 us of yielding spin, 51-54 and 110-115 us (the performance report, "A
     * dedicated poll that yields").
     */
    static final long SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(Long.getLong("jroce.cq.spinMicros", 300));
    /**
     * How long a waiting poll of an invoked device ({@link AgentMode#INVOKED}) runs the device without blocking
     * before it blocks in {@code epoll_wait} (system property jroce.cq.invokedSpinMicros, default 1000), as perftest
     * and ibv_rc_pingpong poll their CQs: measured on a 2-core VM, a 64-byte SEND round trip between two invoked
     * processes took 166-195 us when each wait blocked at once, 58-72 us with 200 us of spinning and 36 us with
     * 1000 (the performance report, "Run to completion").
     */
    static final long INVOKED_SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(Long.getLong("jroce.cq.invokedSpinMicros", 1000));
    private static final WcStatus[] STATUSES = WcStatus.values();
    private static final WcOpcode[] OPCODES = WcOpcode.values();
    private static final VarHandle HEAD;

    static {
        try {
            HEAD = MethodHandles.lookup().findVarHandle(CompletionQueue.class, "head", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    CompletionQueue(Device device, int requestedDepth) {
        if (requestedDepth < 1 || requestedDepth > (1 << 22)) {
            throw new IllegalArgumentException("CQ depth must be 1..4194304, not " + requestedDepth);
        }
        this.device = device;
        this.spinNanos = device.cqSpinNanos();
        this.pushLock = device.eventLoops() > 1 ? new Object() : null;
        DeviceAgent a = device.transport().agent();
        this.agent = a.invoked() ? a : null;
        this.depth = requestedDepth;
        int slots = Integer.highestOneBit(Math.max(1, requestedDepth - 1)) << 1;
        this.mask = slots - 1;
        this.wrId = new long[slots];
        this.status = new byte[slots];
        this.opcode = new byte[slots];
        this.byteLen = new int[slots];
        this.immOrInv = new int[slots];
        this.qpNum = new int[slots];
        this.flags = new int[slots];
        this.srcQp = new int[slots];
        this.srcPort = new int[slots];
        this.vendorErr = new int[slots];
    }

    public Device device() {
        return device;
    }

    /** How many completions the queue holds before it overruns. */
    public int depth() {
        return depth;
    }

    public boolean isOverrun() {
        return overrun;
    }

    /** Entries waiting to be polled. */
    public int size() {
        return (int) (tail - head);
    }

    /**
     * Produces one completion. Called on the event loop only (single producer; with several loops, under the lock).
     *
     * @return false if the queue was full: the CQ is now overrun and the caller must fail its QP
     */
    boolean push(long id, WcStatus st, WcOpcode op, int len, int immInv, int qpn, int fl, int vendor, boolean solicited) {
        return push(id, st, op, len, immInv, qpn, fl, vendor, solicited, 0, 0);
    }

    /** {@link #push} with the UD source QP number and UDP source port of a receive completion. */
    boolean push(long id, WcStatus st, WcOpcode op, int len, int immInv, int qpn, int fl, int vendor, boolean solicited, int src,
                 int sport) {
        int r;
        if (pushLock == null) {
            r = pushOne(id, st, op, len, immInv, qpn, fl, vendor, solicited, src, sport);
        } else {
            synchronized (pushLock) {
                r = pushOne(id, st, op, len, immInv, qpn, fl, vendor, solicited, src, sport);
            }
        }
        // the user's callbacks run outside the producers' lock
        if ((r & OVERRUN_NOW) != 0) device.asyncEvent(AsyncEvent.CQ_ERR, this, null, overrunDetail);
        if ((r & EVENT) != 0) {
            Runnable l = listener;
            if (l != null) l.run();
        }
        return (r & PUSHED) != 0;
    }

    private static final int PUSHED = 1;
    private static final int EVENT = 2;
    private static final int OVERRUN_NOW = 4;

    /** Stores one completion and wakes waiters; returns {@link #PUSHED}, {@link #EVENT} and {@link #OVERRUN_NOW} bits. */
    private int pushOne(long id, WcStatus st, WcOpcode op, int len, int immInv, int qpn, int fl, int vendor, boolean solicited,
                        int src, int sport) {
        long t = tail;
        if (t - head >= depth || overrun) {
            int r = 0;
            if (!overrun) {
                overrunDetail = "completion queue overrun: depth " + depth + " was full when QP 0x" + Integer.toHexString(qpn)
                        + " completed wr_id " + id + " (" + st + "); poll more often or create a deeper CQ";
                overrun = true;
                r = OVERRUN_NOW;
            }
            return r | wake(true);
        }
        int i = (int) t & mask;
        wrId[i] = id;
        status[i] = (byte) st.ordinal();
        opcode[i] = op == null ? -1 : (byte) op.ordinal();
        byteLen[i] = len;
        immOrInv[i] = immInv;
        qpNum[i] = qpn;
        flags[i] = fl;
        srcQp[i] = src;
        srcPort[i] = sport;
        vendorErr[i] = vendor;
        tail = t + 1; // volatile write publishes the slot
        return PUSHED | wake(solicited || st != WcStatus.SUCCESS);
    }

    /** Wakes waiters; returns {@link #EVENT} when an armed notification fires (the caller runs the listener). */
    private int wake(boolean solicitedOrError) {
        int a = armed;
        boolean event = a == 1 || (a == 2 && solicitedOrError);
        if (event) armed = 0;
        if (event || waiters > 0) {
            synchronized (signal) {
                if (event) events++;
                signal.notifyAll();
            }
        }
        return event ? EVENT : 0;
    }

    /**
     * Copies up to {@code out.length} completions into {@code out} (the array's slots are filled in place,
     * created if null) and returns how many.
     *
     * @throws VerbsException when the queue overran and every stored completion has been read
     */
    public int poll(WorkCompletion[] out) {
        return poll(out, out.length);
    }

    public int poll(WorkCompletion[] out, int max) {
        // invoked device: an empty queue runs one non-blocking cycle of the device first (the poll is the driver)
        if (agent != null && tail == head) agent.drive(0);
        return take(out, max);
    }

    /**
     * Copies what is there and then moves {@link #head} past it with one compare-and-set; when another poller moved it
     * first, the copy may hold slots the producer has since reused, so it is made again. No lock: a poller is never
     * held up by another that was descheduled.
     */
    private int take(WorkCompletion[] out, int max) {
        while (true) {
            long h = head;
            int n = copy(h, out, max);
            if (n == 0) {
                if (overrun) throw new VerbsException(overrunDetail);
                return 0;
            }
            if (HEAD.compareAndSet(this, h, h + n)) return n;
        }
    }

    /** Copies up to {@code max} completions from index {@code h} on into {@code out}; returns how many. */
    private int copy(long h, WorkCompletion[] out, int max) {
        long available = tail - h;
        int n = (int) Math.min(available, Math.min(max, out.length));
        for (int k = 0; k < n; k++) {
            int i = (int) (h + k) & mask;
            WorkCompletion wc = out[k];
            if (wc == null) out[k] = wc = new WorkCompletion();
            wc.wrId = wrId[i];
            wc.status = STATUSES[status[i]];
            wc.opcode = opcode[i] < 0 ? null : OPCODES[opcode[i]];
            wc.byteLen = byteLen[i];
            wc.flags = flags[i];
            wc.immData = (flags[i] & WorkCompletion.WITH_IMM) != 0 ? immOrInv[i] : 0;
            wc.invalidatedRkey = (flags[i] & WorkCompletion.WITH_INV) != 0 ? immOrInv[i] : 0;
            wc.qpNum = qpNum[i];
            wc.srcQp = srcQp[i];
            wc.srcUdpPort = srcPort[i];
            wc.vendorErr = vendorErr[i];
        }
        return n;
    }

    /**
     * Polls, waiting up to {@code timeout} for at least one completion. Returns 0 on timeout.
     */
    public int poll(WorkCompletion[] out, long timeout, TimeUnit unit) throws InterruptedException {
        return poll(out, out.length, timeout, unit);
    }

    /**
     * Waits for exactly {@code n} completions (copies, safe to keep) or until {@code timeout} has passed, whichever
     * comes first, and returns what arrived: fewer than {@code n} means the time ran out. Completions beyond the
     * {@code n}-th stay in the queue.
     */
    public List<WorkCompletion> poll(int n, long timeout, TimeUnit unit) throws InterruptedException {
        List<WorkCompletion> got = new ArrayList<>(n);
        WorkCompletion[] buf = new WorkCompletion[Math.min(Math.max(n, 1), 64)];
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        while (got.size() < n) {
            long left = deadline - System.nanoTime();
            if (left <= 0) break;
            int k = poll(buf, Math.min(buf.length, n - got.size()), left, TimeUnit.NANOSECONDS);
            for (int i = 0; i < k; i++) got.add(buf[i].copy());
        }
        return got;
    }

    /** Polls at most {@code max} entries, waiting up to {@code timeout} for the first. Returns 0 on timeout. */
    public int poll(WorkCompletion[] out, int max, long timeout, TimeUnit unit) throws InterruptedException {
        int n = poll(out, max);
        if (n > 0) return n;
        if (agent != null && !agent.inLoop()) return pollDriving(out, max, unit.toNanos(timeout));
        long start = System.nanoTime();
        long deadline = start + unit.toNanos(timeout);
        // Spin before sleeping: a completion usually follows within a round trip, and waking a parked thread costs
        // more than the round trip itself on loopback. Each empty look yields: the event loop that produces the
        // completion may share this core, and spinning without yielding would keep it off until the time slice ends.
        long spinUntil = start + Math.min(spinNanos, unit.toNanos(timeout));
        while (System.nanoTime() - spinUntil < 0) {
            n = poll(out, max);
            if (n > 0) return n;
            Thread.yield();
        }
        synchronized (signal) {
            waiters++;
            try {
                while (true) {
                    n = poll(out, max);
                    if (n > 0) return n;
                    long left = deadline - System.nanoTime();
                    if (left <= 0) return 0;
                    TimeUnit.NANOSECONDS.timedWait(signal, left);
                }
            } finally {
                waiters--;
            }
        }
    }

    /**
     * A waiting poll on an invoked device: the caller runs the device's cycles itself, blocking in the loop
     * (epoll) until a datagram, a task or a timer arrives, so the completion is produced on this thread. While
     * another thread drives, it waits for that thread's completions as a dedicated device's poller does, and
     * tries again to drive every {@link DeviceAgent#FOLLOWER_WAIT_NANOS}.
     */
    private int pollDriving(WorkCompletion[] out, int max, long timeoutNanos) throws InterruptedException {
        long start = System.nanoTime();
        long deadline = start + timeoutNanos;
        // non-blocking cycles first, as long as a waiting poll spins (INVOKED_SPIN_NANOS, or the busy-poll time): a
        // reply that comes within a round trip is then read without this thread going to sleep and being woken
        long spinUntil = start + Math.min(spinNanos, timeoutNanos);
        while (true) {
            if (Thread.interrupted()) throw new InterruptedException();
            int n = take(out, max);
            if (n > 0) return n;
            long now = System.nanoTime();
            long left = deadline - now;
            if (left <= 0) return 0;
            // non-blocking cycles for the spin time, then block in the loop
            long wait = now - spinUntil < 0 ? 0 : Math.max(1, Math.min(left, MAX_DRIVE_WAIT_NANOS));
            if (agent.drive(wait)) {
                // what the cycle delivered goes to the caller at once (the take above); a cycle that found nothing,
                // while spinning, lets a thread that shares this core run now rather than take a whole time slice later
                if (wait == 0 && tail == head) Thread.yield();
                continue;
            }
            synchronized (signal) {
                waiters++;
                try {
                    n = take(out, max);
                    if (n > 0) return n;
                    TimeUnit.NANOSECONDS.timedWait(signal, Math.min(left, DeviceAgent.FOLLOWER_WAIT_NANOS));
                } finally {
                    waiters--;
                }
            }
        }
    }

    /** The longest one blocking cycle of a driving poll lasts before the poll looks at its deadline again. */
    private static final long MAX_DRIVE_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

    /**
     * Arms the queue for one notification ({@code ibv_req_notify_cq}): the next completion, or with
     * {@code solicitedOnly} the next receive completion of a message with the SE bit, or any failed
     * completion, raises an event.
     */
    public void requestNotify(boolean solicitedOnly) {
        armed = solicitedOnly ? 2 : 1;
    }

    /** Waits for an event raised after {@link #requestNotify}; consumes it. False on timeout. */
    public boolean awaitEvent(long timeout, TimeUnit unit) throws InterruptedException {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        synchronized (signal) {
            waiters++;
            try {
                while (events == 0) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) return false;
                    TimeUnit.NANOSECONDS.timedWait(signal, left);
                }
                events--;
                return true;
            } finally {
                waiters--;
            }
        }
    }

    /** A callback run (on the event loop) whenever an armed notification fires. */
    public void setEventListener(Runnable listener) {
        this.listener = listener;
    }
}
