package io.jroce.cli.conform;

import io.jroce.wire.mad.CmAttribute;
import io.jroce.wire.mad.CmRej;
import io.jroce.wire.mad.CmRep;
import io.netty.buffer.Unpooled;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * One connection made through the peer's connection manager with MADs the tester builds itself (IBTA 12.9, the active
 * side): REQ, the peer's REP, RTU; at the end DREQ and the peer's DREP. Kept for the cm cases: the REQ sent (a
 * duplicate of it is a case), the REP received (its responder resources and initiator depth are judged), what the
 * peer did while our RTU was held back (the lost-RTU case), and the comm IDs the DREQ cases name.
 */
final class CmConnection {
    /** How long the RTU is held back on the first connection to see whether the peer resends its REP. */
    static final long RTU_HOLD_NANOS = TimeUnit.SECONDS.toNanos(2);
    /** A REQ is resent this often while unanswered, as a CM resends on its timeout. */
    static final long RESEND_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** A DREQ is resent this often, this many times at most. */
    static final int DREQ_RESEND_SECONDS = 2;
    static final int DREQ_SENDS = 5;

    /** IBTA Table 109 reason 8: no listener for the service ID. */
    static final int REJ_INVALID_SERVICE_ID = 8;
    /** How long to wait before asking a peer that does not listen yet again. */
    static final long NOT_LISTENING_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    final Gsi gsi;
    final CmMads.Req req;
    final byte[] reqMad;
    final int cmPort;
    byte[] rep;
    int remoteCommId;
    int peerQpn;
    /** The answer while the RTU was held back ("REP", "none", ...), or null when it was not held back. */
    String rtuLost;
    /** perftest -R: the exchange QP's connection, made before this one, whose REQ asked responder resources and initiator depth 0. */
    CmConnection exchange;
    /** The answers of the cases that need the listener, asked before this connection was made; null: asked when they run. */
    java.util.Map<String, String> listenerAnswers;
    /** The DREQ sent to end the connection, once sent. */
    byte[] dreq;
    boolean released;
    private long tid;

    private CmConnection(Gsi gsi, CmMads.Req req, int cmPort) {
        this.gsi = gsi;
        this.req = req;
        this.reqMad = CmMads.req(req);
        this.cmPort = cmPort;
        this.tid = req.tid();
    }

    /** The first PSN the peer sends (the REP's Starting PSN). */
    int peerStartingPsn() {
        return new CmRep().wrap(Unpooled.wrappedBuffer(rep), 0).startingPsn();
    }

    /** A transaction ID no other MAD of this connection used. */
    long nextTid() {
        return ++tid;
    }

    /** A fresh, non-zero comm ID (IBTA 12.6.3: zero names no connection). */
    static int newCommId() {
        int id;
        do {
            id = ThreadLocalRandom.current().nextInt();
        } while (id == 0);
        return id;
    }

    /**
     * REQ until REP (resent every second, within {@code timeoutNanos}), then, when {@code holdRtu}, a wait for the peer
     * to resend its REP, then RTU. A REJ or silence is an IOException saying so.
     */
    static CmConnection connect(Gsi gsi, CmMads.Req req, int cmPort, long timeoutNanos, boolean holdRtu) throws IOException {
        CmConnection c = new CmConnection(gsi, req, cmPort);
        long deadline = System.nanoTime() + timeoutNanos;
        gsi.send(c.reqMad);
        byte[] answer = null;
        while (answer == null) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new IOException("no answer from the connection manager at " + io.jroce.wire.IpText.of(gsi.peer().getAddress())
                        + " (UDP port " + gsi.peer().getPort() + ", QP 1) to a REQ for port " + cmPort + ": is the server listening there?");
            }
            List<byte[]> got = gsi.collect(Math.min(left, RESEND_NANOS), 1, Gsi.tid(req.tid()));
            if (got.isEmpty()) {
                gsi.sendMore(c.reqMad); // cm.c: the REQ is resent on its timeout
                continue;
            }
            byte[] m = got.get(0);
            int attr = CmMads.attribute(m);
            if (attr == CmAttribute.REJ.id()) {
                CmRej rej = new CmRej().wrap(Unpooled.wrappedBuffer(m), 0);
                if (rej.reason() == REJ_INVALID_SERVICE_ID && deadline - System.nanoTime() > NOT_LISTENING_NANOS) {
                    // a server just started may not listen yet (as a TCP client retries a refused connect): again shortly
                    sleepNanos(NOT_LISTENING_NANOS);
                    gsi.send(c.reqMad);
                    continue;
                }
                throw new IOException("the connection manager rejected our REQ for port " + cmPort + ": REJ reason " + rej.reason() + " ("
                        + CmRej.reasonName(rej.reason()) + ")" + (rej.reason() == 8 ? ": nothing listens on that port" : ""));
            }
            if (attr == CmAttribute.REP.id() && new CmRep().wrap(Unpooled.wrappedBuffer(m), 0).remoteCommId() == req.commId()) answer = m;
            // an MRA asks for more time: keep waiting (within the connect timeout)
        }
        c.rep = answer;
        CmRep rep = new CmRep().wrap(Unpooled.wrappedBuffer(answer), 0);
        c.remoteCommId = rep.localCommId();
        c.peerQpn = rep.localQpn();
        if (holdRtu) {
            // IBTA 12.9 (passive side, REP sent): without an RTU the REP is resent on the REQ's Local CM Response Timeout
            List<byte[]> again = gsi.collect(Math.min(RTU_HOLD_NANOS, Math.max(0, deadline - System.nanoTime())), 1, Gsi.tid(req.tid()));
            c.rtuLost = CmMads.words(again, null);
        }
        gsi.sendMore(CmMads.rtu(req.tid(), req.commId(), c.remoteCommId));
        return c;
    }

    static void sleepNanos(long nanos) throws IOException {
        try {
            TimeUnit.NANOSECONDS.sleep(nanos); // pacing a retry towards a peer that is starting, not waiting for an event
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted");
        }
    }

    /**
     * DREQ until the peer's DREP, resent every {@value #DREQ_RESEND_SECONDS} s, {@value #DREQ_SENDS} at most (a CM may
     * answer only once its application disconnects: cm.c sends the DREP from rdma_disconnect): the answers, as words
     * ("none" after the last wait). The connection is released either way.
     */
    String release(long waitNanos) throws IOException {
        released = true;
        dreq = CmMads.dreq(nextTid(), req.commId(), remoteCommId, peerQpn);
        long tidOf = Unpooled.wrappedBuffer(dreq).getLong(8);
        gsi.send(dreq);
        long each = Math.max(waitNanos, TimeUnit.SECONDS.toNanos(DREQ_RESEND_SECONDS));
        for (int sent = 1; ; sent++) {
            List<byte[]> got = gsi.collect(each, 1, Gsi.tid(tidOf));
            if (!got.isEmpty() || sent >= DREQ_SENDS) return CmMads.words(got, dreq);
            gsi.sendMore(dreq); // cm.c: the DREQ is resent on its timeout (a CM whose application decides first drops it)
        }
    }
}
