package io.jroce.endpoint;

import java.util.ArrayList;
import java.util.concurrent.TimeUnit;

/**
 * Retransmit, tail-probe and RNR timers: a hashed timing wheel (Varghese and Lauck) of {@link #SLOTS} slots of
 * {@link #TICK_NANOS}, each an intrusive list of the QPs whose earliest deadline falls in it. A QP with no armed
 * timer is on no list and costs nothing. The wheel is looked at once per cycle of the loop ({@link #runDue}, from the
 * flush that ends it), which visits only the slots time has passed, not every armed QP. An idle loop does not poll
 * it: its wait ends at the earliest deadline filed ({@link #wakeAt}, which {@link TimerWait} gives the loop's
 * {@code epoll_wait}), so no task is scheduled for timers at all.
 * <p>A deadline that moves later (each acknowledgement pushes the retransmit deadline) leaves the QP where it is
 * filed: when that slot comes, the QP's timer check finds nothing due and the QP is filed again at its new earliest
 * deadline. One that moves earlier is filed again at once. Time comes from the device's {@link Clock}, so tests step
 * it by hand and call {@link Device#runTimers()}.
 */
final class Timers {
    /** Slot width: the granularity of the wheel's lists (an idle loop still wakes at the deadline itself). */
    static final long TICK_NANOS = TimeUnit.MICROSECONDS.toNanos(500);
    /** Slots in a turn of the wheel (a power of two): a turn spans 256 ms; later deadlines wait for their turn. */
    static final int SLOTS = 512;

    private final Transport tx;
    private final QueuePair[] slots = new QueuePair[SLOTS];
    /** The tick (time / {@link #TICK_NANOS}) up to which the wheel has been run; its slot is looked at again. */
    private long cursor;
    private boolean started;
    private int listed;
    private boolean running;
    private final ArrayList<QueuePair> due = new ArrayList<>();
    /**
     * No later than the earliest {@link QueuePair#timerDue} filed (meaningful while {@link #listed} is not 0). It may
     * be earlier, once the QP it came from has left the wheel: {@link #wakeAt} looks again when it has passed.
     */
    private long earliest;
    /** The device-clock time of the last {@link #runDue} that ran. */
    private long lastRun = Long.MIN_VALUE / 4;
    /** See {@link #wakeAt}. */
    static final long RETRY_NANOS = TimeUnit.MICROSECONDS.toNanos(50);

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
    }

    /** Fires due timers now and flushes what they sent (tests that step an injected clock). */
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
        lastRun = now;
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
     * When the loop must look at the wheel next, on the device clock: the earliest deadline filed (at or before
     * {@code now} when one is due), or 0 when nothing is filed. Cheap while the last answer still lies ahead; once
     * it has passed, the slots from the cursor on are looked at until one holds a deadline of its own turn: the
     * first such slot holds the earliest (later slots and later turns are later). With none in a whole turn, the
     * loop looks again a turn from now.
     */
    long wakeAt(long now) {
        if (listed == 0) return 0;
        if (earliest - now > 0) return earliest;
        long c = cursor;
        long next = (c + SLOTS) * TICK_NANOS;
        for (int k = 0; k < SLOTS; k++) {
            long end = (c + k + 1) * TICK_NANOS;
            boolean hit = false;
            long min = 0;
            for (QueuePair q = slots[(int) ((c + k) & (SLOTS - 1))]; q != null; q = q.timerNext) {
                if (q.timerDue - end < 0 && (!hit || q.timerDue - min < 0)) {
                    min = q.timerDue;
                    hit = true;
                }
            }
            if (hit) {
                next = min;
                break;
            }
        }
        earliest = next;
        // a deadline the last run left filed although it had come (a timer re-armed for a moment already past) is
        // looked at again after a short while, not by a loop that never blocks
        return next - lastRun <= 0 ? lastRun + RETRY_NANOS : next;
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
        if (listed == 0 || at - earliest < 0) earliest = at;
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
