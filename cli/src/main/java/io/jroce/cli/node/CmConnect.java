package io.jroce.cli.node;

import io.jroce.cli.conn.PeerInfo;
import io.jroce.cli.conn.RemoteRegion;
import io.jroce.cli.node.Session.Failure;
import io.jroce.cli.node.Session.Qp;
import io.jroce.cli.node.SessionLanguage.Type;
import io.jroce.cli.node.SessionSyntax.Statement;
import io.jroce.endpoint.Gid;
import io.jroce.endpoint.JroceExtensions;
import io.jroce.endpoint.QpAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.RcConnect;
import io.jroce.endpoint.cm.CmConnParam;
import io.jroce.endpoint.cm.CmEvent;
import io.jroce.endpoint.cm.CmEventChannel;
import io.jroce.endpoint.cm.CmEventType;
import io.jroce.endpoint.cm.CmId;
import io.jroce.endpoint.cm.CmPortSpace;
import io.jroce.wire.IpText;
import io.jroce.wire.mad.CmRej;
import io.jroce.wire.mad.SidrRep;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code listen cm} and {@code connect cm}: the session's QP connected by the device's connection manager (rdma_cm
 * over QP 1) instead of the TCP exchange. Published regions travel in the REQ's and REP's private data: a count
 * byte, then per region a name length byte, the UTF-8 name, VA (8 bytes), rkey (4) and length (8), big-endian.
 */
final class CmConnect {
    /** REQ private data left after rdma_cm's 36-byte header; a REP has 196. */
    static final int REQ_ROOM = 56;
    static final int REP_ROOM = 196;

    private CmConnect() {
    }

