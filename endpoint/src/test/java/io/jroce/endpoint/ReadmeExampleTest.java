package io.jroce.endpoint;

import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The README's Java API example, compiled and run. The lines between the markers must appear verbatim
 * (up to indentation) in README.md, so the documented example cannot rot.
 */
class ReadmeExampleTest {
    @Test
    void writeFromOneNodeToAnother() throws Exception {
        InetAddress addressA = InetAddress.getByName("127.0.3.1");
        InetAddress addressB = InetAddress.getByName("127.0.3.2");
        // README-EXAMPLE-BEGIN
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
            // README-EXAMPLE-END
            assertEquals(1, n);
            assertEquals(WcStatus.SUCCESS, wc[0].status());
            assertEquals("hello, RDMA", new String(landed, StandardCharsets.US_ASCII));
        }
    }

    @Test
    void readmeShowsThisExampleVerbatim() throws Exception {
        Path root = Path.of(System.getProperty("user.dir")).getParent();
        String test = Files.readString(Path.of(System.getProperty("user.dir"), "src/test/java/io/jroce/endpoint/ReadmeExampleTest.java"));
        String example = test.substring(test.indexOf("// README-EXAMPLE-BEGIN"), test.indexOf("// README-EXAMPLE-END"));
        String readme = Files.readString(root.resolve("README.md"));
        String normExample = example.lines().skip(1).map(String::strip).filter(l -> !l.isEmpty()).collect(Collectors.joining("\n"));
        String normReadme = readme.lines().map(String::strip).filter(l -> !l.isEmpty()).collect(Collectors.joining("\n"));
        assertTrue(normReadme.contains(normExample), "README.md must contain the example between the markers of ReadmeExampleTest:\n" + normExample);
    }
}
