package io.jroce.cli.conform;

import io.jroce.wire.Aeth;
import io.jroce.wire.Opcode;
import io.jroce.wire.Psn;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * One connection to the peer's QP from the cases' side: our raw port, the peer's QP and the PSN it expects next
 * from us ({@link #epsn}), with the steps every case is made of: build a packet, send it, collect what comes back
 * for it within the case timeout. Answers are the peer's packets to our QPN that are not requests (the peer's own
 * traffic, e.g. ibv_rc_pingpong's pings, is acknowledged, counted and left out).
 */
final class Probe {
    private final RawPort port;
    final Target target;
    final PeerLink.Local local;
    private final long timeoutNanos;
    private final long lingerNanos;
    private int epsn;
    /** The PSN the peer was last seen to expect (where the running case began). */
    private int confirmed;
    /** The PSN the last RNR or sequence error NAK named, -1 when none since the last resync. */
    private int waitsAt = -1;
    /** Requests the peer sent us meanwhile (acknowledged, not executed). */
    long peerRequests;
    private int peerMsn;
    private Gsi gsi;

    Probe(RawPort port, Target target, PeerLink.Local local, long timeoutNanos) {
        this.port = port;
        this.target = target;
        this.local = local;
        this.timeoutNanos = timeoutNanos;
        this.lingerNanos = Math.min(timeoutNanos / 10, 20_000_000L);
        this.epsn = local.psn();
        this.confirmed = epsn;
    }

    /** The peer's QP 1: the connection's, when the QP came through the connection manager, else one of our own. */
    Gsi gsi() {
        if (target.cm() != null) return target.cm().gsi;
        if (gsi == null) gsi = new Gsi(port, target.roce());
        return gsi;
    }

    /** How long each step waits for answers. */
    long timeoutNanos() {
        return timeoutNanos;
    }

    /** The PSN the peer's responder expects next. */
    int epsn() {
        return epsn;
    }

    /** The next {@code n} PSNs: returns the first and moves past them. */
    int take(int n) {
        int p = epsn;
        epsn = Psn.add(epsn, n);
        return p;
    }

    void setEpsn(int psn) {
        epsn = psn & Psn.MASK;
    }

    int mtu() {
        return target.mtu();
    }

    Packet packet(Opcode op, int psn) {
        return Packet.of(op).qp(target.qpn()).psn(psn);
    }

    Packet writeOnly(int psn, long va, int rkey, byte[] data) {
        return packet(Opcode.RC_RDMA_WRITE_ONLY, psn).ackReq(true).reth(va, rkey, data.length).payload(data);
    }

    Packet read(int psn, long va, int rkey, long len) {
        return packet(Opcode.RC_RDMA_READ_REQUEST, psn).ackReq(true).reth(va, rkey, len);
    }

    Packet sendOnly(int psn, byte[] data) {
        return packet(Opcode.RC_SEND_ONLY, psn).ackReq(true).payload(data);
    }

    Packet fetchAdd(int psn, long va, int rkey, long add) {
        return packet(Opcode.RC_FETCH_ADD, psn).ackReq(true).atomic(va, rkey, add, 0);
    }

    Packet cmpSwap(int psn, long va, int rkey, long swap, long compare) {
        return packet(Opcode.RC_COMPARE_SWAP, psn).ackReq(true).atomic(va, rkey, swap, compare);
    }

    /** Sends {@code ps} in order (stale answers from earlier cases are dropped first). */
    void send(Packet... ps) throws IOException {
        port.drain();
        sendMore(ps);
    }

    /** Sends without dropping what arrived already (a later step of the same case). */
    void sendMore(Packet... ps) throws IOException {
        for (Packet p : ps) port.send(p.build(port.local(), target.roce()), target.roce());
    }

    void sendBytes(byte[] datagram) throws IOException {
        port.send(datagram, target.roce());
    }

    InetSocketAddress localAddress() {
        return port.local();
    }

    /**
     * Collects answers until {@code want} have arrived (then a short linger catches extra ones) or the timeout
     * passes; {@code want == 0} waits the whole timeout, for cases whose right answer is silence.
     */
    List<Reply> collect(int want) throws IOException {
        List<Reply> out = new ArrayList<>();
        long deadline = System.nanoTime() + timeoutNanos;
        boolean lingering = false;
        RawPort.Datagram d;
        while ((d = port.pollUntil(deadline)) != null) {
            if (!d.from().getAddress().equals(target.roce().getAddress())) continue;
            Reply r = Reply.decode(d.bytes(), d.from(), port.local(), local.qpn());
            if (r == null) continue;
            if (r.request()) {
                peerRequests++;
                acknowledge(r);
                continue;
            }
            out.add(r);
            // an RNR NAK or a sequence error NAK names the PSN the peer waits for: where resync starts
            if (r.kind().equals("RNR") || r.kind().equals("NAK-SEQ")) waitsAt = r.psn();
            if (!lingering && want > 0 && out.size() >= want) {
                lingering = true;
                deadline = System.nanoTime() + lingerNanos;
            }
        }
        return out;
    }

    /**
     * The peer's own requests (ibv_rc_pingpong's pings) are acknowledged when they ask for it, so that its
     * requester does not exhaust its retries and take the QP under test to the error state. Nothing is executed.
     */
    private void acknowledge(Reply request) throws IOException {
        if (!request.ackReq() || !request.icrcOk()) return;
        peerMsn = (peerMsn + 1) & Aeth.MSN_MASK;
        sendMore(Packet.of(Opcode.RC_ACKNOWLEDGE).qp(target.qpn()).psn(request.psn()).aeth(Aeth.ACK_UNLIMITED, peerMsn));
    }

    /** Sends and collects. */
    List<Reply> exchange(int want, Packet... ps) throws IOException {
        send(ps);
        return collect(want);
    }

    /** PSNs a READ of {@code len} bytes uses: one per response packet (IBTA 9.7.4.1.3; rxe_req.c update_wqe_psn). */
    int readPsns(long len) {
        return (int) Math.max(1, (len + mtu() - 1) / mtu());
    }

    /**
     * Reads {@code len} bytes of the peer's memory at {@code va} with an RDMA READ at the expected PSN: the bytes,
     * or null when the answer was anything but complete READ responses with the right PSNs.
     */
    byte[] readBack(long va, int len) throws IOException {
        Target.Region r = target.region();
        int n = readPsns(len);
        int psn = take(n);
        List<Reply> rs = exchange(n, read(psn, va, r.rkey(), len));
        if (rs.size() != n) return null;
        byte[] out = new byte[len];
        int off = 0;
        for (int i = 0; i < n; i++) {
            Reply x = rs.get(i);
            if (!x.kind().startsWith("READ-") || x.kind().contains("/") || x.psn() != Psn.add(psn, i) || off + x.data().length > len) {
                return null;
            }
            System.arraycopy(x.data(), 0, out, off, x.data().length);
            off += x.data().length;
        }
        return off == len ? out : null;
    }

    /**
     * Checks that the peer's QP still answers at the expected PSN, and finds that PSN again if a case left it
     * elsewhere. The probe is a zero-length request (RDMA WRITE, else READ, else SEND; IBTA 9.4: a zero-length
     * operation needs no valid R_Key): answered at its own PSN, the PSN was right; a PSN sequence error NAK names the
     * PSN the peer expects; an ACK of an earlier PSN means the probe was a duplicate, re-acknowledged with the last
     * PSN the peer executed (IBTA 9.7.5.1, C9-105), so the peer expects the next one. The probe starts at the PSN
     * the case's last RNR or sequence error NAK named, if any, else at {@link #epsn}. Silence after a sequence error
     * NAK (the peer drops the rest of the gap, rxe_resp.c check_psn) is met by probing again at the PSN where the
     * last case began. Returns false when the peer does not answer.
     */
    boolean resync() throws IOException {
        int at = waitsAt >= 0 ? waitsAt : epsn;
        try {
            return probeFrom(at);
        } finally {
            waitsAt = -1; // the probes' own NAKs were handled here
        }
    }

    private boolean probeFrom(int at) throws IOException {
        for (int attempt = 0; attempt < 8; attempt++) {
            List<Reply> rs = exchange(1, ping(at));
            if (rs.isEmpty()) {
                if (at != confirmed && writePing()) {
                    at = confirmed;
                    continue;
                }
                return false;
            }
            Reply r = rs.get(0);
            if (r.kind().equals("RNR") && r.psn() == at) {
                epsn = at; // an RNR NAKed request is dropped: the peer still expects it
                confirmed = epsn;
                return true;
            }
            if ((r.kind().equals("ACK") || r.kind().equals("READ-ONLY")) && r.psn() == at) {
                epsn = Psn.next(at);
                confirmed = epsn;
                return true;
            }
            if (r.kind().equals("ACK") && Psn.isBefore(r.psn(), at) || r.kind().equals("NAK-SEQ")) {
                at = r.kind().equals("ACK") ? Psn.next(r.psn()) : r.psn();
                continue;
            }
            return false;
        }
        return false;
    }

    private boolean writePing() {
        return target.grants(Target.Access.WRITE) || target.region() == null && !target.receives();
    }

    private Packet ping(int psn) {
        if (writePing()) {
            return packet(Opcode.RC_RDMA_WRITE_ONLY, psn).ackReq(true).reth(0, 0, 0);
        }
        if (target.grants(Target.Access.READ)) return read(psn, 0, 0, 0);
        return sendOnly(psn, new byte[0]);
    }

    /** {@code n} bytes that differ from case to case ({@code seed}) and from a zeroed buffer. */
    static byte[] pattern(int seed, int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) b[i] = (byte) (seed * 31 + i * 7 + 1);
        return b;
    }
}
