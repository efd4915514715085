package io.jroce.cli.inspect;

import io.jroce.wire.Aeth;
import io.jroce.wire.Opcode;
import io.jroce.wire.Operation;
import io.jroce.wire.Psn;
import org.HdrHistogram.IntCountsHistogram;

import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;

/**
 * The reliable-connection sequence analysis of one requester of a flow: its requests in one direction and the
 * responder's answers in the other, as seen at the capture point. What each counter means:
 * The rules are those of the IBTA reliable service (vol 1, 9.7) as rdma_rxe implements them:
 * <ul>
 *   <li>retransmission: a request PSN at or before the highest request PSN already sent (the requester goes
 *       back to the first unacknowledged PSN, rxe_req.c req_retry);</li>
 *   <li>duplicate: a retransmitted request whose PSN an ACK or response had already covered, so the responder
 *       handles it as a duplicate request (rxe_resp.c check_psn);</li>
 *   <li>out of order: a request PSN beyond the next expected one, i.e. earlier PSNs are missing at this point
 *       of the capture (the responder answers it with a PSN sequence error NAK, rxe_resp.c check_psn);</li>
 *   <li>duplicate ACK: an ACKNOWLEDGE whose PSN does not go beyond what was already acknowledged;</li>
 *   <li>ACK round trip: from a first transmission with AckReq set to the first ACK, response or NAK whose
 *       PSN covers it (an ACK covers every PSN up to its own, rxe_comp.c check_psn); a PSN that is
 *       retransmitted before it is covered gives no sample (Karn's rule), as its answer could be to either
 *       copy;</li>
 *   <li>RNR wait: from an RNR NAK to the retransmission of the PSN it names.</li>
 * </ul>
 * Packets with a bad ICRC are not seen here: a receiver drops them (rdma_rxe rxe_icrc_check), so they neither
 * carry a request nor acknowledge one. Memory is bounded and starts small: at most {@value #MAX_PENDING}
 * unanswered AckReq packets, {@value #MESSAGE_WINDOW} message starts and {@value #MAX_GAPS} gaps are
 * remembered (the oldest are forgotten beyond that), and round trips go into a 2-significant-digit
 * HdrHistogram.
 */
final class RequesterSide {
    static final int MAX_PENDING = 4096;
    static final int MESSAGE_WINDOW = 1024;
    static final int MAX_GAPS = 256;
    /** Smallest RoCE path MTU: bounds how many PSNs an RDMA READ request may consume. */
    private static final int MIN_PMTU = 256;
    private static final int MAX_PMTU = 4096;

    final int endpoint;
    private final Flow flow;

    // ---- counters
    long requestPackets;
    long responsePackets;
    final Map<Operation, Long> messages = new TreeMap<>();
    long retransmissions;
    long duplicates;
    long outOfOrder;
    long duplicateAcks;
    long sequenceNaks;
    long rnrNaks;
    final Map<String, Long> otherNaks = new TreeMap<>();
    long rnrWaits;
    long rnrWaitTotalNanos;
    long rnrWaitMaxNanos;
    long newPayloadBytes;
    final IntCountsHistogram rtt = new IntCountsHistogram(2);

    // ---- sequence state (PSNs are 24-bit, compared in serial arithmetic)
    private boolean started;
    private int highestSent;
    /** The last PSN the next request may have and still be in order (a READ's span is known only roughly). */
    private int expectHigh;
    private boolean anyAck;
    private int highestAcked;
    private boolean anyResponse;
    private int highestResponse;
    /** PSNs of the last messages counted: far more than a requester keeps outstanding; -1 = empty slot. */
    private int[] messageStarts = new int[16];
    private int[] messageSpans = new int[16];
    private int messageStartNext;
    /** PSN ranges skipped by out-of-order requests and not seen since, [gapStart[i], gapEnd[i]]. */
    private int[] gapStart = new int[4];
    private int[] gapEnd = new int[4];
    private int gaps;
    private int rnrPsn = -1;
    /** Reference for {@link #unwrap}: the last request PSN and its unwrapped value. */
    private int lastRawPsn;
    private long lastUnwrappedPsn;
    private long rnrNanos;

    // ---- unanswered AckReq packets, in PSN order: a ring of (psn, time)
    private int[] pendingPsn = new int[64];
    private long[] pendingNanos = new long[64];
    private int pendingHead;
    private int pendingCount;

    RequesterSide(Flow flow, int endpoint) {
        this.flow = flow;
        this.endpoint = endpoint;
        Arrays.fill(messageStarts, -1);
    }

    /** Whether a recent message began at this PSN, or is a READ whose response PSNs include it. */
    private boolean insideRecentMessage(int psn) {
        for (int i = 0; i < messageStarts.length; i++) {
            if (messageStarts[i] >= 0 && Psn.distance(messageStarts[i], psn) < messageSpans[i]) {
                return true;
            }
        }
        return false;
    }

