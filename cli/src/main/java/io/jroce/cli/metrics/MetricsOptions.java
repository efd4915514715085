package io.jroce.cli.metrics;

import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The {@code --metrics [ADDR:]PORT} option, a picocli mixin for the commands that open a device
 * ({@code @Mixin MetricsOptions metrics = new MetricsOptions();}). Off unless given; see {@link MetricsExport}.
 */
public final class MetricsOptions {
    @Option(names = "--metrics", paramLabel = "[ADDR:]PORT", converter = MetricsAddress.Converter.class,
            description = "Serve the device, QP and fault-injector counters in the Prometheus text format at "
                    + "http://ADDR:PORT/metrics (a bare PORT listens on every address; port 0 picks a free one), and "
                    + "register them as JMX MBeans (domain io.jroce) while the device is open. Off by default.")
    MetricsAddress address;

    /** The command that mixes this in: its command line for usage errors, its stderr for the listening line. */
    @Spec(Spec.Target.MIXEE)
    CommandSpec mixee;

    public MetricsOptions() {
    }

    /** Options as if {@code --metrics address} were given (null: off), for code that does not go through picocli. */
    public static MetricsOptions of(MetricsAddress address) {
        MetricsOptions o = new MetricsOptions();
        o.address = address;
        return o;
    }

    public boolean enabled() {
        return address != null;
    }

    /** The {@code --metrics} value, or null when metrics are off. */
    public MetricsAddress address() {
        return address;
    }
}
