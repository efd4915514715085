package io.jroce.cli.metrics;

import io.jroce.wire.IpText;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.fault.FaultInjector;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import picocli.CommandLine;
import picocli.CommandLine.ParameterException;

import javax.management.JMException;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * {@code --metrics}: one device's counters served over HTTP in the Prometheus text format and registered as
 * JMX MBeans, for as long as this is open. Commands wrap their run in it, inside the device's own
 * try-with-resources so it closes first:
 * <pre>{@code
 * try (Device dev = Device.open(config);
 *      MetricsExport metrics = MetricsExport.start(metricsOptions, dev, chaos)) {
 *     ...
 * }
 * }</pre>
 * Without {@code --metrics} {@link #start} returns an export that does nothing. Counters are read when a
 * scrape or a JMX client asks, in one event-loop task per scrape; the data path itself is untouched. QP
 * MBeans are brought in line with the device's QPs at every scrape and once a second, so QPs that come and
 * go leave neither MBeans nor label series behind.
 *
 * <p>The exporter is the Prometheus Java client ({@code prometheus-metrics-core} and
 * {@code -exporter-httpserver}, on the JDK's own HTTP server): one {@link PrometheusRegistry} per export, so
 * two exports in one process (tests) never mix their devices.
 */
public final class MetricsExport implements AutoCloseable {
    /** How often QP MBeans follow the device's QPs when nobody scrapes. */
    static final long JMX_SYNC_MILLIS = 1000;

    private static final MetricsExport OFF = new MetricsExport(null, null, null, null, null);

    private final MetricsAddress address;
    private final Device device;
    private final HTTPServer server;
    private final JmxBeans jmx;
    private final ScheduledExecutorService sync;
    private boolean closed; // guarded by this

    private MetricsExport(MetricsAddress address, Device device, HTTPServer server, JmxBeans jmx, ScheduledExecutorService sync) {
        this.address = address;
        this.device = device;
        this.server = server;
        this.jmx = jmx;
        this.sync = sync;
    }

    /** 0.0.0.0: how a URL names "every address". */
    private static final InetAddress WILDCARD = wildcard();

    private static InetAddress wildcard() {
        try {
            return InetAddress.getByAddress(new byte[4]);
        } catch (java.net.UnknownHostException e) {
            throw new IllegalStateException(e); // cannot happen: 4 bytes
        }
    }

    /** {@link #start(MetricsOptions, Device, FaultInjector)} for a device without a fault injector. */
    public static MetricsExport start(MetricsOptions options, Device device) {
        return start(options, device, null);
    }

    /**
     * Starts what {@code --metrics} asked for, or nothing when it was not given. A port in use or an address
     * that is not this host's is a one-line usage error naming the value (exit 2), like a bad option value,
     * since that is what it is; the device is left to its owner to close.
     *
     * @param chaos the device's fault injector (its counters are exported too), or null
     * @throws ParameterException the endpoint cannot be served
     */
    public static MetricsExport start(MetricsOptions options, Device device, FaultInjector chaos) {
        if (options == null || !options.enabled()) return OFF;
        CommandLine cl = options.mixee == null ? null : options.mixee.commandLine();
        MetricsExport export;
        try {
            export = start(options.address(), device, chaos);
        } catch (IOException | JMException e) {
            String message = "--metrics " + options.address() + ": " + oneLine(e);
            if (cl == null) throw new IllegalArgumentException(message, e);
            throw new ParameterException(cl, message, e);
        }
        if (cl != null) {
            PrintWriter err = cl.getErr();
            err.println("metrics: " + export.url() + (export.everyAddress() ? " on every address (from this host " + export.localUrl() + ")" : "")
                    + " (Prometheus text format); JMX MBeans under " + JmxBeans.DOMAIN + ":*");
            err.flush();
        }
        return export;
    }

    /**
     * Serves {@code device}'s counters at {@code http://address/metrics} and registers its MBeans in the
     * platform MBeanServer.
     *
     * @throws IOException  the HTTP endpoint cannot be bound (port in use, address not on this host)
     * @throws JMException  an MBean of this device is already registered (another export of it in this process)
     */
    public static MetricsExport start(MetricsAddress address, Device device, FaultInjector chaos)
            throws IOException, JMException {
        if (!device.isOpen()) throw new IllegalStateException("device " + IpText.of(device.address()) + " is closed");
        JmxBeans jmx = new JmxBeans(ManagementFactory.getPlatformMBeanServer(), device);
        PrometheusRegistry registry = new PrometheusRegistry();
        registry.register(new JroceCollector(device, chaos, jmx::sync));
        HTTPServer.Builder builder = HTTPServer.builder().port(address.port()).registry(registry);
        if (address.host() != null) builder.inetAddress(address.host());
        HTTPServer server = builder.buildAndStart();
        ScheduledExecutorService sync = null;
        try {
            jmx.register(chaos);
            sync = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "jroce-metrics-jmx");
                t.setDaemon(true);
                return t;
            });
            MetricsExport export = new MetricsExport(address, device, server, jmx, sync);
            export.refresh();
            sync.scheduleWithFixedDelay(export::refreshQuietly, JMX_SYNC_MILLIS, JMX_SYNC_MILLIS, TimeUnit.MILLISECONDS);
            return export;
        } catch (JMException | RuntimeException | Error e) {
            if (sync != null) sync.shutdownNow();
            jmx.close();
            server.close();
            throw e;
        }
    }

    /** False for the export of a command run without {@code --metrics}. */
    public boolean enabled() {
        return server != null;
    }

    /** The TCP port served (the ephemeral one when 0 was asked for); -1 when off. */
    public int port() {
        return server == null ? -1 : server.getPort();
    }

    /**
     * {@code http://127.0.0.1:9100/metrics}, {@code http://[::1]:9100/metrics}, with the port served; for a bind to
     * every address (a bare PORT) {@code http://0.0.0.0:9100/metrics}, which says so ({@link #localUrl} reaches it
     * from this host).
     */
    public String url() {
        if (server == null) return "";
        InetAddress host = address.host() == null ? WILDCARD : address.host();
        return "http://" + new MetricsAddress(host, server.getPort()) + "/metrics";
    }

    /** Whether the endpoint listens on every address. */
    public boolean everyAddress() {
        return address.host() == null || address.host().isAnyLocalAddress();
    }

    /** The URL from this host: {@link #url}, with the loopback address for a bind to every address. */
    public String localUrl() {
        if (server == null) return "";
        InetAddress host = everyAddress() ? InetAddress.getLoopbackAddress() : address.host();
        return "http://" + new MetricsAddress(host, server.getPort()) + "/metrics";
    }

    /** Brings the QP MBeans in line with the device's QPs now (what a scrape and the once-a-second task do). */
    public void refresh() {
        if (jmx == null || !device.isOpen()) return;
        jmx.sync(DeviceSample.take(device));
    }

    private void refreshQuietly() {
        try {
            refresh();
        } catch (RuntimeException e) {
            // the device closing under us: close() is about to unregister everything anyway
        }
    }

    /** Stops serving and unregisters every MBean; idempotent. */
    @Override
    public synchronized void close() {
        if (server == null || closed) return;
        closed = true;
        sync.shutdownNow();
        server.close();
        jmx.close(); // a sync still in flight (scrape or timer) registers nothing after this
    }

    private static String oneLine(Exception e) {
        String m = e.getMessage();
        if (m == null || m.isBlank()) m = e.getClass().getSimpleName();
        return m.strip().replaceAll("\\s*\\R\\s*", " ");
    }
}
