package io.jroce.cli.metrics;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.DeviceConfig;
import io.jroce.endpoint.DropReason;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.RcConnect;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;
import io.jroce.endpoint.fault.FaultInjector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link MetricsExport} against two real devices on 127.0.0.1 (ephemeral UDP ports) moving RDMA WRITEs
 * between two connected QPs: the Prometheus endpoint is fetched over HTTP and parsed, the MBeans read
 * from the platform MBeanServer.
 */
class MetricsExportTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();
    private static final MBeanServer MBEANS = ManagementFactory.getPlatformMBeanServer();
    private static final int LEN = 3000; // three packets at MTU 1024

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private FaultInjector chaos;
    private Device a;
    private Device b;
    private QueuePair qa;
    private CompletionQueue cqA;
    private MemoryRegion src;
    private MemoryRegion dst;

    @BeforeEach
    void connectTwoQps() throws Exception {
        chaos = FaultInjector.parse(""); // passes everything; counts what passed
        // no tail probes and no ACK timeout: on a busy machine either could resend, and the counts here are exact
        a = Device.open(new DeviceConfig(LOOPBACK).port(0).filter(chaos).tailProbeMicros(0));
        b = Device.open(new DeviceConfig(LOOPBACK).port(0));
        ProtectionDomain pa = a.allocPd();
        ProtectionDomain pb = b.allocPd();
        cqA = a.createCq(64);
        CompletionQueue cqB = b.createCq(64);
        qa = pa.createQp(new QpInitAttr(cqA));
        QueuePair qb = pb.createQp(new QpInitAttr(cqB));
        src = pa.allocateAndRegister(LEN, Access.LOCAL_WRITE);
        dst = pb.allocateAndRegister(LEN, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        RcConnect.connectPair(qa, 0x100, qb, 0x200, RcConnect.Params.defaults().timeout(0));
    }

    @AfterEach
    void close() {
        if (a != null) a.close();
        if (b != null) b.close();
    }

    @Test
    void scrapesCountersThatRiseBetweenScrapes() throws Exception {
        try (MetricsExport m = MetricsExport.start(new MetricsAddress(LOOPBACK, 0), a, chaos)) {
            assertTrue(m.enabled());
            assertTrue(m.port() > 0, "an ephemeral port was bound");
            assertEquals("http://127.0.0.1:" + m.port() + "/metrics", m.url());
            writes(2);
            PromText first = scrape(m);
            writes(3);
            PromText second = scrape(m);

            Map<String, String> dev = Map.of("device", "127.0.0.1");
            Map<String, String> qp = Map.of("device", "127.0.0.1", "qpn", String.format("0x%06x", qa.qpNum()));
            for (String counter : new String[] {"jroce_device_sent_packets_total", "jroce_device_received_packets_total",
                    "jroce_device_sent_bytes_total"}) {
                assertTrue(second.value(counter, dev) > first.value(counter, dev), counter + " rose");
            }
            // 2 then 5 WRITEs of 3 packets each, all from qa: the QP's own count is exact
            assertEquals(6, first.value("jroce_qp_sent_packets_total", qp));
            assertEquals(15, second.value("jroce_qp_sent_packets_total", qp));
            // UDP payload: the data, BTH (12) and ICRC (4) on each packet, the RETH (16) on the first
            assertEquals(5 * (LEN + 3 * (12 + 4) + 16), second.value("jroce_qp_sent_bytes_total", qp));
            assertTrue(second.value("jroce_qp_received_packets_total", qp) > first.value("jroce_qp_received_packets_total", qp),
                    "ACKs came back");
            assertEquals(1, second.value("jroce_qp_state", Map.of("device", "127.0.0.1", "qpn", qp.get("qpn"), "jroce_qp_state", "RTS")));
            assertEquals(0, second.value("jroce_qp_state", Map.of("device", "127.0.0.1", "qpn", qp.get("qpn"), "jroce_qp_state", "ERR")));
            assertEquals(1, second.value("jroce_device_queue_pairs", dev));
            assertEquals(0, second.value("jroce_device_dropped_packets_total", Map.of("device", "127.0.0.1", "reason", "icrc")));
            assertEquals(DropReason.values().length, second.find("jroce_device_dropped_packets_total", dev).size(), "one series per drop reason");
            double passedOut = second.value("jroce_fault_datagrams_total",
                    Map.of("device", "127.0.0.1", "direction", "out", "action", "passed"));
            assertEquals(second.value("jroce_device_sent_packets_total", dev), passedOut, "every datagram sent went through the injector");
            assertTrue(passedOut > first.value("jroce_fault_datagrams_total",
                    Map.of("device", "127.0.0.1", "direction", "out", "action", "passed")));

            // a Prometheus server with native histograms on asks for protobuf first: it gets protobuf, not an error
            HttpRequest proto = HttpRequest.newBuilder(URI.create(m.url())).timeout(Duration.ofSeconds(10))
                    .header("Accept", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.8,"
                            + "text/plain;version=0.0.4;q=0.3")
                    .build();
            HttpResponse<byte[]> r = http.send(proto, HttpResponse.BodyHandlers.ofByteArray());
            assertEquals(200, r.statusCode());
            assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("application/vnd.google.protobuf"), r.headers().map().toString());
            assertTrue(r.body().length > 100);

            // the families and their types, as the conventions want them
            assertEquals("counter", second.types.get("jroce_device_sent_bytes_total"));
            assertEquals("counter", second.types.get("jroce_qp_retries_total"));
            assertEquals("gauge", second.types.get("jroce_device_queue_pairs"));
            assertEquals("gauge", second.types.get("jroce_qp_state"));
            for (PromText.Sample s : second.samples) {
                assertTrue(s.name().startsWith("jroce_"), s.name());
                assertEquals("127.0.0.1", s.labels().get("device"), s + " has the device label");
            }
            for (Map.Entry<String, String> t : second.types.entrySet()) {
                assertEquals(t.getValue().equals("counter"), t.getKey().endsWith("_total"), t.getKey() + " " + t.getValue());
                assertFalse(second.help.getOrDefault(t.getKey(), "").isBlank(), t.getKey() + " has a HELP line");
            }
        }
    }

    @Test
    void qpSeriesAndMBeansFollowQpsThatComeAndGo() throws Exception {
        try (MetricsExport m = MetricsExport.start(new MetricsAddress(LOOPBACK, 0), a, null)) {
            ProtectionDomain pd = a.allocPd();
            for (int round = 0; round < 20; round++) {
                QueuePair extra = pd.createQp(new QpInitAttr(cqA));
                String qpn = String.format("0x%06x", extra.qpNum());
                PromText with = scrape(m);
                assertEquals(1, with.find("jroce_qp_sent_packets_total", Map.of("qpn", qpn)).size(), "round " + round);
                assertTrue(MBEANS.isRegistered(JmxBeans.qpName(a, extra.qpNum())), "registered by the scrape");
                assertEquals(2, qpMBeans(a).size());
                extra.destroy();
                PromText without = scrape(m);
                assertEquals(0, without.find("jroce_qp_sent_packets_total", Map.of("qpn", qpn)).size(), "round " + round);
                assertEquals(1, without.find("jroce_qp_sent_packets_total", Map.of()).size(), "only qa is left");
                assertFalse(MBEANS.isRegistered(JmxBeans.qpName(a, extra.qpNum())), "unregistered by the scrape");
            }
            // without a scrape, refresh() (the once-a-second task) does the same
            QueuePair extra = pd.createQp(new QpInitAttr(cqA));
            m.refresh();
            assertEquals(2, qpMBeans(a).size());
            extra.destroy();
            m.refresh();
            assertEquals(Set.of(JmxBeans.qpName(a, qa.qpNum())), qpMBeans(a));
        }
    }

    @Test
    void mbeansAreReadableWhileOpenAndGoneAfterClose() throws Exception {
        ObjectName device = new ObjectName("io.jroce:type=Device,address=127.0.0.1,port=" + a.port());
        ObjectName qp = new ObjectName(String.format("io.jroce:type=QueuePair,device=127.0.0.1,port=%d,qpn=0x%06x", a.port(), qa.qpNum()));
        ObjectName faults = new ObjectName("io.jroce:type=FaultInjector,device=127.0.0.1,port=" + a.port());
        assertFalse(MBEANS.isRegistered(device), "nothing before --metrics");
        try (MetricsExport m = MetricsExport.start(new MetricsAddress(LOOPBACK, 0), a, chaos)) {
            assertEquals(Set.of(device), MBEANS.queryNames(new ObjectName("io.jroce:type=Device,address=127.0.0.1,port=" + a.port() + ",*"), null));
            assertTrue(MBEANS.isRegistered(qp), "the QP that existed at start");
            assertTrue(MBEANS.isRegistered(faults));
            assertEquals(0L, MBEANS.getAttribute(device, "packets_out"));
            writes(1);
            assertEquals(3L, MBEANS.getAttribute(device, "packets_out"), "three packets of one WRITE, read live at each get");
            assertEquals(3L, MBEANS.getAttribute(qp, "packets_out"));
            assertEquals("RTS", MBEANS.getAttribute(qp, "state"));
            assertEquals(qa.qpNum(), MBEANS.getAttribute(qp, "qpn"));
            assertEquals(1, MBEANS.getAttribute(device, "queue_pairs"));
            assertEquals(0L, MBEANS.getAttribute(device, "drop_icrc"));
            assertEquals(3L, MBEANS.getAttribute(faults, "out.passed"));
            assertTrue(MBEANS.getMBeanInfo(qp).getAttributes().length > 10, "the QP's counters are its attributes");
        }
        assertFalse(MBEANS.isRegistered(device));
        assertFalse(MBEANS.isRegistered(qp));
        assertFalse(MBEANS.isRegistered(faults));
        assertEquals(Set.of(), MBEANS.queryNames(new ObjectName("io.jroce:device=127.0.0.1,port=" + a.port() + ",*"), null));
    }

    @Test
    void closedExportNoLongerServes() throws Exception {
        MetricsExport m = MetricsExport.start(new MetricsAddress(LOOPBACK, 0), a, null);
        int port = m.port();
        scrape(m);
        m.close();
        m.close(); // idempotent
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics")).timeout(Duration.ofSeconds(10)).build();
        assertThrows(java.io.IOException.class, () -> http.send(req, HttpResponse.BodyHandlers.ofString()));
    }

    @Test
    void aSecondExportOfOneDeviceIsRefusedAndLeavesTheFirstIntact() throws Exception {
        try (MetricsExport m = MetricsExport.start(new MetricsAddress(LOOPBACK, 0), a, null)) {
            assertThrows(javax.management.InstanceAlreadyExistsException.class,
                    () -> MetricsExport.start(new MetricsAddress(LOOPBACK, 0), a, null));
            assertTrue(MBEANS.isRegistered(JmxBeans.deviceName(a)));
            scrape(m);
        }
    }

    @Test
    void theTestParserRejectsWhatIsNotTheTextFormat() {
        assertThrows(IllegalArgumentException.class, () -> PromText.parse("x_total 1\n"), "a sample before TYPE");
        assertThrows(IllegalArgumentException.class, () -> PromText.parse("# TYPE x counter\nx 1\n"), "a counter sample without _total");
        assertThrows(IllegalArgumentException.class, () -> PromText.parse("# TYPE x gauge\nx{a=b} 1\n"), "unquoted label");
        assertThrows(IllegalArgumentException.class, () -> PromText.parse("# TYPE x gauge\nx one\n"), "a value that is no number");
        assertThrows(IllegalArgumentException.class, () -> PromText.parse("# TYPE x gauge\nx 1"), "no final newline");
        assertEquals(2.5, PromText.parse("# TYPE x gauge\nx{a=\"b\",c=\"d\\\"\"} 2.5\n").value("x", Map.of("a", "b", "c", "d\\\"")));
    }

    /** {@code n} signaled RDMA WRITEs of {@link #LEN} bytes from qa, each waited for. */
    private void writes(int n) throws InterruptedException {
        WorkCompletion[] wc = {new WorkCompletion()};
        for (int i = 0; i < n; i++) {
            qa.postSend(new SendWorkRequest(i, WrOpcode.RDMA_WRITE, new Sge(src.address(), LEN, src.lkey()))
                    .remote(dst.address(), dst.rkey()).signaled());
            assertEquals(1, cqA.poll(wc, 1, 10, TimeUnit.SECONDS), () -> "a " + a.counters() + " b " + b.counters() + " " + qa.describe());
            assertTrue(wc[0].ok(), wc[0].toString());
        }
    }

    private PromText scrape(MetricsExport m) throws Exception {
        HttpRequest req = HttpRequest.newBuilder(URI.create(m.url())).timeout(Duration.ofSeconds(10)).build();
        HttpResponse<String> r = http.send(req, HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("text/plain; version=0.0.4"),
                r.headers().map().toString());
        return PromText.parse(r.body());
    }

    private static Set<ObjectName> qpMBeans(Device d) throws Exception {
        return MBEANS.queryNames(new ObjectName("io.jroce:type=QueuePair,device=127.0.0.1,port=" + d.port() + ",*"), null);
    }
}