    static void run(Session x, Statement s, String qpName, Qp q, int port, List<RemoteRegion> published, int rd,
                    Duration timeout) throws Failure {
        if (q.qp.type() == io.jroce.endpoint.QpType.UD) {
            runUd(x, s, qpName, q, port, timeout);
            return;
        }
        boolean listen = s.verb().equals("listen");
        Values v = x.values;
        // as over TCP, a jroce node offers (connect) or allows (listen) its transport extensions; they travel in the
        // last 8 bytes of the private data, so only while the published regions leave them free
        CmConnParam param = CmConnParam.defaults().responderResources(rd).initiatorDepth(rd).extensions(JroceExtensions.ALL);
        if (s.has("retry_cnt")) param.retryCount((int) v.value(s.arg("retry_cnt"), Type.SMALL));
        if (s.has("rnr_retry")) param.rnrRetryCount((int) v.value(s.arg("rnr_retry"), Type.SMALL));
        param.privateData(withReceiveBuffer(published, x.device.receiveBufferBytes(), listen ? REP_ROOM : REQ_ROOM, s.verb()));
        // rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT) on the id before rdma_connect / rdma_accept; else the path's
        int ackTimeout = s.has("ack_timeout") ? (int) v.value(s.arg("ack_timeout"), Type.SMALL) : -1;
        long deadline = System.nanoTime() + timeout.toNanos();
        CmEventChannel ch = new CmEventChannel();
        CmId id;
        List<RemoteRegion> regions;
        int peerBuffer = 0;
        try {
            if (listen) {
                CmId listener = CmId.create(x.cm(), ch);
                try {
                    listener.bind(port);
                    listener.listen(1);
                    x.out.printf("listen %s: waiting for an rdma_cm connect to port %d on %s (QP 1, timeout %s)%n", qpName, port,
                            IpText.of(x.device.address()), Session.human(timeout));
                    x.out.flush();
                    CmEvent req = next(ch, deadline, s);
                    if (req.type() != CmEventType.CONNECT_REQUEST) throw new Failure("listen: unexpected " + req);
                    id = req.id();
                    regions = decode(req.privateData());
                    peerBuffer = receiveBuffer(regions);
                    regions = PeerInfo.published(regions);
                    if (ackTimeout >= 0) id.setAckTimeout(ackTimeout);
                    id.useQp(q.qp);
                    id.accept(param);
                } finally {
                    listener.close();
                }
            } else {
                InetAddress host = v.get(s, "host", Type.ADDRESS, x.settings.peer());
                boolean told = false;
                while (true) {
                    id = CmId.create(x.cm(), ch);
                    if (ackTimeout >= 0) id.setAckTimeout(ackTimeout);
                    id.useQp(q.qp);
                    id.connect(host, port, param);
                    CmEvent e = next(ch, deadline, s);
                    if (e.type() == CmEventType.REJECTED && e.status() == 8 && System.nanoTime() < deadline) {
                        // nobody listens yet (REJ 8, invalid service ID): as the TCP connect, try again until timeout
                        if (!told) {
                            x.out.printf("connect %s: %s port %d refused (REJ 8, invalid service ID: nobody listens); retrying%n",
                                    qpName, IpText.of(host), port);
                            x.out.flush();
                            told = true;
                        }
                        id.close();
                        // the REJ moved the QP to ERR, as rdma_cm does (cma.c cma_ib_handler: cma_modify_qp_err), which
                        // flushed the receives posted before: their WR_FLUSH_ERR completions go, and they are posted
                        // again on the QP made ready for the next REQ
                        x.completions.discardFlushed(q.qp.recvCq(), q.qp.qpNum());
                        q.qp.modify(new QpAttr().state(QpState.RESET));
                        RcConnect.toInit(q.qp, RcConnect.Params.defaults().accessFlags(q.access));
                        for (io.jroce.endpoint.ReceiveWorkRequest r : q.unconnectedRecvs) q.qp.postRecv(r);
                        Thread.sleep(100);
                        continue;
                    }
                    if (e.type() == CmEventType.REJECTED) {
                        throw new Failure("connect: " + IpText.of(host) + " port " + port + " rejected the connection: reason "
                                + e.status() + " (" + CmRej.reasonName(e.status()) + ")");
                    }
                    if (e.type() != CmEventType.ESTABLISHED) {
                        throw new Failure("connect: " + IpText.of(host) + " port " + port + ": " + e.type()
                                + (e.type() == CmEventType.UNREACHABLE ? " (no answer to the REQ)" : ""));
                    }
                    regions = decode(e.privateData());
                    peerBuffer = receiveBuffer(regions);
                    regions = PeerInfo.published(regions);
                    break;
                }
            }
            if (listen) {
                CmEvent e = next(ch, deadline, s);
                if (e.type() != CmEventType.ESTABLISHED) throw new Failure("listen: " + e.type() + " instead of ESTABLISHED");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Failure(s.verb() + ": interrupted", e);
        } catch (IllegalStateException | IllegalArgumentException e) {
            throw new Failure(s.verb() + ": " + e.getMessage(), e);
        }
        q.cmId = id;
        q.cmEvents = ch;
        q.unconnectedRecvs.clear();
        if (peerBuffer > 0) q.qp.setPeerReceiveBuffer(peerBuffer);
        QpAttr a = q.qp.query();
        InetAddress peer = id.remoteAddress();
        q.peer = new PeerInfo(0, a.destQpNum(), a.rqPsn(), Gid.of(peer), a.pathMtu().bytes(), a.maxRdAtomic(), regions);
        q.mtu = a.pathMtu();
        StringBuilder names = new StringBuilder();
        for (RemoteRegion r : regions) {
            names.append(names.length() == 0 ? "" : ", ").append(r.name()).append(" (").append(r.length()).append(" bytes)");
        }
        x.out.printf("%s %s: connected by the CM, QPN 0x%06x to %s QPN 0x%06x, MTU %d, rd_atomic %d; peer regions: %s; extensions: %s%s%n",
                s.verb(), qpName, q.qp.qpNum(), IpText.of(peer), a.destQpNum(), a.pathMtu().bytes(), a.maxRdAtomic(),
                names.length() == 0 ? "none" : names, JroceExtensions.toString(q.qp.extensions()),
                peerBuffer > 0 ? "; peer receive buffer " + peerBuffer + " bytes" : "");
    }

    /**
     * {@code listen cm} / {@code connect cm} on a UD QP: rdma_cm's UDP port space, as udaddy. Listening answers one
     * SIDR_REQ for the port with the QP's number and Q_Key (rdma_accept); connecting sends SIDR_REQs until a listener
     * answers (status 1, nobody listens: tried again until the timeout) and keeps the peer's address handle, QPN and
     * Q_Key for the QP's sends.
     */
    private static void runUd(Session x, Statement s, String qpName, Qp q, int port, Duration timeout) throws Failure {
        boolean listen = s.verb().equals("listen");
        long deadline = System.nanoTime() + timeout.toNanos();
        CmEventChannel ch = new CmEventChannel();
        try {
            if (listen) {
                CmId listener = CmId.create(x.cm(), ch, null, CmPortSpace.UDP);
                try {
                    listener.bind(port);
                    listener.listen(1);
                    x.out.printf("listen %s: waiting for an rdma_cm SIDR_REQ for UDP port space port %d on %s (QP 1, timeout %s)%n",
                            qpName, port, IpText.of(x.device.address()), Session.human(timeout));
                    x.out.flush();
                    CmEvent req = next(ch, deadline, s);
                    if (req.type() != CmEventType.CONNECT_REQUEST) throw new Failure("listen: unexpected " + req);
                    CmId id = req.id();
                    id.useQp(q.qp);
                    id.accept(CmConnParam.defaults());
                    x.out.printf("listen %s: answered %s with QPN 0x%06x, Q_Key 0x%08x%n", qpName,
                            IpText.of(id.remoteAddress()), q.qp.qpNum(), id.qkey());
                    id.close();
                } finally {
                    listener.close();
                }
                return;
            }
            InetAddress host = x.values.get(s, "host", Type.ADDRESS, x.settings.peer());
            boolean told = false;
            while (true) {
                CmId id = CmId.create(x.cm(), ch, null, CmPortSpace.UDP);
                try {
                    id.useQp(q.qp);
                    id.connect(host, port, CmConnParam.defaults());
                    CmEvent e = next(ch, deadline, s);
                    if (e.type() == CmEventType.UNREACHABLE && e.status() == SidrRep.UNSUPPORTED && System.nanoTime() < deadline) {
                        if (!told) {
                            x.out.printf("connect %s: %s port %d: nobody listens (SIDR_REP status 1); retrying%n", qpName,
                                    IpText.of(host), port);
                            x.out.flush();
                            told = true;
                        }
                        Thread.sleep(100);
                        continue;
                    }
                    if (e.type() != CmEventType.ESTABLISHED) {
                        throw new Failure("connect: " + IpText.of(host) + " port " + port + ": " + e.type()
                                + (e.status() == CmEvent.ETIMEDOUT ? " (no answer to the SIDR_REQ)" : " status " + e.status()));
                    }
                    q.udPeer = e.ud();
                    x.out.printf("connect %s: resolved by SIDR, %s QPN 0x%06x, Q_Key 0x%08x%n", qpName, IpText.of(host),
                            e.ud().qpNum(), e.ud().qkey());
                    return;
                } finally {
                    id.close();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Failure(s.verb() + ": interrupted", e);
        } catch (IllegalStateException | IllegalArgumentException e) {
            throw new Failure(s.verb() + ": " + e.getMessage(), e);
        }
    }

    /** {@code disconnect}: rdma_disconnect, then wait for DISCONNECTED (at once if the peer released first). */
    static void disconnect(Session x, Statement s, String qpName, Qp q, Duration timeout) throws Failure {
        if (q.cmId == null) {
            q.qp.modify(new QpAttr().state(QpState.ERR));
            x.out.printf("disconnect %s: not connected by the CM; QP moved to ERR%n", qpName);
            return;
        }
        try {
            q.cmId.disconnect();
            long deadline = System.nanoTime() + timeout.toNanos();
            CmEvent e;
            do {
                e = next(q.cmEvents, deadline, s);
            } while (e.type() != CmEventType.DISCONNECTED);
            x.out.printf("disconnect %s: DISCONNECTED, QP %s%n", qpName, q.qp.state());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Failure("disconnect: interrupted", e);
        } catch (IllegalStateException e) {
            throw new Failure("disconnect: " + e.getMessage(), e);
        }
    }

    private static CmEvent next(CmEventChannel ch, long deadline, Statement s) throws InterruptedException, Failure {
        long left = deadline - System.nanoTime();
        CmEvent e = left > 0 ? ch.getEvent(Duration.ofNanos(left)) : null;
        if (e == null) throw new Failure(s.verb() + ": no connection within the timeout");
        return e;
    }

    static byte[] encode(List<RemoteRegion> regions, int room, String verb) throws Failure {
        ByteBuffer b = ByteBuffer.allocate(1 + regions.size() * (1 + 255 + 20));
        b.put((byte) regions.size());
        for (RemoteRegion r : regions) {
            byte[] name = r.name().getBytes(StandardCharsets.UTF_8);
            b.put((byte) name.length).put(name).putLong(r.va()).putInt(r.rkey()).putLong(r.length());
        }
        if (b.position() > room) {
            throw new Failure(verb + ": the published regions take " + b.position() + " bytes, more than the " + room
                    + " of the " + (room == REQ_ROOM ? "REQ" : "REP") + "'s private data: publish fewer or shorter names");
        }
        byte[] out = new byte[regions.isEmpty() ? 0 : b.position()];
        b.flip().get(out);
        return out;
    }

    /** The pseudo-region that tells the peer this device's socket receive buffer (its va), as the TCP exchange does. */
    static final String RECEIVE_BUFFER = "\0rb";

    /**
     * The published regions and, when it fits in the private data after them, this device's receive buffer as a
     * pseudo-region: the requester towards us then keeps no more in flight than it holds.
     */
    static byte[] withReceiveBuffer(List<RemoteRegion> published, int bytes, int room, String verb) throws Failure {
        byte[] plain = encode(published, room, verb);
        List<RemoteRegion> more = new ArrayList<>(published);
        more.add(new RemoteRegion(RECEIVE_BUFFER, bytes, 0, 0));
        try {
            return encode(more, room, verb);
        } catch (Failure tooLong) {
            return plain;
        }
    }

    /** The peer's receive buffer from its pseudo-region, 0 when it told none. */
    static int receiveBuffer(List<RemoteRegion> regions) {
        for (RemoteRegion r : regions) {
            if (r.name().equals(RECEIVE_BUFFER)) return (int) Math.min(Integer.MAX_VALUE, Math.max(0, r.va()));
        }
        return 0;
    }

    static List<RemoteRegion> decode(byte[] data) {
        List<RemoteRegion> out = new ArrayList<>();
        if (data.length == 0) return out;
        ByteBuffer b = ByteBuffer.wrap(data);
        int n = b.get() & 0xFF;
        try {
            for (int i = 0; i < n; i++) {
                byte[] name = new byte[b.get() & 0xFF];
                b.get(name);
                out.add(new RemoteRegion(new String(name, StandardCharsets.UTF_8), b.getLong(), b.getInt(), b.getLong()));
            }
        } catch (RuntimeException e) {
            return List.of(); // a peer that is not a jroce node (its private data means something else): no regions
        }
        return out;
    }
}
