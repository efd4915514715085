package io.jroce.endpoint;

import java.util.ArrayList;
import java.util.concurrent.TimeUnit;

/**
 * Retransmit and RNR timers. A QP with no armed timer is not on the list and costs nothing; while any QP
 * has one, a single tick task runs on the event loop and visits only the QPs on the list. Time comes
 * from the device's {@link Clock}, so tests step it by hand and call {@link Device#runTimers()}.
 */
final class Timers {
    /** Tick period: timers fire within this much of their deadline. */
    static final long TICK_NANOS = TimeUnit.MICROSECONDS.toNanos(500);

    private final Transport tx;
    private final ArrayList<QueuePair> armed = new ArrayList<>();
    private boolean tickScheduled;
    private final Runnable tickTask = this::scheduledTick;

    Timers(Transport tx) {
        this.tx = tx;
    }

    void arm(QueuePair qp) {
        if (!qp.timerListed) {
            qp.timerListed = true;
            armed.add(qp);
        }
        if (!tickScheduled) {
            tickScheduled = true;
            tx.schedule(tickTask, TICK_NANOS);
        }
    }

    private void scheduledTick() {
        tickScheduled = false;
        tick();
        if (!armed.isEmpty() && !tickScheduled) {
            tickScheduled = true;
            tx.schedule(tickTask, TICK_NANOS);
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
