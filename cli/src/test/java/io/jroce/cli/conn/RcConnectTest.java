package io.jroce.cli.conn;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.Gid;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpAttr;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.RcConnect;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link RcConnect} driven from the out-of-band exchange's {@link PeerInfo}, as the cli uses it. */
class RcConnectTest {
    @Test
    void defaultsAreRcPingpongs() {
        RcConnect.Params p = RcConnect.Params.defaults();
        assertEquals(Mtu.MTU_1024, p.mtu());
        assertEquals(12, p.minRnrTimer());
        assertEquals(14, p.timeout());
        assertEquals(7, p.retryCnt());
        assertEquals(7, p.rnrRetry());
        assertEquals(1, p.maxRdAtomic());
        assertEquals(1, p.maxDestRdAtomic());
        assertEquals(Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC, p.accessFlags());
        assertEquals(4791, new PeerInfo(1, 2, Gid.of(FakePeer.A)).rcPeer().udpPort());
    }

    @Test
    void connectsTwoQpsThatThenWriteToEachOther() throws Exception {
        try (Device a = Device.open(FakePeer.A); Device b = Device.open(FakePeer.B)) {
            ProtectionDomain pa = a.allocPd();
            ProtectionDomain pb = b.allocPd();
            CompletionQueue ca = a.createCq(16);
            CompletionQueue cb = b.createCq(16);
            QueuePair qa = pa.createQp(new QpInitAttr(ca));
            QueuePair qb = pb.createQp(new QpInitAttr(cb));
            MemoryRegion src = pa.allocateAndRegister(5000, Access.LOCAL_WRITE);
            MemoryRegion dst = pb.allocateAndRegister(5000, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            PeerInfo ia = new PeerInfo(0, qa.qpNum(), 0x123456, a.gid(0), 0, 0, List.of());
            PeerInfo ib = new PeerInfo(0, qb.qpNum(), 0xfffffe, b.gid(0), 0, 0,
                    List.of(new RemoteRegion("dst", dst.address(), dst.rkey(), dst.length())));
            RcConnect.Params p = RcConnect.Params.defaults().mtu(Mtu.MTU_512).timeout(18);
            RcConnect.toInit(qb, p); // like rc_pingpong's server: INIT first, RTR/RTS later
            RcConnect.connect(qa, ib.rcPeer(), ia.psn(), p);
            RcConnect.connect(qb, ia.rcPeer(), ib.psn(), p);
            assertEquals(QpState.RTS, qa.state());
            QpAttr q = qa.query();
            assertEquals(Mtu.MTU_512, q.pathMtu());
            assertEquals(qb.qpNum(), q.destQpNum());
            assertEquals(18, q.timeout());
            assertEquals(FakePeer.B, q.destAddress());
            for (int i = 0; i < 5000; i++) src.buffer().put(i, (byte) i);
            RemoteRegion r = ib.region("dst").orElseThrow();
            qa.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, new Sge(src.address(), 5000, src.lkey())).remote(r.va(), r.rkey()).signaled());
            WorkCompletion[] wc = {new WorkCompletion()};
            assertEquals(1, ca.poll(wc, 1, 10, TimeUnit.SECONDS));
            assertTrue(wc[0].ok(), wc[0].toString());
            assertEquals(-1, src.buffer().mismatch(dst.buffer()));
            assertThrows(IllegalStateException.class, () -> RcConnect.connect(qa, ib.rcPeer(), 1, p), "already in RTS");
        }
    }
}
