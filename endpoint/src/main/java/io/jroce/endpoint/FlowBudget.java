package io.jroce.endpoint;

import java.util.ArrayDeque;

/**
 * Flow control for one transport (one event loop and its socket): what its RC QPs may keep in flight against the
 * socket's receive buffer. IBA has no receive window, but a jroce peer receives through a UDP socket buffer the kernel
 * caps, and past it the kernel drops at full speed, each drop costing a Go-Back-N pass or a timeout: 256 QPs of 128
 * PSNs are 32768 datagrams against a buffer of about 3600 at MTU 1024. A peer on a machine like ours has the same
 * buffer, so the budget is counted against our own. rdma_rxe and NICs receive without a socket buffer; for them this
 * only spreads a busy device's sending over its QPs, and with one busy QP and the default 4 MiB buffer it is above
 * the 128-PSN window at every MTU. Event loop only.
 */
final class FlowBudget {
    /** The smallest window flow control leaves a QP, however small the receive buffer. */
    static final int MIN_WINDOW = 4;

    private final int receiveBufferBytes;
    private final int deviceWindow;
    /** Packets the QPs have in flight, the sum of their {@link QueuePair#flowHeld}. */
    int inFlight;
    /** QPs that stopped for the budget: run again when acknowledgements free some (one entry per QP). */
    private final ArrayDeque<QueuePair> waiters = new ArrayDeque<>();
    /** The waiter {@link #runWaiters} is running: its turn, which the QPs still waiting behind it do not block. */
    private QueuePair turn;

    /** {@link #capacity} per path MTU 256, 512, 1024, 2048, 4096, computed once: it is read for every packet sent. */
    private final int[] capacityByMtu = new int[5];

    FlowBudget(int receiveBufferBytes, int deviceWindow) {
        this.receiveBufferBytes = receiveBufferBytes;
        this.deviceWindow = deviceWindow;
        for (int i = 0; i < capacityByMtu.length; i++) capacityByMtu[i] = computeCapacity(256 << i);
    }

    /**
     * How many datagrams of path MTU {@code mtu} the QPs together may keep in flight: three quarters of what the
     * receive buffer holds, counted in the kernel's memory per datagram (the packet in a power-of-two allocation with
     * the skb's shared info, plus the sk_buff: about 8.4 KB for MTU 4096, 2.3 KB for 1024). The last quarter is
     * headroom for the packet with AckReq a QP that stops may still send (Requester.transmit), for resends, which
     * are not counted again, and for the requests, acknowledgements and READ responses that share the buffer.
     */
    int capacity(int mtu) {
        int i = Integer.numberOfTrailingZeros(mtu) - 8;
        return Integer.bitCount(mtu) == 1 && i >= 0 && i < capacityByMtu.length ? capacityByMtu[i] : computeCapacity(mtu);
    }

    private int computeCapacity(int mtu) {
        return capacity(receiveBufferBytes, mtu);
    }

    /** {@link #capacity} of a receive buffer of {@code receiveBufferBytes}: also a peer's, when it told us its own. */
    static int capacity(int receiveBufferBytes, int mtu) {
        return Math.max(MIN_WINDOW, receiveBufferBytes / 4 * 3 / kernelBytesPerPacket(mtu));
    }

    /** The smallest receive buffer (as the kernel reports it) whose {@link #capacity} at {@code mtu} is {@code packets}. */
    static int receiveBufferFor(int packets, int mtu) {
        long need = (long) packets * kernelBytesPerPacket(mtu);
        long bytes = need / 3 * 4; // the smallest b with b / 4 * 3 >= need is near 4 * need / 3
        while (bytes / 4 * 3 < need) bytes++;
        return (int) Math.min(Integer.MAX_VALUE, bytes);
    }

    /** A datagram of path MTU {@code mtu} in the kernel's receive queue: a power-of-two allocation, its shared info, the sk_buff. */
    private static int kernelBytesPerPacket(int mtu) {
        return (Integer.highestOneBit(mtu + 80 + 320 - 1) << 1) + 256;
    }

    /** The PSNs one QP of path MTU {@code mtu} may keep unacknowledged: the device window within the capacity. */
    int windowFor(int mtu) {
        return Math.min(deviceWindow, capacity(mtu));
    }

    /**
     * Whether {@code qp} may send one more new packet: while the QPs together have fewer than {@link #capacity}
     * packets in flight, and no other QP waits for room ahead of it. A QP with nothing in flight waits too: the QPs
     * that fill the budget each stopped on a packet that asks for an acknowledgement, and those acknowledgements free
     * the room it waits for. Many QPs starting at once (4096 QPs of one packet each are 35 MB at MTU 4096) then send
     * within the receiver's buffer instead of dropping past it, and they take turns in the order they stopped, each
     * turn a burst acknowledged once, instead of every QP trickling one packet at a time, each acknowledged alone.
     */
    boolean allows(QueuePair qp) {
        return inFlight < capacity(qp.mtu) && (turn == qp || waiters.isEmpty());
    }

    /** Whether one more packet of path MTU {@code mtu} fills the budget (that packet asks for an acknowledgement). */
    boolean fillsWithNext(int mtu) {
        return inFlight + 1 >= capacity(mtu);
    }

    /** {@code qp} stopped for the budget. */
    void await(QueuePair qp) {
        if (!qp.flowWaiting) {
            qp.flowWaiting = true;
            waiters.add(qp);
        }
    }

    /** Lets the QPs that waited send again, oldest first, while the budget has room. */
    void runWaiters() {
        for (int n = waiters.size(); n > 0 && !waiters.isEmpty(); n--) {
            QueuePair qp = waiters.peekFirst();
            if (inFlight >= capacity(qp.mtu)) return;
            waiters.pollFirst();
            qp.flowWaiting = false;
            turn = qp;
            try {
                qp.requester.run();
            } finally {
                turn = null;
            }
        }
    }

    /** QPs waiting for room (tests). */
    int waiting() {
        return waiters.size();
    }
}
