package io.jroce.endpoint;

/**
 * The send queue of a QP: a ring of {@link SendWqe}s. A WQE is consumed when it is retired, completed
 * or flushed in order by the completer; the requester's transmit cursor runs between the consumer and
 * the producer index.
 */
final class SendQueue extends WorkQueue<SendWqe> {
    SendQueue(int maxWr, int maxSge) {
        super(new SendWqe[maxWr + 1], () -> new SendWqe(maxSge));
    }
}
