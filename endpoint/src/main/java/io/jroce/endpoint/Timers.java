package io.jroce.endpoint;

import java.util.ArrayList;
import java.util.concurrent.TimeUnit;

/**
 * Retransmit, tail-probe and RNR timers: a hashed timing wheel (Varghese and Lauck) of {@link #SLOTS} slots of
 * {@link #TICK_NANOS}, each an intrusive list of the QPs whose earliest deadline falls in it. A QP with no armed
 * timer is on no list and costs nothing. The wheel is looked at once per cycle of the loop ({@link #runDue}, from the
 * flush that ends it), and one periodic wake-up, running while anything is filed, makes an idle loop look at it
 * within a slot of each deadline; either visits only the slots time has passed, not every armed QP.
 * <p>A deadline that moves later (each acknowledgement pushes the retransmit deadline) leaves the QP where it is
 * filed: when that slot comes, the QP's timer check finds nothing due and the QP is filed again at its new earliest
 * deadline. One that moves earlier is filed again at once. Time comes from the device's {@link Clock}, so tests step
 * it by hand and call {@link Device#runTimers()}.
 */
final class Timers {
    /** Slot width: timers fire within this much of their deadline, or at the next cycle of a busy loop. */
    static final long TICK_NANOS = TimeUnit.MICROSECONDS.toNanos(500);
    /** Slots in a turn of the wheel (a power of two): a turn spans 256 ms; later deadlines wait for their turn. */
    static final int SLOTS = 512;

    private final Transport tx;
    private final QueuePair[] slots = new QueuePair[SLOTS];
    /** The tick (time / {@link #TICK_NANOS}) up to which the wheel has been run; its slot is looked at again. */
    private long cursor;
    private boolean started;
    private int listed;
    /** The periodic wake-up while anything is filed (null when stopped), and since when the wheel has been empty. */
    private java.util.concurrent.ScheduledFuture<?> wakeFuture;
    private long emptySince;
    /** How long the wake-up keeps running with nothing filed before it stops (timers come and go with traffic). */
    static final long IDLE_AFTER_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    private boolean running;
    private final ArrayList<QueuePair> due = new ArrayList<>();
    private final Runnable wakeTask = this::wake;

    Timers(Transport tx) {
        this.tx = tx;
    }

    /** {@code qp} armed a timer (or moved one): files it at its earliest deadline unless it is filed no later already. */
    void arm(QueuePair qp) {
        long at = qp.completer.nextDeadline();
        if (at == 0) return; // nothing armed after all; a QP filed already is dropped when its slot comes
        if (qp.timerListed) {
            if (at - qp.timerDue >= 0) return; // fires no later than needed: filed again then
            unlink(qp);
        }
        file(qp, at);
        ensureWake();
    }

    /** Fires due timers now and flushes what they sent (tests that step an injected clock; the wake-up). */
    void tick() {
        runDue();
        tx.flushNow();
    }

    /**
     * Runs the slots time has passed since the last call: each QP filed there whose deadline has come gets its timer
     * check, then is filed again at its next deadline or dropped. Once per cycle; cheap when nothing is due.
     */
    void runDue() {
        if (listed == 0 || running) return;
        long now = tx.clock().nanoTime();
        long target = Math.floorDiv(now, TICK_NANOS);
        running = true;
        try {
            long from = Math.max(cursor, target - SLOTS + 1); // one turn visits every slot
            for (long t = from; t <= target; t++) {
                for (QueuePair q = slots[(int) (t & (SLOTS - 1))]; q != null; q = q.timerNext) {
                    if (q.timerDue - now <= 0) due.add(q);
                }
            }
            cursor = target;
            for (int i = 0; i < due.size(); i++) {
                QueuePair qp = due.get(i);
                if (!qp.timerListed) continue;
                unlink(qp);
                boolean live = qp.state != QpState.RESET && qp.state != QpState.ERR;
                checks++;
                if (live) qp.completer.onTimer(now);
                long at = live ? qp.completer.nextDeadline() : 0;
                if (at != 0 && !qp.timerListed) file(qp, at);
            }
            due.clear();
        } finally {
            running = false;
        }
    }

    /**
     * The periodic wake-up, every {@link #TICK_NANOS} while anything is filed: runs what is due; once the wheel has been
     * empty for {@link #IDLE_AFTER_NANOS} it stops. One task, made when the first timer is filed and kept while timers
     * come and go, so nothing is allocated per wake-up (a task scheduled at each earliest deadline made one object per
     * wake-up: about 6 bytes per packet of a WRITE stream). A busy loop finds its due timers at the end of each cycle
     * before the wake-up comes; an idle one is woken within a tick of a deadline.
     */
    private void wake() {
        tick();
        long now = tx.clock().nanoTime();
        if (listed > 0) {
            emptySince = 0;
        } else if (emptySince == 0) {
            emptySince = now;
        } else if (now - emptySince >= IDLE_AFTER_NANOS && wakeFuture != null) {
            wakeFuture.cancel(false);
            wakeFuture = null;
            emptySince = 0;
        }
    }

    private void ensureWake() {
        if (wakeFuture == null) wakeFuture = tx.scheduleAtFixedRate(wakeTask, TICK_NANOS);
    }

    /** Takes {@code qp} off the wheel (it was reset or destroyed: it has no timer any more). */
    void cancel(QueuePair qp) {
        if (qp.timerListed) unlink(qp);
    }

    /** Takes every QP off the wheel (the shard forgot its QPs). */
    void clear() {
        for (int s = 0; s < SLOTS; s++) {
            while (slots[s] != null) unlink(slots[s]);
        }
    }

    private void file(QueuePair qp, long at) {
        long now = tx.clock().nanoTime();
        if (!started) {
            started = true;
            cursor = Math.floorDiv(now, TICK_NANOS);
        }
        long t = Math.max(Math.floorDiv(at, TICK_NANOS), cursor);
        int s = (int) (t & (SLOTS - 1));
        qp.timerDue = at;
        qp.timerSlot = s;
        qp.timerPrev = null;
        qp.timerNext = slots[s];
        if (slots[s] != null) slots[s].timerPrev = qp;
        slots[s] = qp;
        qp.timerListed = true;
        listed++;
    }

    private void unlink(QueuePair qp) {
        if (qp.timerPrev != null) qp.timerPrev.timerNext = qp.timerNext;
        else slots[qp.timerSlot] = qp.timerNext;
        if (qp.timerNext != null) qp.timerNext.timerPrev = qp.timerPrev;
        qp.timerNext = null;
        qp.timerPrev = null;
        qp.timerListed = false;
        listed--;
    }

    /** Timer checks run (QPs taken off the wheel because their deadline came), for tests. */
    long checks;
}
