package io.jroce.endpoint;

import io.jroce.wire.Icrc;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetSocketAddress;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The per-QP congestion window ({@link CongestionControl}) driven by hand, and a CNP (opcode 0x81) sent at a
 * device over UDP: counted on the QP it names, and acted on when congestion control is on.
 */
class CongestionControlTest {
    private static final long US = 1_000;

    @Test
    void additiveIncreaseBelowTheDelayTargetAndOneCutPerRoundTripAbove() {
        CongestionControl cc = new CongestionControl(256);
        long now = 1_000_000;
        cc.onRtt(50 * US, now);
        double w0 = cc.window;
        for (int i = 0; i < 16; i++) cc.onAcked(1, now += US, 0);
        assertEquals(w0 + 1, cc.window, 0.1, "one packet per window acknowledged");
        double grown = cc.window;
        // one late sample among fast ones is a thread scheduled late, not a queue: the standing round trip ignores it
        cc.onRtt(50 * US + 5 * CongestionControl.TARGET_QUEUE_NANOS, now += US);
        assertEquals(grown, cc.window, "one slow sample: no cut");
        // queueing far above the target in every sample: cut once, by at most half
        now = standing(cc, 50 * US + 5 * CongestionControl.TARGET_QUEUE_NANOS, now);
        double cut = cc.window;
        assertTrue(cut < grown && cut >= grown / 2 - 1e-9, "cut by at most half: " + cut);
        cc.onRtt(50 * US + 5 * CongestionControl.TARGET_QUEUE_NANOS, now += US);
        assertEquals(cut, cc.window, "not twice within one round trip");
        assertEquals(1, cc.decreases);
        double before = cc.window;
        for (int i = 0; i < 100; i++) cc.onAcked(1, now += US, 0);
        assertEquals(before, cc.window, "no increase while above the target");
        cc.onTimeout(now);
        assertEquals(CongestionControl.MIN_WINDOW, cc.window);
        assertEquals(2, cc.limit());
    }

    /** A standing queue: {@link CongestionControl#STANDING_SAMPLES} samples of {@code rtt}, 1 µs apart; returns the time after. */
    private static long standing(CongestionControl cc, long rtt, long now) {
        for (int i = 0; i < CongestionControl.STANDING_SAMPLES; i++) cc.onRtt(rtt, now += US);
        return now;
    }

    @Test
    void smallWindowsMayQueueMoreBeforeTheyShrinkAsInSwiftsFlowScaling() {
        assertEquals(CongestionControl.FS_RANGE_NANOS, CongestionControl.flowScaling(CongestionControl.FS_MIN_WINDOW));
        assertEquals(CongestionControl.FS_RANGE_NANOS, CongestionControl.flowScaling(1), "below the minimum: all of it");
        assertEquals(0, CongestionControl.flowScaling(CongestionControl.FS_MAX_WINDOW));
        assertEquals(0, CongestionControl.flowScaling(1000));
        assertTrue(CongestionControl.flowScaling(4) > CongestionControl.flowScaling(16), "less for larger windows");
        // the same round trip, 1 ms above the smallest: a flow of 64 packets shrinks, one of 2 packets keeps its window
        long now = 1_000_000;
        CongestionControl big = new CongestionControl(256);
        big.window = 64;
        big.onRtt(50 * US, now);
        standing(big, 1050 * US, now += 2000 * US);
        assertTrue(big.window < 64, "64 packets, 1 ms of queueing: cut to " + big.window);
        CongestionControl small = new CongestionControl(256);
        small.window = 2;
        small.onRtt(50 * US, now);
        standing(small, 1050 * US, now += 2000 * US);
        assertEquals(2, small.window, 1e-9, "2 packets, 1 ms of queueing: below its scaled target");
        assertEquals(0, small.decreases);
    }

    @Test
    void lossWithAQueueHalvesOncePerRoundTripAndTheWindowNeverPassesTheCeiling() {
        CongestionControl cc = new CongestionControl(32);
        long now = 1_000_000;
        for (int i = 0; i < 10_000; i++) cc.onAcked(1, now += US, 0);
        assertEquals(32, cc.limit(), "capped by the ceiling");
        cc.onRtt(100 * US, now);
        cc.onLoss(now += 1000 * US, 100 * US);
        assertEquals(32, cc.window, 1e-9, "random loss, no queue (round trip at its minimum): not congestion");
        now = standing(cc, 2000 * US, now += 1000 * US); // a queue: the delay rule cuts once
        double w = cc.window;
        assertTrue(w < 32, "the delay rule cut: " + w);
        cc.onLoss(now += 3000 * US, 100 * US);
        assertEquals(w / 2, cc.window, 1e-9, "loss with a queue: halved");
        cc.onLoss(now + 10 * US, 100 * US);
        assertEquals(w / 2, cc.window, 1e-9, "same round trip: no second cut");
        cc.onLoss(now + 200 * US, 100 * US);
        assertEquals(w / 4, cc.window, 1e-9);
    }

