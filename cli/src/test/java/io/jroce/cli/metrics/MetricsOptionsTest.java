package io.jroce.cli.metrics;

import io.jroce.cli.Main;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.DeviceConfig;
import org.junit.jupiter.api.Test;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.concurrent.Callable;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code --metrics} as the commands see it: the mixin on a command run through {@link Main}'s command line
 * (its one-line usage errors, exit 2), the converter, and {@link MetricsExport#start(MetricsOptions, Device)}.
 */
class MetricsOptionsTest {
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();
    private static final MBeanServer MBEANS = ManagementFactory.getPlatformMBeanServer();

    /** A command shaped like perf's: opens a device on 127.0.0.1, exports it while it runs. */
    @Command(name = "probe", mixinStandardHelpOptions = true)
    static final class Probe implements Callable<Integer> {
        @Mixin
        MetricsOptions metrics = new MetricsOptions();
        ObjectName deviceMBean;
        boolean enabled;
        boolean registeredWhileRunning;

        @Override
        public Integer call() throws Exception {
            try (Device dev = Device.open(new DeviceConfig(LOOPBACK).port(0).warmUp(false))) {
                deviceMBean = JmxBeans.deviceName(dev);
                try (MetricsExport m = MetricsExport.start(metrics, dev)) {
                    enabled = m.enabled();
                    registeredWhileRunning = MBEANS.isRegistered(deviceMBean);
                }
            }
            return 0;
        }
    }

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();
    private final Probe probe = new Probe();

    private int run(String... args) {
        return commandLine(probe, out, err).execute(prepend(args));
    }

    /** Main's command line (its usage-error handler) with the probe added; streams set after, so it gets them too. */
    private static picocli.CommandLine commandLine(Probe probe, StringWriter out, StringWriter err) {
        picocli.CommandLine cl = Main.commandLine(new PrintWriter(out, true), new PrintWriter(err, true)).addSubcommand(probe);
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        return cl;
    }

    private static String[] prepend(String[] args) {
        String[] all = new String[args.length + 1];
        all[0] = "probe";
        System.arraycopy(args, 0, all, 1, args.length);
        return all;
    }

    @Test
    void offByDefault() {
        assertEquals(0, run());
        assertFalse(probe.enabled);
        assertFalse(probe.registeredWhileRunning);
        assertEquals("", err.toString());
    }

    @Test
    void aBarePortSaysItListensOnEveryAddress() {
        assertEquals(0, run("--metrics", "0"), err.toString());
        assertTrue(err.toString().matches("metrics: http://0\\.0\\.0\\.0:(\\d+)/metrics on every address "
                + "\\(from this host http://127\\.0\\.0\\.1:\\d+/metrics\\) .*\\R"), err.toString());
    }

    @Test
    void anIpv6AddressIsPrintedAsAUrlWritesIt() {
        assertEquals(0, run("--metrics", "[::1]:0"), err.toString());
        assertTrue(err.toString().matches("metrics: http://\\[::1\\]:\\d+/metrics \\(Prometheus.*\\R"), err.toString());
    }

    @Test
    void servesWhileTheCommandRunsAndSaysWhere() {
        assertEquals(0, run("--metrics", "127.0.0.1:0"), err.toString());
        assertTrue(probe.enabled);
        assertTrue(probe.registeredWhileRunning);
        assertFalse(MBEANS.isRegistered(probe.deviceMBean), "unregistered when the command ends");
        assertTrue(err.toString().matches("metrics: http://127\\.0\\.0\\.1:\\d+/metrics .*\\R"), err.toString());
    }

    @Test
    void aBusyPortIsAOneLineUsageError() throws Exception {
        try (ServerSocket busy = new ServerSocket(0, 1, LOOPBACK)) {
            int port = busy.getLocalPort();
            assertEquals(2, run("--metrics", "127.0.0.1:" + port));
            String e = err.toString();
            assertEquals(1, e.lines().count(), e);
            assertTrue(e.startsWith("jroce probe: --metrics 127.0.0.1:" + port + ": "), e);
            assertTrue(e.contains("in use"), e);
            assertNotNull(probe.deviceMBean, "the device had opened");
            assertFalse(probe.registeredWhileRunning);
            assertFalse(MBEANS.isRegistered(probe.deviceMBean), "nothing left registered");
        }
    }

    @Test
    void badValuesAreOneLineUsageErrors() {
        for (String bad : new String[] {"nonsense", "70000", "127.0.0.1:", "127.0.0.1:x", "::1:9100", "[::1]9100", "-1", ""}) {
            StringWriter e = new StringWriter();
            Probe p = new Probe();
            int code = commandLine(p, new StringWriter(), e).execute("probe", "--metrics", bad);
            assertEquals(2, code, bad);
            assertEquals(1, e.toString().lines().count(), e.toString());
            assertTrue(e.toString().contains("--metrics"), e.toString());
            assertNull(p.deviceMBean, "rejected before the command ran: " + bad);
        }
    }

    @Test
    void helpShowsTheOption() {
        assertEquals(0, run("--help"));
        assertTrue(out.toString().contains("--metrics=[ADDR:]PORT"), out.toString());
    }

    @Test
    void addressForms() throws Exception {
        assertEquals(new MetricsAddress(null, 9100), MetricsAddress.parse("9100"));
        assertEquals(new MetricsAddress(null, 9100), MetricsAddress.parse(":9100"));
        assertEquals(new MetricsAddress(LOOPBACK, 0), MetricsAddress.parse("127.0.0.1:0"));
        assertEquals(new MetricsAddress(InetAddress.getByName("::1"), 65535), MetricsAddress.parse("[::1]:65535"));
        assertEquals("127.0.0.1:9100", MetricsAddress.parse("127.0.0.1:9100").toString());
        assertEquals("[::1]:9100", MetricsAddress.parse("[::1]:9100").toString());
        assertEquals("*:9100", MetricsAddress.parse("9100").toString());
        for (String bad : new String[] {"", "65536", "123456", "a:1", "1.2.3.4", "[::1]", "[::1]:", "::1", "1:2:3"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> MetricsAddress.parse(bad), bad);
            assertFalse(e.getMessage().contains("\n"), e.getMessage());
        }
        assertTrue(MetricsOptions.of(new MetricsAddress(LOOPBACK, 0)).enabled());
        assertFalse(new MetricsOptions().enabled());
    }
}
