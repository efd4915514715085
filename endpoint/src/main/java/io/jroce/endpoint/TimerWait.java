package io.jroce.endpoint;

import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerContext;
import io.netty.channel.IoHandlerFactory;
import io.netty.util.concurrent.Ticker;

/**
 * Ends the loop's wait at the timer wheel's next deadline. Netty's loop blocks in {@code epoll_wait} (or a NIO
 * select) until I/O, a task, or its earliest scheduled task; this wraps the loop's {@link IoHandler} so that the
 * wait it is given ends no later than {@link Timers#wakeAt}, and when the wait ends with a timer due, asks for the
 * cycle's flush, which runs the wheel ({@link Transport#flushNow}). So retransmit, tail-probe and RNR timers fire
 * on time on an idle loop without a scheduled task: neither one per deadline (an object each) nor a periodic one.
 * A busy loop finds its due timers at the end of each cycle anyway.
 *
 * <p>Only with the system clock: a device whose clock a test steps by hand runs its timers itself
 * ({@link Device#runTimers()}).
 */
final class TimerWait {
    private final Timers timers;
    private final Transport tx;
    /** What Netty's scheduler counts its deadlines from (its ticker's time is System.nanoTime minus this). */
    private final long tickerOrigin = Ticker.systemTicker().initialNanoTime();

    TimerWait(Timers timers, Transport tx) {
        this.timers = timers;
        this.tx = tx;
    }

    /** The factory of a loop whose handler waits for the wheel too. */
    IoHandlerFactory wrap(IoHandlerFactory inner) {
        return ForwardingIoHandler.wrapping(inner, Handler::new);
    }

    private final class Handler extends ForwardingIoHandler {
        /** The loop's context with the wheel's deadline folded in; one per loop, reused each cycle. */
        private final Bounded bounded = new Bounded();

        Handler(IoHandler inner) {
            super(inner);
        }

        @Override
        public int run(IoHandlerContext context) {
            long due = tx.clock() == Clock.SYSTEM ? timers.wakeAt(System.nanoTime()) : 0;
            if (due == 0) return inner.run(context);
            bounded.context = context;
            bounded.due = due;
            int handled;
            try {
                handled = inner.run(bounded);
            } finally {
                bounded.context = null;
            }
            if (System.nanoTime() - due >= 0) tx.flushLater(); // the flush runs the wheel first
            return handled;
        }
    }

    /** A loop context whose deadline is the sooner of its own and the wheel's ({@link #due}, System.nanoTime). */
    private final class Bounded implements IoHandlerContext {
        IoHandlerContext context;
        long due;

        @Override
        public boolean canBlock() {
            return context.canBlock();
        }

        @Override
        public long delayNanos(long currentTimeNanos) {
            return Math.min(context.delayNanos(currentTimeNanos), Math.max(0, due - currentTimeNanos));
        }

        @Override
        public long deadlineNanos() {
            long wheel = due - tickerOrigin;
            long own = context.deadlineNanos();
            return own == -1 ? wheel : Math.min(own, wheel);
        }

        @Override
        public void reportActiveIoTime(long activeNanos) {
            context.reportActiveIoTime(activeNanos);
        }

        @Override
        public boolean shouldReportActiveIoTime() {
            return context.shouldReportActiveIoTime();
        }
    }
}
