package io.jroce.endpoint.cm;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.AddressHandle;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WcOpcode;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;
import io.jroce.wire.mad.MadHeader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The {@link MadPort} of a device's QP 1 (the GSI, {@link Device#openGsi}): MADs go out as UD SENDs to the peer's
 * QP 1 with Q_Key 0x80010000 (what the Linux MAD layer does, mad.c), and come in through receive buffers of
 * 40 + 256 bytes (mad.c ib_mad_post_receive_mads), whose GRH area names the sender: for IPv4 the IPv4 header sits
 * in bytes 20..39 (rxe_resp.c), its source address at 32..35; for IPv6 the IPv6 header's source at 8..23.
 *
 * <p>QP 1 has no thread of its own: its CQ's completion event, raised on the device's loop (whichever thread runs
 * the device), drains the CQ there, hands each MAD to the receiver (which only queues it) and posts its buffer
 * again. Sends use a fixed ring of slots; when all are in flight a MAD is dropped
 * (and counted), as a datagram may be. Address handles are cached per peer, a bounded number.
 */
final class GsiMadPort implements MadPort {
    private static final Logger log = LoggerFactory.getLogger(GsiMadPort.class);
    static final int GRH = 40;
    static final int RECV_SLOTS = 256;
    static final int SEND_SLOTS = 64;
    static final int MAX_AH = 1024;
    private static final long SEND_FLAG = 1L << 62;

    private final Device device;
    private final int peerUdpPort;
    private final ProtectionDomain pd;
    private final CompletionQueue cq;
    private final QueuePair qp;
    private final MemoryRegion recv;
    private final MemoryRegion send;
    private final ArrayBlockingQueue<Integer> freeSend = new ArrayBlockingQueue<>(SEND_SLOTS);
    private final Map<InetAddress, AddressHandle> ahs = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<InetAddress, AddressHandle> e) {
            return size() > MAX_AH;
        }
    };
    final AtomicLong sendDropped = new AtomicLong();
    private volatile boolean closed;
    private volatile Receiver receiver;
    /** The device's loop only: the drain's completions. */
    private final WorkCompletion[] wcs = new WorkCompletion[32];

    GsiMadPort(Device device, int peerUdpPort) {
        this.device = device;
        this.peerUdpPort = peerUdpPort;
        this.pd = device.allocPd();
        this.cq = device.createCq(RECV_SLOTS + SEND_SLOTS + 8);
        this.qp = pd.openGsi(new QpInitAttr(cq).maxRecvWr(RECV_SLOTS).maxSendWr(SEND_SLOTS));
        this.recv = pd.allocateAndRegister(RECV_SLOTS * (GRH + MadHeader.MAD_SIZE), Access.LOCAL_WRITE);
        this.send = pd.allocateAndRegister(SEND_SLOTS * MadHeader.MAD_SIZE, Access.LOCAL_WRITE);
        for (int i = 0; i < SEND_SLOTS; i++) freeSend.add(i);
        for (int i = 0; i < RECV_SLOTS; i++) postRecv(i);
    }

    private void postRecv(int slot) {
        int size = GRH + MadHeader.MAD_SIZE;
        qp.postRecv(new ReceiveWorkRequest(slot, Sge.of(recv, (long) slot * size, size)));
    }

    @Override
    public InetAddress localAddress() {
        return device.address();
    }

    @Override
    public void start(Receiver receiver) {
        this.receiver = receiver;
        cq.setEventListener(this::drain);
        cq.requestNotify(false);
        device.runOnLoop(this::drain); // what arrived before the CQ was armed
    }

    /**
     * On the device's loop, from the CQ's event: every completion now in the CQ (receives to the receiver, sends
     * back to the free slots), then the CQ armed again and looked at once more, so a completion pushed between the
     * last poll and the arming is not left behind. Never throws into the receive path that raised the event.
     */
    private void drain() {
        Receiver r = receiver;
        if (r == null) return;
        try {
            while (!closed) {
                int n = cq.poll(wcs, wcs.length);
                if (n == 0) {
                    cq.requestNotify(false);
                    n = cq.poll(wcs, wcs.length);
                    if (n == 0) return;
                }
                for (int i = 0; i < n && !closed; i++) complete(wcs[i], r);
            }
        } catch (RuntimeException e) {
            if (!closed && device.isOpen()) log.warn("gsi: {}", e.toString());
        }
    }

    private void complete(WorkCompletion wc, Receiver r) {
        if ((wc.wrId() & SEND_FLAG) != 0) {
            freeSend.offer((int) (wc.wrId() & 0xFFFF));
            return;
        }
        int slot = (int) wc.wrId();
        if (wc.ok() && wc.opcode() == WcOpcode.RECV && wc.byteLen() > GRH) {
            boolean v6 = device.address() instanceof Inet6Address;
            int base = slot * (GRH + MadHeader.MAD_SIZE);
            byte[] src = new byte[v6 ? 16 : 4];
            recv.buffer().get(base + (v6 ? 8 : 32), src);
            int len = Math.min(wc.byteLen() - GRH, MadHeader.MAD_SIZE);
            byte[] mad = new byte[MadHeader.MAD_SIZE];
            recv.buffer().get(base + GRH, mad, 0, len);
            try {
                r.receive(InetAddress.getByAddress(src), wc.srcQp(), mad, len);
            } catch (UnknownHostException e) {
                throw new AssertionError(e);
            }
        }
        // a receive that failed was flushed (the QP is in error, or closing): posting it again would be flushed
        // again at once, from inside this very event
        if (closed || !wc.ok()) return;
        try {
            postRecv(slot);
        } catch (RuntimeException e) {
            log.debug("gsi: repost failed: {}", e.toString()); // the QP is gone or failed: nothing more will come
        }
    }

    @Override
    public void send(InetAddress peer, byte[] mad) {
        send(peer, MadHeader.GSI_QPN, mad);
    }

    @Override
    public void send(InetAddress peer, int qpn, byte[] mad) {
        if (closed) return;
        Integer slot = freeSend.poll();
        if (slot == null) {
            sendDropped.incrementAndGet();
            return;
        }
        int off = slot * MadHeader.MAD_SIZE;
        send.buffer().put(off, mad, 0, MadHeader.MAD_SIZE);
        AddressHandle ah = ahs.computeIfAbsent(peer, p -> pd.createAh(p, peerUdpPort));
        try {
            qp.postSend(new SendWorkRequest(SEND_FLAG | slot, WrOpcode.SEND, Sge.of(send, off, MadHeader.MAD_SIZE))
                    .ud(ah, qpn, Device.GSI_QKEY).signaled());
        } catch (RuntimeException e) {
            freeSend.offer(slot);
            throw e;
        }
    }

    @Override
    public void close() {
        closed = true;
        cq.setEventListener(null);
        try {
            qp.destroy();
        } catch (RuntimeException e) {
            log.debug("gsi: destroy: {}", e.toString());
        }
    }
}
