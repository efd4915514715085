package io.jroce.cli.conform;

import io.jroce.cli.conn.ExchangeChannel;
import io.jroce.cli.conn.PeerTimeout;
import io.jroce.wire.Aeth;
import io.jroce.wire.Opcode;
import io.jroce.wire.Problem;
import io.jroce.wire.Psn;
import io.jroce.wire.RocePacket;
import io.netty.buffer.Unpooled;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * perftest {@code -R}'s exchange QP played with packets the tester builds itself: each message is one RC SEND Only to
 * the peer's exchange QP, sent again until its ACK comes (after an RNR NAK, once the peer's RNR timer would have
 * passed; IBTA 9.7.5.2), and each SEND Only the peer sends us is acknowledged and kept in order (a duplicate is
 * acknowledged again and not kept; IBTA 9.7.5.1). perftest's messages on this QP are at most 56 bytes, one packet
 * each. Only the peer's exchange QP is spoken to, only at the address on the command line.
 */
final class RawQpChannel implements ExchangeChannel {
    /** How often an unacknowledged SEND is sent again. */
    private static final long RESEND_NANOS = TimeUnit.MILLISECONDS.toNanos(200);
    /** Wait after an RNR NAK before the SEND goes again (above the minimum RNR timers rdma_cm peers set). */
    private static final long RNR_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
    /** Bound on messages the peer sent ahead of our reads. */
    private static final int MAX_QUEUED = 64;

    private final RawPort port;
    private final InetSocketAddress peer;
    private final int ourQpn;
    private final int peerQpn;
    private final String name;
    private int sendPsn;
    private int recvPsn;
    private int msn;
    private Duration timeout;
    private final ArrayDeque<byte[]> inbox = new ArrayDeque<>();

    /**
     * @param sendPsn the first PSN we send (the peer's REP's Starting PSN)
     * @param recvPsn the first PSN the peer sends (our REQ's Starting PSN)
     */
    RawQpChannel(RawPort port, InetSocketAddress peer, int ourQpn, int peerQpn, int sendPsn, int recvPsn, String name, Duration timeout) {
        this.port = port;
        this.peer = peer;
        this.ourQpn = ourQpn;
        this.peerQpn = peerQpn;
        this.sendPsn = sendPsn;
        this.recvPsn = recvPsn;
        this.name = name;
        this.timeout = timeout;
    }

    @Override
    public void write(byte[] b) throws IOException {
        int psn = sendPsn;
        sendPsn = Psn.next(sendPsn);
        byte[] datagram = Packet.of(Opcode.RC_SEND_ONLY).qp(peerQpn).psn(psn).ackReq(true).payload(b).build(port.local(), peer);
        long deadline = System.nanoTime() + timeout.toNanos();
        port.send(datagram, peer);
        long resendAt = System.nanoTime() + RESEND_NANOS;
        while (true) {
            long now = System.nanoTime();
            if (now >= deadline) {
                throw new PeerTimeout("peer " + name + " did not acknowledge our SEND of " + b.length + " bytes on its rdma_cm exchange QP within "
                        + timeout.toSeconds() + " s");
            }
            if (now >= resendAt) {
                port.send(datagram, peer);
                resendAt = now + RESEND_NANOS;
            }
            RocePacket p = next(Math.min(deadline, resendAt) - now);
            if (p == null || p.opcode() != Opcode.RC_ACKNOWLEDGE) continue;
            int syndrome = p.aeth().syndrome();
            switch (Aeth.kind(syndrome)) {
                case ACK -> {
                    if (!Psn.isBefore(p.psn(), psn)) return; // this PSN or a later one: ours arrived (IBTA 9.7.5.2, coalesced ACKs)
                }
                case RNR_NAK -> resendAt = System.nanoTime() + RNR_WAIT_NANOS;
                case NAK -> {
                    if (Aeth.value(syndrome) != 0) {
                        throw new IOException("peer " + name + " refused our SEND on its rdma_cm exchange QP: " + Reply.aethKind(syndrome));
                    }
                    resendAt = System.nanoTime(); // sequence error: the PSN it names is ours, send it again
                }
                default -> {
                }
            }
        }
    }

    @Override
    public byte[] readFully(int n, String what) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (inbox.isEmpty()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new PeerTimeout("peer " + name + " sent nothing of " + what + " within " + timeout.toSeconds()
                        + " s over the rdma_cm exchange QP: it is stuck or failed; see its output");
            }
            next(left);
        }
        byte[] m = inbox.poll();
        if (m.length < n) {
            throw new IOException("peer " + name + " sent " + m.length + " bytes where " + what + " (" + n + " bytes) belongs: it speaks "
                    + "another protocol or version");
        }
        return Arrays.copyOf(m, n);
    }

    @Override
    public boolean poll(Duration wait) throws IOException {
        long deadline = System.nanoTime() + wait.toNanos();
        while (inbox.isEmpty()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) return false;
            next(left);
        }
        return true;
    }

    /**
     * The next packet from the peer to our exchange QP within {@code nanos}, or null. The peer's SENDs are handled
     * here: acknowledged, and kept when they are the next in order.
     */
    private RocePacket next(long nanos) throws IOException {
        RawPort.Datagram d;
        try {
            d = port.poll(Math.max(1, nanos));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted");
        }
        if (d == null || !d.from().getAddress().equals(peer.getAddress())) return null;
        RocePacket p = new RocePacket();
        if (p.decode(Unpooled.wrappedBuffer(d.bytes()), 0, d.bytes().length) != Problem.NONE || p.destQp() != ourQpn) return null;
        if (p.opcode() == Opcode.RC_SEND_ONLY || p.opcode() == Opcode.RC_SEND_ONLY_WITH_IMMEDIATE) {
            if (p.psn() == recvPsn) {
                if (inbox.size() >= MAX_QUEUED) return null; // not acknowledged: the peer sends it again
                inbox.add(Arrays.copyOfRange(d.bytes(), p.payloadOffset(), p.payloadOffset() + p.payloadLength()));
                recvPsn = Psn.next(recvPsn);
                msn = (msn + 1) & Aeth.MSN_MASK;
                ack(p.psn());
            } else if (Psn.isBefore(p.psn(), recvPsn)) {
                ack(Psn.add(recvPsn, -1)); // a duplicate: acknowledged again, not kept (C9-105)
            }
            return null;
        }
        return p;
    }

    private void ack(int psn) throws IOException {
        port.send(Packet.of(Opcode.RC_ACKNOWLEDGE).qp(peerQpn).psn(psn).aeth(Aeth.ACK_UNLIMITED, msn).build(port.local(), peer), peer);
    }

    @Override
    public ExchangeChannel timeout(Duration t) {
        this.timeout = t;
        return this;
    }

    @Override
    public String peer() {
        return name;
    }

    @Override
    public void close() {
        // nothing of ours to release: the connection manager's connection is the link's
    }
}
