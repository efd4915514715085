package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.cm.CmAgent;
import io.jroce.endpoint.cm.CmEvent;
import io.jroce.endpoint.cm.CmEventChannel;
import io.jroce.endpoint.cm.CmEventType;
import io.jroce.endpoint.cm.CmId;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A program that returns from main with its rdma_cm connection up (rdmacm_exit, src/test/c, as perftest's
 * ib_atomic_lat server does) still ends it: its peer gets DISCONNECTED at once, as the kernel's rdma_cm sends a
 * DREQ for every id a process leaves open (ucma_close, rdma_destroy_id, cm.c cm_destroy_id). Without that the peer
 * hears nothing and waits: a client in rdma_disconnect waits out its DREQ's retries, a passive peer forever. The
 * peer here is a jroce connection manager in the test's JVM, host 39 of {@link Tools#net}; the program binds host 40.
 */
class CmExitTest {
    private static final Duration T = Duration.ofSeconds(30);

    @Test
    void aConnectionLeftOpenAtExitIsEndedForThePeer() throws Exception {
        Path program = Tools.nativeDir().resolve("test/rdmacm_exit");
        assertTrue(Files.isExecutable(program), "no " + program + ": did make run?");
        int port = Tools.cmPort(46330);
        try (Device dev = Device.open(InetAddress.getByName(Tools.addr(39)));
             CmAgent cm = CmAgent.open(dev)) {
            ProtectionDomain pd = dev.allocPd();
            CompletionQueue cq = dev.createCq(4);
            CmEventChannel ch = new CmEventChannel();
            CmId listener = CmId.create(cm, ch);
            listener.bind(port);
            listener.listen(1);
            Map<String, String> env = Map.of("JROCE_ADDR", Tools.addr(40), "JROCE_CLASSPATH", System.getProperty("java.class.path"));
            Path log = Files.createTempFile("rdmacm_exit", ".log");
            Process p = Tools.start(env, log, program.toString(), Tools.addr(39), "" + port);
            try {
                CmEvent req = ch.expect(CmEventType.CONNECT_REQUEST, T);
                req.id().createQp(pd, new QpInitAttr(cq));
                req.id().accept(null);
                assertEquals(req.id(), ch.expect(CmEventType.ESTABLISHED, T).id());
                assertTrue(p.waitFor(T.toSeconds(), java.util.concurrent.TimeUnit.SECONDS), "rdmacm_exit did not end");
                long exited = System.nanoTime();
                assertEquals(0, p.exitValue(), Files.readString(log));
                assertTrue(Files.readString(log).contains("connected\n"), Files.readString(log));
                // a DREQ the program sent on its way out: here well before any timer of ours or of the program's
                CmEvent e = ch.getEvent(Duration.ofSeconds(3));
                assertNotNull(e, "no DISCONNECTED within 3 s of the program's exit");
                assertEquals(CmEventType.DISCONNECTED, e.type());
                assertEquals(req.id(), e.id());
                System.out.printf("CmExitTest: DISCONNECTED %.1f ms after the program ended%n", (System.nanoTime() - exited) / 1e6);
                req.id().close();
            } finally {
                p.destroyForcibly().waitFor();
                Files.deleteIfExists(log);
            }
        }
    }
}
