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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The {@link MadPort} of a device's QP 1 (the GSI, {@link Device#openGsi}): MADs go out as UD SENDs to the peer's
 * QP 1 with Q_Key 0x80010000 (what the Linux MAD layer does, mad.c), and come in through receive buffers of
 * 40 + 256 bytes (mad.c ib_mad_post_receive_mads), whose GRH area names the sender: for IPv4 the IPv4 header sits
 * in bytes 20..39 (rxe_resp.c), its source address at 32..35; for IPv6 the IPv6 header's source at 8..23.
 *
 * <p>A thread of its own polls the CQ. Sends use a fixed ring of slots; when all are in flight a MAD is dropped
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
    private Thread poller;

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
        poller = new Thread(() -> poll(receiver), "jroce-gsi-" + device.address().getHostAddress());
        poller.setDaemon(true);
        poller.start();
    }

    private void poll(Receiver receiver) {
        WorkCompletion[] wcs = new WorkCompletion[32];
        boolean v6 = device.address() instanceof Inet6Address;
        int size = GRH + MadHeader.MAD_SIZE;
        while (!closed) {
            int n;
            try {
                n = cq.poll(wcs, wcs.length, 100, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                if (closed || !device.isOpen()) return; // the device went first: nothing more will come
                throw e;
            }
            for (int i = 0; i < n; i++) {
                WorkCompletion wc = wcs[i];
                if ((wc.wrId() & SEND_FLAG) != 0) {
                    freeSend.offer((int) (wc.wrId() & 0xFFFF));
                    continue;
                }
                int slot = (int) wc.wrId();
                if (wc.ok() && wc.opcode() == WcOpcode.RECV && wc.byteLen() > GRH) {
                    int base = slot * size;
                    byte[] src = new byte[v6 ? 16 : 4];
                    recv.buffer().get(base + (v6 ? 8 : 32), src);
                    int len = Math.min(wc.byteLen() - GRH, MadHeader.MAD_SIZE);
                    byte[] mad = new byte[MadHeader.MAD_SIZE];
                    recv.buffer().get(base + GRH, mad, 0, len);
                    try {
                        receiver.receive(InetAddress.getByAddress(src), wc.srcQp(), mad, len);
                    } catch (UnknownHostException e) {
                        throw new AssertionError(e);
                    }
                }
                if (closed) return;
                try {
                    postRecv(slot);
                } catch (RuntimeException e) {
                    if (!closed) log.debug("gsi: repost failed: {}", e.toString());
                    return;
                }
            }
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
        if (poller != null) poller.interrupt();
        try {
            qp.destroy();
        } catch (RuntimeException e) {
            log.debug("gsi: destroy: {}", e.toString());
        }
    }
}