    /**
     * A QP whose smallest round trip was measured behind a standing queue (8 ms) sees every later sample at that
     * minimum: the delay rule never cuts and loss alone is not taken for congestion. When most of what it sends is
     * resent, that is congestion whatever the delay says: halved once per round trip until the share falls.
     */
    @Test
    void heavyLossCutsOncePerRoundTripWhateverTheDelaySays() {
        CongestionControl cc = new CongestionControl(128);
        long rtt = 8000 * US;
        long now = 1_000_000;
        cc.window = 128;
        cc.onRtt(rtt, now); // the first sample, already behind the queue: the minimum
        int cuts = 0;
        double before = cc.window;
        // 40 round trips, each moving a window: a quarter acknowledged, the rest resent; samples at the minimum
        for (int round = 0; round < 40; round++) {
            int w = cc.limit();
            int acked = Math.max(1, w / 4);
            for (int i = 0; i < acked; i++) cc.onAcked(1, now += rtt / w, rtt);
            for (int i = acked; i < w; i++) cc.onResent(now += rtt / w, rtt);
            cc.onRtt(rtt, now);
            cc.onLoss(now, rtt);
            if (cc.window < before) cuts++;
            before = cc.window;
        }
        assertTrue(cc.lossRate > CongestionControl.HEAVY_LOSS, "resent share " + cc.lossRate);
        assertEquals(CongestionControl.MIN_WINDOW, cc.window, 1e-9, "halved down to the minimum");
        assertTrue(cuts >= 6, "one cut per round trip once the share is heavy: " + cuts);
        assertTrue(cuts <= 40, "never more than one per round trip: " + cuts);
    }

    /**
     * A QP that lost so much from its first window that every acknowledgement covered a resent packet has no
     * round-trip sample (Karn's rule): the resent share is still measured, over 1 ms rounds, and cuts the window.
     */
    @Test
    void heavyLossCutsAQpThatHasNoRoundTripSampleYet() {
        CongestionControl cc = new CongestionControl(128);
        cc.window = 128;
        long now = 1_000_000;
        for (int round = 0; round < 40; round++) {
            int w = cc.limit();
            int acked = Math.max(1, w / 8);
            long step = CongestionControl.UNSAMPLED_ROUND_NANOS / w;
            for (int i = 0; i < acked; i++) cc.onAcked(1, now += step, 0);
            for (int i = acked; i < w; i++) cc.onResent(now += step, 0);
        }
        assertEquals(CongestionControl.MIN_WINDOW, cc.window, 1e-9, "resent share " + cc.lossRate);
    }

    /**
     * A QP that joined behind a standing queue (its first samples 8 ms, on a path whose round trip is 0.1 ms) keeps
     * its window when it knows only its own minimum, and so keeps the queue; sharing the path's minimum with a QP to
     * the same peer that measured 0.1 ms, it reads the 8 ms as queueing and cuts.
     */
    @Test
    void aLateQpTakesThePathsMinimumFromItsNeighbour() {
        long now = 1_000_000;
        PathRtt shared = new PathRtt();
        CongestionControl early = new CongestionControl(128, shared);
        early.onRtt(100 * US, now);
        CongestionControl late = new CongestionControl(128, shared);
        CongestionControl alone = new CongestionControl(128, new PathRtt());
        late.window = 64;
        alone.window = 64;
        for (int i = 0; i < 10; i++) {
            now += 8000 * US;
            late.onRtt(8000 * US, now);
            alone.onRtt(8000 * US, now);
        }
        assertEquals(64, alone.window, 1e-9, "its own minimum is the queue's: no cut");
        assertEquals(CongestionControl.MIN_WINDOW, late.window, 1e-9, "the path's minimum shows the queue: cut once per round trip");
        assertEquals(100 * US, shared.minNanos, "the late QP's samples leave the path's minimum alone");
    }

    /** Random loss at 5 % (the lossy-Ethernet target's rate), no queue: the resent share never reads as heavy. */
    @Test
    void randomLossAtFivePercentIsNeverHeavy() {
        long seed = Long.getLong("jroce.test.seed", System.nanoTime());
        System.out.println("randomLossAtFivePercentIsNeverHeavy: seed " + seed + " (-Djroce.test.seed=" + seed + " repeats it)");
        Random random = new Random(seed);
        CongestionControl cc = new CongestionControl(128);
        long rtt = 100 * US;
        long now = 1_000_000;
        cc.onRtt(rtt, now);
        for (int round = 0; round < 20_000; round++) {
            int w = cc.limit();
            for (int i = 0; i < w; i++) {
                if (random.nextDouble() < 0.05) cc.onResent(now += rtt / w, rtt);
                cc.onAcked(1, now += rtt / w, rtt);
            }
            cc.onRtt(rtt, now);
            assertTrue(cc.lossRate < CongestionControl.HEAVY_LOSS, "round " + round + ": resent share " + cc.lossRate);
        }
        assertEquals(0, cc.decreases, "no cut: nothing queued and the loss is random");
    }

