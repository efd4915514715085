package io.jroce.endpoint;

import io.netty.util.concurrent.ScheduledFuture;

import java.util.ArrayList;
import java.util.concurrent.TimeUnit;

/**
 * Retransmit and RNR timers. A QP with no armed timer is not on the list and costs nothing; while any QP
 * has one (and for {@link #IDLE_TICKS} ticks after), a single periodic tick task runs on the event loop and visits
 * only the QPs on the list. Time comes
 * from the device's {@link Clock}, so tests step it by hand and call {@link Device#runTimers()}.
 */
final class Timers {
    /** Tick period: timers fire within this much of their deadline. */
    static final long TICK_NANOS = TimeUnit.MICROSECONDS.toNanos(500);

    /**
     * How many ticks the tick task keeps running with no timer armed before it stops: a request-response exchange
     * arms and disarms its QP's timer per message, and a periodic task that stays scheduled costs no allocation,
     * where scheduling a task anew makes one ({@code ScheduledFutureTask}) per arm. 10 ms: short, so that an idle
     * device soon stops waking up (a busy-polling loop counts the ticks as activity).
     */
    static final int IDLE_TICKS = 20;

    private final Transport tx;
    private final ArrayList<QueuePair> armed = new ArrayList<>();
    /** The periodic tick, while it runs. */
    private ScheduledFuture<?> ticker;
    private int idleTicks;
    private final Runnable tickTask = this::scheduledTick;

    Timers(Transport tx) {
        this.tx = tx;
    }

    void arm(QueuePair qp) {
        if (!qp.timerListed) {
            qp.timerListed = true;
            armed.add(qp);
        }
        idleTicks = 0;
        if (ticker == null) ticker = tx.scheduleWithFixedDelay(tickTask, TICK_NANOS);
    }

    private void scheduledTick() {
        tick();
        if (!armed.isEmpty()) {
            idleTicks = 0;
        } else if (++idleTicks >= IDLE_TICKS && ticker != null) {
            ticker.cancel(false);
            ticker = null;
            idleTicks = 0;
        }
    }

    /** Fires due timers; drops QPs whose timers are all off. Event loop only. */
    void tick() {
        long now = tx.clock().nanoTime();
        for (int i = 0; i < armed.size(); ) {
            QueuePair qp = armed.get(i);
            boolean keep = qp.state != QpState.RESET && qp.state != QpState.ERR && qp.completer.onTimer(now);
            if (keep) {
                i++;
            } else {
                qp.timerListed = false;
                int last = armed.size() - 1;
                armed.set(i, armed.get(last));
                armed.remove(last);
            }
        }
        tx.flushNow();
    }

    int armedCount() {
        return armed.size();
    }
}
