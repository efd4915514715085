package io.jroce.endpoint;

import io.jroce.endpoint.fault.FaultInjector;
import io.jroce.endpoint.fault.FaultRule;
import io.jroce.wire.Aeth;
import io.jroce.wire.Opcode;
import io.jroce.wire.Problem;
import io.jroce.wire.Psn;
import io.jroce.wire.RocePacket;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.DatagramPacket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/**
 * ACK coalescing: the plain ACKs a responder owes for the requests of one receive burst leave as one ACK per
 * QP at the end of the burst, carrying the newest PSN and the MSN an immediate ACK would have carried; any
 * other packet of the responder (RNR NAK, sequence NAK) is preceded by the pending ACK, so the wire stays in
 * PSN order. To make the requests of a test arrive as one burst, the responder's event loop is held busy
 * until the requester has flushed them all; the kernel queues them on the socket meanwhile.
 */
class AckCoalescingTest {
    private static final int BASE_A = 0x100;
    private static final int MSG = 64;
    /** 4.096 us << 20 = 4.3 s: no local ACK timeout fires while the responder's loop is held. */
    private static final int TIMEOUT_CODE = 20;

    private Pair p;
    private final Recorder recorder = new Recorder();

    @AfterEach
    void close() {
        if (p != null) p.close();
    }

    private void open(DatagramFilter filterB) throws Exception {
        // no tail-loss probe: a probe sent while B's loop is held would arrive as a duplicate and add a re-ACK
        DeviceConfig ca = new DeviceConfig(Pair.addr("127.77.41.11")).tailProbeMicros(0).warmUp(false).filter(recorder);
        DeviceConfig cb = new DeviceConfig(Pair.addr("127.77.41.12")).tailProbeMicros(0).warmUp(false);
        if (filterB != null) cb.filter(filterB);
        p = new Pair(ca, cb);
    }

    private Pair.Conn connect() {
        CompletionQueue cqA = p.a.createCq(256);
        CompletionQueue cqB = p.b.createCq(256);
        QueuePair qa = p.pdA.createQp(new QpInitAttr(cqA).maxSendWr(64).maxRecvWr(64));
        QueuePair qb = p.pdB.createQp(new QpInitAttr(cqB).maxSendWr(64).maxRecvWr(64));
        RcConnect.connectPair(qa, BASE_A, qb, 0x200, RcConnect.Params.defaults().mtu(Mtu.MTU_1024)
                .timeout(TIMEOUT_CODE).rnrRetry(7).minRnrTimer(1));
        return new Pair.Conn(qa, cqA, qb, cqB);
    }

    /** {@code n} signaled 64-byte SENDs, wr_id 0..n-1, in one chain. */
    private SendWorkRequest sends(MemoryRegion src, int n) {
        SendWorkRequest[] wrs = new SendWorkRequest[n];
        for (int i = 0; i < n; i++) wrs[i] = new SendWorkRequest(i, WrOpcode.SEND, Sge.of(src, i * MSG, MSG)).signaled();
        return Pair.chain(wrs);
    }

    private void postRecvs(QueuePair qb, MemoryRegion dst, int from, int n) {
        ReceiveWorkRequest[] wrs = new ReceiveWorkRequest[n];
        for (int i = 0; i < n; i++) wrs[i] = new ReceiveWorkRequest(from + i, Sge.of(dst, (from + i) * MSG, MSG));
        qb.postRecv(Pair.chain(wrs));
    }

    /**
     * Posts {@code wr} on A while B's event loop is held, so B reads what A sent in one burst: B is released
     * once A's loop has flushed the packets (a barrier after A counted them all out).
     */
    private void postWhileResponderHeld(Pair.Conn c, SendWorkRequest wr, int packets) throws InterruptedException {
        Pair.whileLoopHeld(p.b, () -> {
            c.qpA.postSend(wr);
            Pair.until(packets + " requests out of A", () -> c.qpA.counters().packetsOut >= packets);
            Pair.barrier(p.a); // A's flush, queued by its doorbell before this barrier, has run: the datagrams are sent
        });
    }

    private static void assertInOrder(List<WorkCompletion> wcs, int n) {
        assertEquals(n, wcs.size());
        for (int i = 0; i < n; i++) {
            WorkCompletion wc = wcs.get(i);
            assertEquals(WcStatus.SUCCESS, wc.status(), wc.toString());
            assertEquals(i, wc.wrId(), "completions in posting order: " + wcs);
        }
    }

