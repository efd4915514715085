package io.jroce.endpoint;

import io.jroce.endpoint.cm.CmAgent;
import io.jroce.endpoint.cm.CmConnParam;
import io.jroce.endpoint.cm.CmEvent;
import io.jroce.endpoint.cm.CmEventChannel;
import io.jroce.endpoint.cm.CmEventType;
import io.jroce.endpoint.cm.CmId;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The examples of docs/java-api.md, compiled and run. The lines between each pair of markers must appear
 * verbatim (up to indentation and blank lines) in docs/java-api.md, so the documented examples cannot rot.
 */
class JavaApiDocExampleTest {
    private static final Path SOURCE = Path.of("src/test/java/io/jroce/endpoint/JavaApiDocExampleTest.java");

    @Test
    void writeFromOneNodeToAnother() throws Exception {
        InetAddress addressA = InetAddress.getByName("127.0.3.1");
        InetAddress addressB = InetAddress.getByName("127.0.3.2");
        // DOC-EXAMPLE-BEGIN
        try (Device a = Device.open(addressA); Device b = Device.open(addressB)) {
            ProtectionDomain pdA = a.allocPd();
            ProtectionDomain pdB = b.allocPd();
            MemoryRegion src = pdA.registerMemory(ByteBuffer.allocateDirect(8192), Access.LOCAL_WRITE);
            MemoryRegion dst = pdB.registerMemory(ByteBuffer.allocateDirect(8192), Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            CompletionQueue cqA = a.createCq(64);
            CompletionQueue cqB = b.createCq(64);
            QueuePair qpA = pdA.createQp(new QpInitAttr(cqA));
            QueuePair qpB = pdB.createQp(new QpInitAttr(cqB));

            // connect: each side learns the other's QPN and starting PSN (out of band, e.g. over TCP)
            for (QueuePair[] ends : new QueuePair[][] {{qpA, qpB}, {qpB, qpA}}) {
                QueuePair qp = ends[0];
                QueuePair peer = ends[1];
                qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).accessFlags(Access.REMOTE_WRITE));
                qp.modify(new QpAttr().state(QpState.RTR).dest(peer.device().address()).pathMtu(Mtu.MTU_4096)
                        .destQpNum(peer.qpNum()).rqPsn(0x100).maxDestRdAtomic(1).minRnrTimer(12));
                qp.modify(new QpAttr().state(QpState.RTS).sqPsn(0x100).timeout(14).retryCnt(7).rnrRetry(7).maxRdAtomic(1));
            }

            src.buffer().put("hello, RDMA".getBytes(StandardCharsets.US_ASCII));
            qpA.postSend(new SendWorkRequest(1, WrOpcode.RDMA_WRITE, Sge.of(src, 0, 11))
                    .remote(dst.address(), dst.rkey())
                    .signaled());

            WorkCompletion[] wc = new WorkCompletion[1];
            int n = cqA.poll(wc, 5, TimeUnit.SECONDS);
            System.out.println(n + " completion: " + wc[0]);                  // WC{wrId=1, SUCCESS, RDMA_WRITE, len=11, ...}
            byte[] landed = new byte[11];
            dst.buffer().get(landed);
            System.out.println(new String(landed, StandardCharsets.US_ASCII));  // hello, RDMA
            // DOC-EXAMPLE-END
            assertEquals(1, n);
            assertEquals(WcStatus.SUCCESS, wc[0].status());
            assertEquals("hello, RDMA", new String(landed, StandardCharsets.US_ASCII));
        }
    }

    @Test
    void rcConnectMovesBothEndsToRts() throws Exception {
        try (Device a = Device.open(InetAddress.getByName("127.0.3.3")); Device b = Device.open(InetAddress.getByName("127.0.3.4"))) {
            CompletionQueue cqA = a.createCq(16);
            CompletionQueue cqB = b.createCq(16);
            QueuePair qpA = a.allocPd().createQp(new QpInitAttr(cqA));
            QueuePair qpB = b.allocPd().createQp(new QpInitAttr(cqB));
            RcConnect.toInit(qpB, RcConnect.Params.defaults());
            qpB.postRecv(new ReceiveWorkRequest().wrId(7));
            InetAddress peerAddress = b.address();
            int peerQpn = qpB.qpNum();
            int peerPsn = 0x200;
            int localPsn = 0x100;
            // DOC-RCCONNECT-BEGIN
            RcConnect.connect(qpA, RcConnect.Peer.of(peerAddress, peerQpn, peerPsn), localPsn,
                    RcConnect.Params.defaults().mtu(Mtu.MTU_4096));
            // DOC-RCCONNECT-END
            RcConnect.connect(qpB, RcConnect.Peer.of(a.address(), qpA.qpNum(), localPsn), peerPsn,
                    RcConnect.Params.defaults().mtu(Mtu.MTU_4096));
            assertEquals(QpState.RTS, qpA.state());
            assertEquals(QpState.RTS, qpB.state());

            qpA.postSend(new SendWorkRequest(1, WrOpcode.SEND).signaled());
            WorkCompletion[] wc = new WorkCompletion[1];
            assertEquals(1, cqA.poll(wc, 5, TimeUnit.SECONDS));
            assertEquals(WcStatus.SUCCESS, wc[0].status(), wc[0].toString());
            assertEquals(1, cqB.poll(wc, 5, TimeUnit.SECONDS));
            assertEquals(7, wc[0].wrId());
            assertEquals(WcStatus.SUCCESS, wc[0].status(), wc[0].toString());
        }
    }

    @Test
    void connectionManagerClientAndServer() throws Exception {
        InetAddress serverAddress = InetAddress.getByName("127.77.44.1");
        InetAddress clientAddress = InetAddress.getByName("127.77.44.2");
        int port = 7471;
        CountDownLatch listening = new CountDownLatch(1);
        CompletableFuture<String> server = CompletableFuture.supplyAsync(() -> {
            try {
                return serve(serverAddress, port, listening);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertTrue(listening.await(30, TimeUnit.SECONDS), "the server listens");
        String welcome;
        WorkCompletion[] wc = new WorkCompletion[1];
        // DOC-CM-CLIENT-BEGIN
        try (Device device = Device.open(clientAddress); CmAgent cm = CmAgent.open(device); CmEventChannel events = new CmEventChannel()) {
            CmId id = CmId.create(cm, events);
            QueuePair qp = id.createQp(device.allocPd(), new QpInitAttr(device.createCq(16)));
            id.connect(serverAddress, port, CmConnParam.defaults().privateData("hello".getBytes(StandardCharsets.US_ASCII)));
            CmEvent established = events.expect(CmEventType.ESTABLISHED, Duration.ofSeconds(10));
            welcome = new String(established.privateData(), 0, 7, StandardCharsets.US_ASCII);   // "welcome", from the REP

            MemoryRegion msg = qp.pd().allocateAndRegister(64, Access.LOCAL_WRITE);
            msg.buffer().put(0, "ping".getBytes(StandardCharsets.US_ASCII));
            qp.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(msg, 0, 4)).signaled());
            qp.sendCq().poll(wc, 10, TimeUnit.SECONDS);
            id.disconnect();                                                                 // DREQ; the server sees DISCONNECTED
            events.expect(CmEventType.DISCONNECTED, Duration.ofSeconds(10));
        }
        // DOC-CM-CLIENT-END
        assertEquals("welcome", welcome);
        assertEquals(WcStatus.SUCCESS, wc[0].status());
        assertEquals("hello|ping", server.get(30, TimeUnit.SECONDS));
    }

    private static String serve(InetAddress address, int port, CountDownLatch listening) throws Exception {
        // DOC-CM-SERVER-BEGIN
        try (Device device = Device.open(address); CmAgent cm = CmAgent.open(device); CmEventChannel events = new CmEventChannel()) {
            CmId listener = CmId.create(cm, events);
            listener.bind(port);
            listener.listen(8);
            // DOC-CM-SERVER-END
            listening.countDown();
            // DOC-CM-ACCEPT-BEGIN
            CmEvent request = events.expect(CmEventType.CONNECT_REQUEST, Duration.ofSeconds(30));
            String hello = new String(request.privateData(), 0, 5, StandardCharsets.US_ASCII);  // the client's private data
            CmId id = request.id();
            QueuePair qp = id.createQp(device.allocPd(), new QpInitAttr(device.createCq(16)));
            MemoryRegion buf = qp.pd().allocateAndRegister(4096, Access.LOCAL_WRITE);
            qp.postRecv(new ReceiveWorkRequest(1, Sge.of(buf, 0, 4096)));
            id.accept(CmConnParam.defaults().privateData("welcome".getBytes(StandardCharsets.US_ASCII)));
            events.expect(CmEventType.ESTABLISHED, Duration.ofSeconds(10));

            WorkCompletion[] wc = new WorkCompletion[1];
            qp.recvCq().poll(wc, 10, TimeUnit.SECONDS);                                       // the client's SEND
            byte[] ping = new byte[wc[0].byteLen()];
            buf.buffer().get(0, ping);
            events.expect(CmEventType.DISCONNECTED, Duration.ofSeconds(10));
            // DOC-CM-ACCEPT-END
            return hello + "|" + new String(ping, StandardCharsets.US_ASCII);
        }
    }

    @Test
    void udSendsToAnAddressHandle() throws Exception {
        try (Device a = Device.open(InetAddress.getByName("127.77.43.1")); Device b = Device.open(InetAddress.getByName("127.77.43.2"))) {
            ProtectionDomain pd = a.allocPd();
            CompletionQueue cq = a.createCq(16);
            MemoryRegion mr = pd.allocateAndRegister(256, Access.LOCAL_WRITE);
            ProtectionDomain pdB = b.allocPd();
            CompletionQueue cqB = b.createCq(16);
            QueuePair peer = pdB.createQp(new QpInitAttr(cqB).qpType(QpType.UD));
            peer.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(0x11111111));
            peer.modify(new QpAttr().state(QpState.RTR));
            MemoryRegion in = pdB.allocateAndRegister(296, Access.LOCAL_WRITE);
            peer.postRecv(new ReceiveWorkRequest(5, Sge.of(in)));
            InetAddress peerAddress = b.address();
            int peerQpn = peer.qpNum();
            // DOC-UD-BEGIN
            QueuePair ud = pd.createQp(new QpInitAttr(cq).qpType(QpType.UD));
            ud.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(0x11111111));
            ud.modify(new QpAttr().state(QpState.RTR));
            ud.modify(new QpAttr().state(QpState.RTS).sqPsn(0));
            AddressHandle ah = pd.createAh(peerAddress);           // UDP 4791; createAh(address, port) for another port
            ud.postSend(new SendWorkRequest(1, WrOpcode.SEND, Sge.of(mr, 0, 256)).ud(ah, peerQpn, 0x11111111).signaled());
            // DOC-UD-END
            WorkCompletion[] wc = new WorkCompletion[1];
            assertEquals(1, cq.poll(wc, 5, TimeUnit.SECONDS));
            assertEquals(WcStatus.SUCCESS, wc[0].status(), wc[0].toString());
            assertEquals(1, cqB.poll(wc, 5, TimeUnit.SECONDS));
            assertEquals(5, wc[0].wrId());
            assertEquals(296, wc[0].byteLen(), wc[0].toString());
            assertEquals(ud.qpNum(), wc[0].srcQp());
        }
    }

    @Test
    void theJavaApiGuideShowsTheseExamplesVerbatim() throws Exception {
        Path module = Path.of(System.getProperty("user.dir"));
        String test = Files.readString(module.resolve(SOURCE));
        String guide = normalize(Files.readString(module.getParent().resolve("docs/java-api.md")));
        for (String marker : new String[] {"DOC-EXAMPLE", "DOC-RCCONNECT", "DOC-UD", "DOC-CM-CLIENT", "DOC-CM-SERVER", "DOC-CM-ACCEPT"}) {
            String example = test.substring(test.indexOf("// " + marker + "-BEGIN"), test.indexOf("// " + marker + "-END"));
            String body = normalize(example.lines().skip(1).collect(Collectors.joining("\n")));
            assertTrue(!body.isEmpty() && guide.contains(body),
                    "docs/java-api.md must contain the example between the " + marker + " markers of JavaApiDocExampleTest:\n" + body);
        }
    }

    private static String normalize(String text) {
        return text.lines().map(String::strip).filter(l -> !l.isEmpty()).collect(Collectors.joining("\n"));
    }
}