    /** A well-formed request with a valid ICRC from this side's endpoint. */
    void onRequest(Opcode op, int psn, boolean ackReq, int payload, long dmaLength, long nanos, FlowTrace trace) {
        requestPackets++;
        // PSNs this request uses: one, but an RDMA READ request one per response packet (rxe_req.c
        // update_wqe_psn), known exactly once the path MTU is, else between the spans for MTU 4096 and 256
        int minSpan = 1;
        int maxSpan = 1;
        if (op.operation() == Operation.RDMA_READ_REQUEST && dmaLength > 0) {
            int pmtu = flow.pathMtuEstimate();
            minSpan = span(dmaLength, pmtu > 0 ? pmtu : MAX_PMTU);
            maxSpan = span(dmaLength, pmtu > 0 ? pmtu : MIN_PMTU);
        }
        boolean retransmission;
        if (!started) {
            started = true;
            lastRawPsn = psn;
            retransmission = false;
        } else if (Psn.isAtOrBefore(psn, highestSent)) {
            // a resend; for a READ also a re-issued request for the rest of a partly answered one
            retransmission = true;
        } else {
            retransmission = false;
            // in order up to the end of the last request's span, or right after the highest PSN sent when the
            // last request was a partial resend (a tail-loss probe repeats one old PSN, then carries on)
            if (Psn.isAfter(psn, expectHigh) && Psn.isAfter(psn, Psn.next(highestSent))) {
                outOfOrder++;
                addGap(Psn.next(highestSent), Psn.add(psn, -1));
                if (trace != null) {
                    trace.outOfOrder(nanos, unwrap(psn));
                }
            }
        }
        if (!retransmission || Psn.isAfter(Psn.add(psn, minSpan - 1), highestSent)) {
            highestSent = Psn.add(psn, minSpan - 1);
        }
        // payload counts once per PSN: first transmissions, and resends of PSNs the capture had not seen
        if (!retransmission || fillGap(psn)) {
            newPayloadBytes += payload;
        }
        if (retransmission) {
            retransmissions++;
            if (anyAck && Psn.isAtOrBefore(psn, highestAcked)) {
                duplicates++;
            }
            if (rnrPsn >= 0 && psn == rnrPsn) {
                long wait = nanos - rnrNanos;
                rnrWaits++;
                rnrWaitTotalNanos += wait;
                rnrWaitMaxNanos = Math.max(rnrWaitMaxNanos, wait);
                rnrPsn = -1;
            }
            dropPendingFrom(psn);
        } else {
            if (ackReq) {
                addPending(psn, nanos);
            }
        }
        // a message counts once, at the first copy of its FIRST/ONLY packet seen: that may be a resend when the
        // capture missed the original, but a READ re-issued for the rest of its responses continues one
        if (op.startsMessage() && !insideRecentMessage(psn)) {
            if (messageStartNext == messageStarts.length) {
                if (messageStarts.length < MESSAGE_WINDOW) { // grow while small flows stay small
                    int n = messageStarts.length;
                    messageStarts = Arrays.copyOf(messageStarts, n * 2);
                    messageSpans = Arrays.copyOf(messageSpans, n * 2);
                    Arrays.fill(messageStarts, n, n * 2, -1);
                } else {
                    messageStartNext = 0; // overwrite the oldest
                }
            }
            messageStarts[messageStartNext] = psn;
            messageSpans[messageStartNext] = minSpan;
            messageStartNext++;
            messages.merge(op.operation(), 1L, Long::sum);
        }
        expectHigh = Psn.add(psn, maxSpan);
        if (trace != null) {
            trace.request(nanos, unwrap(psn), retransmission, payload);
        }
        advanceUnwrap(psn);
    }

    private void addGap(int from, int to) {
        if (gaps == gapStart.length && gaps < MAX_GAPS) {
            gapStart = Arrays.copyOf(gapStart, gaps * 2);
            gapEnd = Arrays.copyOf(gapEnd, gaps * 2);
        }
        if (gaps == MAX_GAPS) {
            System.arraycopy(gapStart, 1, gapStart, 0, gaps - 1); // forget the oldest
            System.arraycopy(gapEnd, 1, gapEnd, 0, gaps - 1);
            gaps--;
        }
        gapStart[gaps] = from;
        gapEnd[gaps] = to;
        gaps++;
    }

    /** Whether {@code psn} lies in a gap; if so, it is seen now and leaves the gap. */
    private boolean fillGap(int psn) {
        for (int i = 0; i < gaps; i++) {
            if (Psn.distance(gapStart[i], psn) <= Psn.distance(gapStart[i], gapEnd[i])) {
                if (gapStart[i] == gapEnd[i]) {
                    System.arraycopy(gapStart, i + 1, gapStart, i, gaps - i - 1);
                    System.arraycopy(gapEnd, i + 1, gapEnd, i, gaps - i - 1);
                    gaps--;
                } else if (psn == gapStart[i]) {
                    gapStart[i] = Psn.next(psn);
                } else if (psn == gapEnd[i]) {
                    gapEnd[i] = Psn.add(psn, -1);
                } else if (gaps < MAX_GAPS) {
                    addGap(Psn.next(psn), gapEnd[i]);
                    gapEnd[i] = Psn.add(psn, -1);
                } else {
                    gapEnd[i] = Psn.add(psn, -1); // no room to split: the rest of the gap is forgotten
                }
                return true;
            }
        }
        return false;
    }