    @Test
    void sixteenSmallSendsOfOneBurstGetFewerAcksThanMessages() throws Exception {
        open(null);
        Pair.Conn c = connect();
        int n = 16;
        MemoryRegion src = p.pdA.allocateAndRegister(n * MSG, Access.LOCAL_WRITE);
        MemoryRegion dst = p.pdB.allocateAndRegister(n * MSG, Access.LOCAL_WRITE);
        for (int i = 0; i < n * MSG; i++) src.buffer().put(i, (byte) (i * 7 + 3));
        postRecvs(c.qpB, dst, 0, n);

        postWhileResponderHeld(c, sends(src, n), n);

        assertInOrder(Pair.await(c.cqA, n, 10_000), n);
        assertInOrder(Pair.await(c.cqB, n, 10_000), n);
        for (int i = 0; i < n * MSG; i++) assertEquals((byte) (i * 7 + 3), dst.buffer().get(i), "byte " + i);

        QpCounters b = c.qpB.counters();
        System.out.println("responder after " + n + " SENDs of one burst: " + b);
        // every SEND ONLY carries AckReq: each is either acknowledged by its own ACK or covered by a later one
        assertEquals(n, b.acksSent + b.acksCoalesced, b.toString());
        assertTrue(b.acksSent < n, "fewer ACKs than messages: " + b);
        assertEquals(b.acksSent, b.packetsOut, "the responder sent nothing but its ACKs: " + b);
        assertEquals(0, c.qpA.counters().retries, "no retransmission");

        // on the wire: ACKs with rising PSNs, the last for the last SEND with MSN 16 (what its own ACK would carry)
        List<Rec> acks = recorder.snapshot();
        assertEquals(b.acksSent, acks.size(), acks.toString());
        for (int i = 1; i < acks.size(); i++) assertTrue(Psn.compare(acks.get(i).psn, acks.get(i - 1).psn) > 0, acks.toString());
        Rec last = acks.get(acks.size() - 1);
        assertEquals(new Rec(Opcode.RC_ACKNOWLEDGE, Psn.add(BASE_A, n - 1), Aeth.Kind.ACK, n), last);
    }

    @Test
    void rnrNakLeavesAfterThePendingAck() throws Exception {
        open(null);
        Pair.Conn c = connect();
        int n = 6;
        int posted = 4;
        MemoryRegion src = p.pdA.allocateAndRegister(n * MSG, Access.LOCAL_WRITE);
        MemoryRegion dst = p.pdB.allocateAndRegister(n * MSG, Access.LOCAL_WRITE);
        postRecvs(c.qpB, dst, 0, posted);

        postWhileResponderHeld(c, sends(src, n), n);
        Pair.until("an RNR NAK at A", () -> c.qpA.counters().rnrNaksReceived >= 1);

        List<Rec> seen = recorder.snapshot();
        int rnr = firstOf(seen, Aeth.Kind.RNR_NAK);
        assertTrue(rnr >= 1, "an ACK precedes the RNR NAK: " + seen);
        // the SEND that found no receive WQE is NAKed only after the ACK of the four before it
        assertEquals(new Rec(Opcode.RC_ACKNOWLEDGE, Psn.add(BASE_A, posted - 1), Aeth.Kind.ACK, posted), seen.get(rnr - 1));
        assertEquals(Psn.add(BASE_A, posted), seen.get(rnr).psn);
        assertEquals(posted, seen.get(rnr).msn);
        assertTrue(rnr < posted, "the four SENDs of one burst were acknowledged by fewer than four ACKs: " + seen);
        for (int i = 0; i < rnr; i++) assertEquals(Aeth.Kind.ACK, seen.get(i).kind, seen.toString());

        postRecvs(c.qpB, dst, posted, n - posted);
        assertInOrder(Pair.await(c.cqA, n, 10_000), n);
        assertInOrder(Pair.await(c.cqB, n, 10_000), n);
    }

    @Test
    void sequenceNakLeavesAfterThePendingAck() throws Exception {
        FaultInjector chaosB = FaultInjector.builder().seed(41).build();
        open(chaosB);
        Pair.Conn c = connect();
        int n = 8;
        int lost = 3; // the fourth SEND is lost on its way in: B accepts three, then sees a gap
        chaosB.addRule(FaultRule.drop().inbound().psn(Psn.add(BASE_A, lost)).once());
        MemoryRegion src = p.pdA.allocateAndRegister(n * MSG, Access.LOCAL_WRITE);
        MemoryRegion dst = p.pdB.allocateAndRegister(n * MSG, Access.LOCAL_WRITE);
        postRecvs(c.qpB, dst, 0, n);

        postWhileResponderHeld(c, sends(src, n), n);
        assertInOrder(Pair.await(c.cqA, n, 10_000), n);
        assertInOrder(Pair.await(c.cqB, n, 10_000), n);

        List<Rec> seen = recorder.snapshot();
        int nak = firstOf(seen, Aeth.Kind.NAK);
        assertTrue(nak >= 1, "an ACK precedes the sequence NAK: " + seen);
        assertEquals(new Rec(Opcode.RC_ACKNOWLEDGE, Psn.add(BASE_A, lost), Aeth.Kind.NAK, lost), seen.get(nak),
                "a PSN sequence NAK for the lost PSN: " + seen);
        assertEquals(new Rec(Opcode.RC_ACKNOWLEDGE, Psn.add(BASE_A, lost - 1), Aeth.Kind.ACK, lost), seen.get(nak - 1),
                "the ACK of the three before the gap leaves first: " + seen);
        assertTrue(nak < lost, "three SENDs of one burst were acknowledged by fewer than three ACKs: " + seen);
        assertEquals(1, c.qpB.counters().seqNaksSent);
    }

