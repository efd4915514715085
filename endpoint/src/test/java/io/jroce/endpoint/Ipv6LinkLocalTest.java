package io.jroce.endpoint;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.*;

/**
 * Link-local devices: fe80::71%lo and fe80::72%lo (added to lo for the test when we may, i.e. as root, and
 * removed afterwards; skipped otherwise). A peer's GID carries no interface; a QP aimed at the GID's address
 * still reaches it, because binding the device's socket to a scoped link-local address ties it to that
 * interface and the kernel sends scope-less link-local destinations out of it.
 */
class Ipv6LinkLocalTest {
    private static final String[] ADDRS = {"fe80::71", "fe80::72"};
    private static final List<String> added = new ArrayList<>();
    private static boolean usable;

    @BeforeAll
    static void addAddresses() throws Exception {
        usable = true;
        for (String a : ADDRS) {
            if (run("ip", "-6", "addr", "add", a + "/128", "dev", "lo", "nodad")) added.add(a);
            else usable = false;
        }
    }

    @AfterAll
    static void removeAddresses() throws Exception {
        for (String a : added) run("ip", "-6", "addr", "del", a + "/128", "dev", "lo");
    }

    private static boolean run(String... cmd) throws InterruptedException {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        }
    }

    private static Inet6Address onLo(String a) throws Exception {
        return Inet6Address.getByAddress(null, InetAddress.getByName(a).getAddress(), NetworkInterface.getByName("lo"));
    }

    @Test
    void aLinkLocalWithoutScopeIsRefusedAsABindAddress() throws Exception {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new DeviceConfig(InetAddress.getByName("fe80::1")));
        assertTrue(e.getMessage().contains("needs its interface"), e.getMessage());
    }

    @Test
    void qpsAimedAtScopelessGidsReachThePeer() throws Exception {
        Assumptions.assumeTrue(usable, "needs root to add fe80::71 and fe80::72 to lo");
        try (Pair p = new Pair(new DeviceConfig(onLo("fe80::71")), new DeviceConfig(onLo("fe80::72")))) {
            Gid gidA = p.a.gid(0);
            Gid gidB = p.b.gid(0);
            assertEquals("fe80::71", gidA.toString());
            assertEquals(0, ((Inet6Address) gidB.toInetAddress()).getScopeId(), "a GID has no scope");
            CompletionQueue cqA = p.a.createCq(8);
            CompletionQueue cqB = p.b.createCq(8);
            QueuePair qa = p.pdA.createQp(new QpInitAttr(cqA).maxSendWr(4).maxRecvWr(4));
            QueuePair qb = p.pdB.createQp(new QpInitAttr(cqB).maxSendWr(4).maxRecvWr(4));
            RcConnect.Params params = RcConnect.Params.defaults().mtu(Mtu.MTU_1024).accessFlags(Pair.QP_ACCESS);
            RcConnect.connect(qa, new RcConnect.Peer(gidB.toInetAddress(), p.b.port(), qb.qpNum(), 200), 100, params);
            RcConnect.connect(qb, new RcConnect.Peer(gidA.toInetAddress(), p.a.port(), qa.qpNum(), 100), 200, params);
            MemoryRegion src = p.pdA.allocateAndRegister(4096, Access.LOCAL_WRITE);
            MemoryRegion dst = p.pdB.allocateAndRegister(4096, Access.LOCAL_WRITE | Access.REMOTE_READ);
            for (int i = 0; i < 4096; i++) src.buffer().put(i, (byte) (i * 7));
            qb.postRecv(new ReceiveWorkRequest(1, Sge.of(dst)));
            qa.postSend(new SendWorkRequest(2, WrOpcode.SEND, Sge.of(src, 0, 3000)).signaled());
            assertEquals(WcStatus.SUCCESS, Pair.awaitOne(cqA).status());
            WorkCompletion r = Pair.awaitOne(cqB);
            assertEquals(WcStatus.SUCCESS, r.status(), r.toString());
            assertEquals(3000, r.byteLen());
            MemoryRegion back = p.pdA.allocateAndRegister(3000, Access.LOCAL_WRITE);
            qa.postSend(new SendWorkRequest(3, WrOpcode.RDMA_READ, Sge.of(back)).remote(dst.address(), dst.rkey()).signaled());
            assertEquals(WcStatus.SUCCESS, Pair.awaitOne(cqA).status());
            for (int i = 0; i < 3000; i++) assertEquals((byte) (i * 7), back.buffer().get(i), "byte " + i);
            assertEquals(0, p.a.counters().drops(DropReason.ICRC));
            assertEquals(0, p.b.counters().drops(DropReason.ICRC));
        }
    }
}
