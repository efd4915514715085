package io.jroce.endpoint;

import io.netty.channel.EventLoop;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.ManualIoEventLoop;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SingleThreadIoEventLoop;
import io.netty.util.concurrent.FastThreadLocalThread;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.RejectedExecutionHandlers;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.reflect.Field;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * The thread discipline of one device shard: which thread runs its socket, engines and timers ({@link AgentMode}).
 * Everything of the shard runs on its event loop; this class decides who runs that loop.
 *
 * <p><b>Dedicated</b>: a Netty event loop with a thread of its own, as a plain Netty program has. Other threads hand
 * it work ({@link #execute}, {@link #call}) and wait for its results.
 *
 * <p><b>Invoked</b>: a Netty 4.2 {@link ManualIoEventLoop} that no thread owns for good. A thread that needs the device
 * to make progress (a completion-queue poll, a post, a verb's {@link #call}) becomes its <i>driver</i> for one cycle
 * ({@link #enter}: one compare-and-set, no lock), runs the loop itself ({@code recvmmsg}, the engines, due timers,
 * the queued commands of other threads, one flush) and leaves ({@link #exit}). At most one thread drives at a
 * time; a thread that finds another driving hands its work over through the loop's queue, as in dedicated mode.
 * Netty's loop checks ownership by thread identity, and {@code ManualIoEventLoop} lets its owner be set only once,
 * so the agent moves the loop's owner with the driver (see {@link #ownerOf}).
 *
 * <p>A <i>standby</i> thread keeps an invoked device alive while no application thread runs it: after
 * {@link #STANDBY_AFTER_NANOS} without a cycle it becomes the driver and blocks in the loop (it looks that often at
 * first, and less often, up to {@link #STANDBY_MAX_NAPS} times that, while application threads keep driving), and
 * it leaves as soon
 * as another thread asks to drive ({@link #enter} queues a no-op task, which ends its wait). So a program that
 * polls gets run-to-completion latency, and one that blocks elsewhere (a TCP exchange, a listening server) still
 * answers its peers, acknowledges and retransmits.
 */
final class DeviceAgent {
    private static final Logger log = LoggerFactory.getLogger(DeviceAgent.class);

    /** {@link #enter}: another thread drives the loop. */
    static final int BUSY = 0;
    /** {@link #enter}: the caller now drives the loop and must {@link #exit}. */
    static final int ENTERED = 1;
    /** {@link #enter}: the caller already drives the loop (it is inside a cycle); it must not run the loop again. */
    static final int NESTED = 2;

    /** How long an invoked device may go without a cycle before the standby thread runs it, by default. */
    static final long STANDBY_AFTER_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /**
     * The longest the standby sleeps between looks while application threads run the device, in multiples of its
     * standbyAfter: 16 ms by default, so a program that stops polling is answered within about 17 ms, well inside
     * the local ACK timeouts peers use (perftest's default exponent 14 is 67 ms).
     */
    private static final long STANDBY_MAX_NAPS = 16;
    /** The longest the standby blocks in one cycle (a task, a datagram or a timer ends it sooner). */
    private static final long STANDBY_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    /** The longest a thread that waits for the device while another drives sleeps before it tries to drive itself. */
    static final long FOLLOWER_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final Runnable WAKE = () -> { };
    /**
     * Dedicated: the longest the loop runs queued tasks (posts, timers, flushes) before it reads the socket again.
     * Netty's default is a second; a device whose tasks keep coming (a thousand QPs posting at once) would leave its
     * socket unread that long while the peer's ACKs fill the kernel's receive buffer and are dropped, and every QP
     * would then time out and retransmit together (measured: 1,000 QP pairs each moving 20 KiB, on a loaded 2-core
     * machine, 21 s with the default against 2.4 s with this). 20 ms, not 1: reading after every millisecond of tasks
     * broke the chaos soak (QPs retried to exhaustion; not understood yet), and 20 ms of datagrams fit the buffer.
     */
    static final long TASK_QUANTUM_MILLIS = 20;

    private final AgentMode mode;
    /** Dedicated: the loop's group of one thread. */
    private final MultiThreadIoEventLoopGroup group;
    /** Invoked: the loop that drivers run. */
    private final ManualIoEventLoop manual;
    private final EventLoop loop;
    /** Invoked: the loop's owner, moved with the driver. */
    private final AtomicReference<Thread> owner;
    /** Invoked: the thread running a cycle now, or null. */
    private final AtomicReference<Thread> driver = new AtomicReference<>();
    /** Invoked: threads waiting for the standby to leave. */
    private final AtomicInteger wanted = new AtomicInteger();
    private final Thread standby;
    private final long standbyAfterNanos;
    private volatile boolean stopping;
    /** Invoked: when the last cycle ended (System.nanoTime). */
    private volatile long lastCycleEnd = System.nanoTime();
    /** Invoked: cycles run by application threads and by the standby (for tests and the counters). */
    private volatile long invokedCycles;
    private volatile long standbyCycles;

    private DeviceAgent(AgentMode mode, IoHandlerFactory factory, String name, long standbyAfterNanos) {
        this.mode = mode;
        this.standbyAfterNanos = standbyAfterNanos;
        if (mode == AgentMode.INVOKED) {
            this.group = null;
            this.manual = new ManualIoEventLoop(null, factory);
            this.owner = ownerOf(manual);
            this.loop = manual;
            // a FastThreadLocalThread, so that Netty recycles the buffers and entries of the cycles it runs
            this.standby = new FastThreadLocalThread(this::standby, "jroce-standby-" + name);
            standby.setDaemon(true);
            standby.start();
        } else {
            this.group = new MultiThreadIoEventLoopGroup(1, (java.util.concurrent.Executor) null, factory) {
                @Override
                protected IoEventLoop newChild(java.util.concurrent.Executor executor, IoHandlerFactory f, Object... args) {
                    return new SingleThreadIoEventLoop(this, executor, f, Integer.MAX_VALUE, RejectedExecutionHandlers.reject(),
                            TASK_QUANTUM_MILLIS);
                }
            };
            this.manual = null;
            this.owner = null;
            this.loop = (EventLoop) group.next();
            this.standby = null;
        }
    }

    static DeviceAgent open(AgentMode mode, IoHandlerFactory factory, String name, long standbyAfterNanos) {
        if (mode == AgentMode.INVOKED && OWNER_FIELD == null) {
            log.warn("this Netty version's ManualIoEventLoop cannot change its owner ({}); the device runs a thread of its own",
                    OWNER_FIELD_PROBLEM);
            mode = AgentMode.DEDICATED;
        }
        return new DeviceAgent(mode, factory, name, standbyAfterNanos);
    }

    // ManualIoEventLoop keeps its owner in a private AtomicReference that setOwningThread may set once. The agent
    // moves it with the driver: it is set only by the thread that won the driver slot, before it runs the loop,
    // and cleared before that slot is released, so the loop's own thread checks see exactly one owner per cycle.
    private static final Field OWNER_FIELD;
    private static final String OWNER_FIELD_PROBLEM;

    static {
        Field f = null;
        String problem = null;
        try {
            f = ManualIoEventLoop.class.getDeclaredField("owningThread");
            if (f.getType() != AtomicReference.class) throw new NoSuchFieldException("owningThread is a " + f.getType());
            f.setAccessible(true);
        } catch (ReflectiveOperationException | RuntimeException e) {
            f = null;
            problem = e.toString();
        }
        OWNER_FIELD = f;
        OWNER_FIELD_PROBLEM = problem;
    }

    @SuppressWarnings("unchecked")
    private static AtomicReference<Thread> ownerOf(ManualIoEventLoop l) {
        try {
            return (AtomicReference<Thread>) OWNER_FIELD.get(l);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    AgentMode mode() { return mode; }
    boolean invoked() { return mode == AgentMode.INVOKED; }
    /** The loop, for the channel's bootstrap. */
    EventLoop loop() { return loop; }
    long invokedCycles() { return invokedCycles; }
    long standbyCycles() { return standbyCycles; }

    /** Whether the calling thread runs the loop now. */
    boolean inLoop() {
        return loop.inEventLoop();
    }

    void execute(Runnable r) {
        loop.execute(r);
    }

    java.util.concurrent.ScheduledFuture<?> schedule(Runnable r, long nanos) {
        return loop.schedule(r, nanos, TimeUnit.NANOSECONDS);
    }

    // ------------------------------------------------------------------------------------------------
    // driving (invoked)

    /**
     * Tries to make the calling thread the loop's driver: {@link #ENTERED} (call {@link #exit} when done),
     * {@link #NESTED} (it already is, inside a cycle) or {@link #BUSY} (another application thread drives; the
     * standby is asked to leave and waited for). Dedicated mode: {@link #NESTED} on the loop's thread, else BUSY.
     */
    int enter() {
        if (manual == null) return loop.inEventLoop() ? NESTED : BUSY;
        Thread me = Thread.currentThread();
        Thread d = driver.get();
        if (d == me) return NESTED;
        if (d == null && driver.compareAndSet(null, me)) {
            owner.set(me);
            return ENTERED;
        }
        if (d != standby) return BUSY;
        // the standby drives: a task ends its blocking wait (a bare wakeup is lost while it is not yet blocked)
        wanted.incrementAndGet();
        try {
            manual.execute(WAKE);
            for (int spins = 0; ; spins++) {
                if (driver.compareAndSet(null, me)) {
                    owner.set(me);
                    return ENTERED;
                }
                Thread now = driver.get();
                if (now != null && now != standby) return BUSY;
                if (stopping) return BUSY;
                // the standby leaves at the end of its cycle: spin through a short one, sleep through a long one
                if (spins < 1000) Thread.onSpinWait();
                else LockSupport.parkNanos(20_000);
            }
        } finally {
            wanted.decrementAndGet();
        }
    }

    /** Ends the calling thread's turn as driver (after {@link #enter} returned {@link #ENTERED}). */
    void exit() {
        lastCycleEnd = System.nanoTime();
        owner.set(null);
        driver.set(null);
    }

    /**
     * Runs one cycle if the calling thread can drive: datagrams, tasks and due timers, then returns. With
     * {@code waitNanos} &gt; 0 it blocks in the loop until something arrives or that time has passed. Returns false
     * when another thread drives (or, dedicated, always).
     */
    boolean drive(long waitNanos) {
        if (manual == null) return false;
        if (enter() != ENTERED) return false;
        try {
            cycle(waitNanos);
        } finally {
            exit();
        }
        return true;
    }

    /** One cycle; the caller is the driver. */
    private void cycle(long waitNanos) {
        if (waitNanos > 0) manual.run(waitNanos);
        else manual.runNow();
        invokedCycles++;
    }

    private void standby() {
        Thread me = Thread.currentThread();
        // while application threads keep the device running, the standby looks less and less often (each look is
        // a wake-up that, on a machine with few cores, takes the core of a thread spinning on a poll): from
        // standbyAfter up to STANDBY_MAX_NAPS times that; once it finds the device unattended it looks every
        // standbyAfter again
        long nap = standbyAfterNanos;
        while (!stopping) {
            long idle = System.nanoTime() - lastCycleEnd;
            if (idle < standbyAfterNanos || driver.get() != null || wanted.get() > 0) {
                LockSupport.parkNanos(Math.max(nap - idle, standbyAfterNanos / 4));
                nap = Math.min(nap * 2, standbyAfterNanos * STANDBY_MAX_NAPS);
                continue;
            }
            nap = standbyAfterNanos;
            if (!driver.compareAndSet(null, me)) continue;
            owner.set(me);
            try {
                while (wanted.get() == 0 && !stopping) {
                    manual.run(STANDBY_WAIT_NANOS);
                    standbyCycles++;
                }
            } catch (RuntimeException | Error e) {
                log.warn("device cycle failed on the standby thread: {}", e.toString());
            } finally {
                exit();
            }
        }
    }

    // ------------------------------------------------------------------------------------------------
    // waiting for the loop

    /** Runs {@code c} on the loop and returns its result: inline when the caller drives or can drive it. */
    <T> T call(Callable<T> c) {
        try {
            if (loop.inEventLoop()) return c.call();
            if (manual != null && enter() == ENTERED) {
                try {
                    manual.runNow(); // what other threads queued before this comes first
                    return c.call();
                } finally {
                    exit();
                }
            }
            Future<T> f = loop.submit(c);
            await(f, TimeUnit.SECONDS.toNanos(30));
            if (!f.isDone()) throw new IllegalStateException("the device's event loop did not answer within 30 s");
            return f.get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException re) throw re;
            if (cause instanceof Error err) throw err;
            throw new IllegalStateException(cause);
        } catch (RuntimeException e) {
            throw e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for the device's event loop", e);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Waits up to {@code timeoutNanos} for {@code f}, running the loop meanwhile whenever no other thread does
     * (invoked). Returns whether it is done. Never called on the loop itself (it would wait for itself).
     */
    boolean await(Future<?> f, long timeoutNanos) {
        long deadline = System.nanoTime() + timeoutNanos;
        while (!f.isDone()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) return false;
            if (manual != null) {
                int e = enter();
                if (e == NESTED) throw new IllegalStateException("waiting for the device's loop on the loop itself");
                if (e == ENTERED) {
                    try {
                        if (f.isDone()) break;
                        cycle(Math.min(left, FOLLOWER_WAIT_NANOS));
                    } finally {
                        exit();
                    }
                    continue;
                }
            }
            f.awaitUninterruptibly(TimeUnit.NANOSECONDS.toMillis(manual != null ? Math.min(left, FOLLOWER_WAIT_NANOS) : left) + 1);
        }
        return true;
    }

    boolean isShuttingDown() {
        return manual != null ? manual.isShuttingDown() : group.isShuttingDown();
    }

    /** Starts shutting the loop down; the future completes when it has stopped ({@link #await} it: invoked loops need a driver). */
    Future<?> shutdown() {
        if (manual == null) return group.shutdownGracefully(0, 200, TimeUnit.MILLISECONDS);
        stopping = true;
        Future<?> f = manual.shutdownGracefully(0, 200, TimeUnit.MILLISECONDS);
        LockSupport.unpark(standby);
        return f;
    }

    /** Waits for the loop to stop (after {@link #shutdown}), driving it to its end when invoked. */
    void awaitStopped(Future<?> stopping) {
        if (manual == null) {
            stopping.syncUninterruptibly();
            return;
        }
        await(stopping, TimeUnit.SECONDS.toNanos(10));
        try {
            standby.join(TimeUnit.SECONDS.toMillis(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