    @Test
    void errorAfterPendingAckStillAcknowledgesWhatWasDelivered() throws Exception {
        open(null);
        CompletionQueue cqA = p.a.createCq(256);
        CompletionQueue sendCqB = p.b.createCq(256);
        CompletionQueue recvCqB = p.b.createCq(2); // the third SEND's receive completion overruns it: B goes to ERR
        QueuePair qa = p.pdA.createQp(new QpInitAttr(cqA).maxSendWr(64).maxRecvWr(64));
        QueuePair qb = p.pdB.createQp(new QpInitAttr(sendCqB, recvCqB).maxSendWr(64).maxRecvWr(64));
        RcConnect.connectPair(qa, BASE_A, qb, 0x200, RcConnect.Params.defaults().mtu(Mtu.MTU_1024).timeout(TIMEOUT_CODE));
        Pair.Conn c = new Pair.Conn(qa, cqA, qb, recvCqB);
        int n = 4;
        MemoryRegion src = p.pdA.allocateAndRegister(n * MSG, Access.LOCAL_WRITE);
        MemoryRegion dst = p.pdB.allocateAndRegister(n * MSG, Access.LOCAL_WRITE);
        postRecvs(qb, dst, 0, n);

        postWhileResponderHeld(c, sends(src, n), n);

        List<WorkCompletion> wcs = Pair.await(cqA, n, 10_000);
        // the two delivered SENDs are acknowledged before the QP fails: their senders see SUCCESS, not an error
        WcStatus[] want = {WcStatus.SUCCESS, WcStatus.SUCCESS, WcStatus.REM_OP_ERR, WcStatus.WR_FLUSH_ERR};
        for (int i = 0; i < n; i++) {
            assertEquals(i, wcs.get(i).wrId(), wcs.toString());
            assertEquals(want[i], wcs.get(i).status(), wcs.toString());
        }
        assertEquals(QpState.ERR, qb.state());
        List<Rec> seen = recorder.snapshot();
        int nak = firstOf(seen, Aeth.Kind.NAK);
        assertEquals(Psn.add(BASE_A, 2), seen.get(nak).psn, seen.toString());
        assertEquals(new Rec(Opcode.RC_ACKNOWLEDGE, Psn.add(BASE_A, 1), Aeth.Kind.ACK, 2), seen.get(nak - 1), seen.toString());
        assertTrue(nak < 2, "the two SENDs of one burst were acknowledged by one ACK: " + seen);
    }

    private static int firstOf(List<Rec> seen, Aeth.Kind kind) {
        for (int i = 0; i < seen.size(); i++) if (seen.get(i).kind == kind) return i;
        fail("no " + kind + " in " + seen);
        return -1;
    }

    /** One response as the requester's device received it. */
    record Rec(Opcode op, int psn, Aeth.Kind kind, int msn) {
        @Override
        public String toString() {
            return op + " psn 0x" + Integer.toHexString(psn) + " " + kind + " msn " + msn;
        }
    }

    /** Records, in arrival order, every RC ACKNOWLEDGE the device receives; passes everything on. */
    static final class Recorder extends ChannelInboundHandlerAdapter implements DatagramFilter {
        private final RocePacket decoder = new RocePacket();
        private final List<Rec> seen = new ArrayList<>();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof DatagramPacket d) {
                ByteBuf b = d.content();
                if (decoder.decode(b, b.readerIndex(), b.readableBytes()) == Problem.NONE
                        && decoder.opcode() == Opcode.RC_ACKNOWLEDGE) {
                    int syndrome = decoder.aeth().syndrome();
                    synchronized (seen) {
                        seen.add(new Rec(decoder.opcode(), decoder.psn(), Aeth.kind(syndrome), decoder.aeth().msn()));
                    }
                }
            }
            ctx.fireChannelRead(msg);
        }

        List<Rec> snapshot() {
            synchronized (seen) {
                return new ArrayList<>(seen);
            }
        }
    }
}
