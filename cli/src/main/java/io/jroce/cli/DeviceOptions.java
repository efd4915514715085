package io.jroce.cli;

import io.jroce.endpoint.Device;
import io.jroce.endpoint.DeviceConfig;
import io.jroce.endpoint.fault.FaultInjector;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

import java.io.PrintWriter;
import java.net.InetAddress;
import java.nio.file.Path;

/** The device options shared by the traffic commands ({@code perf}, {@code pingpong}): capture and chaos. */
final class DeviceOptions {
    @Option(names = "--chaos", paramLabel = "SPEC", description = "Inject faults into our device's datagrams, both directions, "
            + "e.g. drop=0.01,reorder=0.01,dup=0.001,corrupt=0.001,seed=42 (see README, Fault injection).")
    String chaosSpec;

    @Option(names = "--pcap", paramLabel = "FILE", description = "Record every RoCE datagram our device sends and receives to this pcap file.")
    Path pcap;

    private FaultInjector chaos;

    /** The device configuration for {@code local}; a bad --chaos spec is a one-line usage error. */
    DeviceConfig config(CommandSpec spec, InetAddress local) {
        DeviceConfig config = new DeviceConfig(local);
        if (pcap != null) config.pcap(pcap);
        if (chaosSpec != null) {
            try {
                chaos = FaultInjector.parse(chaosSpec);
            } catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), "--chaos: " + e.getMessage());
            }
            config.filter(chaos);
            spec.commandLine().getErr().println("chaos " + chaos.spec() + ": replay with --chaos '" + chaos.spec() + "'");
        }
        return config;
    }

    /** After the run: what the fault injector did and what the device counted. */
    void report(PrintWriter err, Device dev) {
        if (chaos != null) err.println("chaos: " + chaos.counters() + "\ndevice: " + dev.counters());
    }
}
