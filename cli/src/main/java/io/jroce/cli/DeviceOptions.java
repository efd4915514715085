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

/** The device options shared by the traffic commands ({@code perf}, {@code pingpong}): capture, chaos, probe, counters. */
final class DeviceOptions {
    @Option(names = "--chaos", paramLabel = "SPEC", description = "Inject faults into our device's datagrams, both directions, "
            + "e.g. drop=0.01,reorder=0.01,dup=0.001,corrupt=0.001,seed=42 (see README, Fault injection).")
    String chaosSpec;

    @Option(names = "--pcap", paramLabel = "FILE", description = "Record every RoCE datagram our device sends and receives to this pcap file.")
    Path pcap;

    @Option(names = "--tail-probe", paramLabel = "MICROS", defaultValue = "0", description = "Tail-loss probe interval of our requester "
            + "(DeviceConfig.tailProbeMicros; default: ${DEFAULT-VALUE} = off). Off by default here because the peer is usually rdma_rxe or "
            + "a NIC on an unknown round trip: against rxe under QEMU (10-50 ms round trips) a 1 ms probe resent the head packet of "
            + "nearly every message, which rxe counts as duplicate_request. rxe and NICs recover from loss by sequence NAK or the "
            + "local ACK timeout (--qp-timeout); pass e.g. 1000 on a fast lossy path.")
    long tailProbeMicros;

    @Option(names = "--counters", description = "Print the device's counters (packets, retransmits, drop_<reason> incl. drop_icrc) "
            + "on stderr when the run ends, also after a failure: one line 'counters device ADDR: name=value ...'.")
    boolean counters;

    private FaultInjector chaos;

    /** The device configuration for {@code local}; a bad --chaos spec is a one-line usage error. */
    DeviceConfig config(CommandSpec spec, InetAddress local) {
        DeviceConfig config = new DeviceConfig(local).tailProbeMicros(tailProbeMicros);
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

    /** {@code --counters}: one line with every device counter, zeros included, so scripts can grep drop_icrc=0. */
    void printCounters(PrintWriter err, Device dev) {
        if (!counters) return;
        StringBuilder sb = new StringBuilder("counters device ").append(dev.address().getHostAddress()).append(':');
        dev.counters().asMap().forEach((k, v) -> sb.append(' ').append(k).append('=').append(v));
        err.println(sb);
        err.flush();
    }

    /** After the run: what the fault injector did and what the device counted. */
    void report(PrintWriter err, Device dev) {
        if (chaos != null) err.println("chaos: " + chaos.counters() + "\ndevice: " + dev.counters());
    }
}