    private static int span(long dmaLength, int pmtu) {
        return (int) Math.max(1, Math.min(Psn.HALF_WINDOW, (dmaLength + pmtu - 1) / pmtu));
    }

    /** A well-formed response with a valid ICRC from the responder to this side's endpoint. */
    void onResponse(Opcode op, int psn, int syndrome, int payload, long nanos, FlowTrace trace) {
        responsePackets++;
        if (op.hasAeth()) {
            Aeth.Kind kind = Aeth.kind(syndrome);
            if (kind == Aeth.Kind.NAK || kind == Aeth.Kind.RNR_NAK) {
                // a NAK names the PSN it refuses, so it acknowledges the ones before it
                covered(Psn.add(psn, -1), nanos);
                if (kind == Aeth.Kind.RNR_NAK) {
                    rnrNaks++;
                    if (rnrPsn < 0) {
                        rnrPsn = psn;
                        rnrNanos = nanos;
                    }
                } else if (Aeth.value(syndrome) == Aeth.NakCode.PSN_SEQUENCE_ERROR.code()) {
                    sequenceNaks++;
                } else {
                    Aeth.NakCode code = Aeth.NakCode.of(Aeth.value(syndrome));
                    otherNaks.merge(code != null ? code.name() : "RESERVED_" + Aeth.value(syndrome), 1L, Long::sum);
                }
                if (trace != null) {
                    trace.nak(nanos, unwrap(psn), kind == Aeth.Kind.RNR_NAK);
                }
                return;
            }
        }
        if (op.operation() == Operation.ACKNOWLEDGE && anyAck && Psn.isAtOrBefore(psn, highestAcked)) {
            duplicateAcks++;
        }
        boolean newData = !anyResponse || Psn.isAfter(psn, highestResponse);
        if (op.operation() == Operation.RDMA_READ_RESPONSE && newData) {
            newPayloadBytes += payload;
        }
        if (!anyResponse || Psn.isAfter(psn, highestResponse)) {
            anyResponse = true;
            highestResponse = psn;
        }
        covered(psn, nanos);
        if (trace != null) {
            if (op.operation() == Operation.RDMA_READ_RESPONSE) {
                trace.readResponse(nanos, unwrap(psn), payload, newData);
            }
            trace.ack(nanos, unwrap(highestAcked));
        }
    }

    /** Everything up to and including {@code psn} has been answered. */
    private void covered(int psn, long nanos) {
        if (!anyAck || Psn.isAfter(psn, highestAcked)) {
            anyAck = true;
            highestAcked = psn;
        }
        while (pendingCount > 0 && Psn.isAtOrBefore(pendingPsn[pendingHead], psn)) {
            rtt.recordValue(Math.max(0, nanos - pendingNanos[pendingHead]));
            pendingHead = (pendingHead + 1) % pendingPsn.length;
            pendingCount--;
        }
    }

    private void addPending(int psn, long nanos) {
        if (pendingCount == pendingPsn.length) {
            if (pendingPsn.length < MAX_PENDING) {
                int[] p = new int[pendingPsn.length * 2];
                long[] t = new long[p.length];
                for (int i = 0; i < pendingCount; i++) {
                    p[i] = pendingPsn[(pendingHead + i) % pendingPsn.length];
                    t[i] = pendingNanos[(pendingHead + i) % pendingPsn.length];
                }
                pendingPsn = p;
                pendingNanos = t;
                pendingHead = 0;
            } else {
                pendingHead = (pendingHead + 1) % pendingPsn.length; // forget the oldest
                pendingCount--;
            }
        }
        int tail = (pendingHead + pendingCount) % pendingPsn.length;
        pendingPsn[tail] = psn;
        pendingNanos[tail] = nanos;
        pendingCount++;
    }

    /** A retransmission from {@code psn} on: those PSNs give no round-trip sample (Karn's rule). */
    private void dropPendingFrom(int psn) {
        while (pendingCount > 0) {
            int last = (pendingHead + pendingCount - 1) % pendingPsn.length;
            if (Psn.isBefore(pendingPsn[last], psn)) {
                break;
            }
            pendingCount--;
        }
    }

    /**
     * PSN as a distance from this side's first request PSN, counted on past the 24-bit wrap so a graph does
     * not jump; relative to the last request, which is within half the PSN space of any PSN in flight.
     */
    long unwrap(int psn) {
        if (!started) {
            return 0;
        }
        return lastUnwrappedPsn + (Psn.compare(psn, lastRawPsn) >> 8);
    }

    private void advanceUnwrap(int psn) {
        lastUnwrappedPsn = unwrap(psn);
        lastRawPsn = psn;
    }
}
