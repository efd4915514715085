package io.jroce.endpoint;

import io.jroce.wire.RocePacket;

/**
 * How a responder treats requests that arrive past the PSN it expects: the points where the IBA transport
 * ({@link InOrder}: a sequence NAK, the request dropped) and jroce's selective repeat between jroce peers
 * ({@link ReorderStore}: the request held and SACKed, executed once the gap closes) differ. The responder holds one
 * per QP, chosen when the QP is reset, so its own code is the plain IBA path with no extension in it.
 */
interface RequestOrder {
    /** A new life of the QP: nothing held, nothing owed. */
    void reset();

    /** A request with {@code psn} past the expected PSN arrived (IBA 9.7.5.1.2). */
    void onAhead(RocePacket p, int psn);

    /** A request was executed in order: run what it unblocked. */
    void afterInOrder();

    /** Whether requests held past a gap are being executed now (their AckReqs fold into one cumulative ACK). */
    boolean draining();

    /**
     * Whether each READ response goes out with the opcode of its place in the message, also when sent again, and a
     * duplicate READ for part of a stream still being sent resends only that part (the requester places responses
     * wherever they land); otherwise a READ asked again part-way is answered MIDDLE..LAST from the resume point.
     */
    boolean placesReadResponses();

    /** Sends what this policy owes the requester (SACKs), at a flush or before another packet of the QP. */
    void emitOwed();

    /** Forgets what is owed: the QP is reset or destroyed. */
    void dropOwed();

    /** Gives held memory back: the QP is reset or destroyed. */
    void release();
}