    @Test
    void dcqcnCutsByHalfAlphaAndAlphaDecaysWithoutCnps() {
        CongestionControl cc = new CongestionControl(256);
        cc.window = 100;
        long now = 1_000_000;
        cc.onCnp(now);
        assertEquals(50, cc.window, 0.1, "alpha starts at 1: the first CNP halves");
        cc.onCnp(now + 10 * US);
        assertEquals(50, cc.window, 0.1, "at most one cut per 50 us");
        // a long quiet spell: alpha decays, so the next cut is small
        cc.onCnp(now + 100_000 * US);
        assertTrue(cc.alpha() < 0.05, "alpha decayed: " + cc.alpha());
        assertTrue(cc.window > 49 && cc.window < 50, "a small cut after decay: " + cc.window);
        assertEquals(2, cc.decreases);
    }

    @Test
    void theBdpCapFollowsTheMeasuredRateAndRoundTrip() {
        CongestionControl cc = new CongestionControl(256);
        long now = 1_000_000;
        long rtt = 100 * US;
        cc.onRtt(rtt, now);
        // 1 packet per 10 us for several round trips: BDP 10 packets, cap 2 x 10 = 20
        for (int i = 0; i < 100; i++) cc.onAcked(1, now += 10 * US, rtt);
        assertEquals(20, cc.bdpCap(), 1);
        assertTrue(cc.limit() <= 21, "the window stays under the cap: " + cc.limit());
    }

    @Test
    void aCnpIsCountedOnTheQpItNamesAndCutsItsWindowWhenCongestionControlIsOn() throws Exception {
        try (Pair p = new Pair(new DeviceConfig(Pair.addr("127.77.41.15")), new DeviceConfig(Pair.addr("127.77.41.16")))) {
            CompletionQueue cqA = p.a.createCq(8);
            CompletionQueue cqB = p.b.createCq(8);
            QueuePair plain = p.pdA.createQp(new QpInitAttr(cqA).maxSendWr(4).maxRecvWr(4));
            QueuePair withCc = p.pdA.createQp(new QpInitAttr(cqA).maxSendWr(4).maxRecvWr(4));
            QueuePair peer1 = p.pdB.createQp(new QpInitAttr(cqB).maxSendWr(4).maxRecvWr(4));
            QueuePair peer2 = p.pdB.createQp(new QpInitAttr(cqB).maxSendWr(4).maxRecvWr(4));
            RcConnect.connectPair(plain, 1, peer1, 2, RcConnect.Params.defaults());
            RcConnect.connectPair(withCc, 3, peer2, 4, RcConnect.Params.defaults().extensions(JroceExtensions.CONGESTION_CONTROL));
            long cwnd = withCc.counters().cwnd;
            assertEquals(16, cwnd, "initial window");
            try (DatagramSocket s = new DatagramSocket(new InetSocketAddress(p.b.address(), 0))) {
                sendCnp(s, p, plain.qpNum());
                sendCnp(s, p, withCc.qpNum());
                sendCnp(s, p, 0xabcdef); // no such QP: dropped and counted
                // wait until the device has seen all three (the counters are read on its event loop)
                long deadline = System.nanoTime() + 10_000_000_000L;
                while (p.a.counters().packetsIn < 3 && System.nanoTime() < deadline) Pair.barrier(p.a);
            }
            assertEquals(3, p.a.counters().packetsIn, "three CNPs arrived");
            assertEquals(1, plain.counters().cnpsReceived);
            assertEquals(0, plain.counters().cwndDecreases, "no congestion control: counted only");
            QpCounters c = withCc.counters();
            assertEquals(1, c.cnpsReceived);
            assertEquals(1, c.cwndDecreases);
            assertEquals(8, c.cwnd, "alpha 1: the window halves");
            assertEquals(1, p.a.counters().drops(DropReason.UNKNOWN_QP));
        }
    }

    /** The NVIDIA example CNP (BTH 0x81, P_Key 0xffff, BECN, 16 reserved bytes, ICRC) aimed at {@code qpn}. */
    private static void sendCnp(DatagramSocket s, Pair p, int qpn) throws Exception {
        ByteBuf b = Unpooled.buffer(32);
        b.writeByte(0x81).writeByte(0).writeShort(0xffff).writeByte(0x40).writeMedium(qpn).writeInt(0);
        b.writeZero(16);
        b.writeInt(0);
        int src = java.nio.ByteBuffer.wrap(p.b.address().getAddress()).getInt();
        int dst = java.nio.ByteBuffer.wrap(p.a.address().getAddress()).getInt();
        new Icrc().writeIpv4(src, dst, new Random().nextInt(1 << 16), Icrc.IPV4_DF, s.getLocalPort(), p.a.port(), b, 0, 32);
        byte[] bytes = new byte[32];
        b.getBytes(0, bytes);
        s.send(new DatagramPacket(bytes, 32, new InetSocketAddress(p.a.address(), p.a.port())));
    }
}
