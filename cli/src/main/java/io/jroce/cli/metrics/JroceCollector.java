package io.jroce.cli.metrics;

import io.jroce.wire.IpText;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.DeviceCounters;
import io.jroce.endpoint.DropReason;
import io.jroce.endpoint.QpCounters;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.fault.Direction;
import io.jroce.endpoint.fault.FaultAction;
import io.jroce.endpoint.fault.FaultInjector;
import io.jroce.endpoint.fault.FaultRule;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.prometheus.metrics.model.snapshots.StateSetSnapshot;
import io.prometheus.metrics.model.snapshots.StateSetSnapshot.StateSetDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Unit;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;
import java.util.function.ToLongFunction;

/**
 * Turns the live counters of one device (and its fault injector, if any) into Prometheus metric families at
 * scrape time: nothing is counted twice and the data path pays nothing between scrapes. Names follow the
 * Prometheus conventions: prefix {@code jroce_}, base units in the name ({@code _bytes}), {@code _total} on
 * counters (added by the exposition format), and labels {@code device} (the device's IPv4 address) and
 * {@code qpn} ({@code 0x000011}) instead of one name per instance. A QP's series exist while the QP does: a
 * destroyed QP is simply absent from the next scrape, so QPs that come and go leave nothing behind.
 */
final class JroceCollector implements MultiCollector {
    /** One counter family read from a counters object. */
    private record Family<C>(String name, Unit unit, String help, ToLongFunction<C> value) {
    }

    private static final List<Family<DeviceCounters>> DEVICE = List.of(
            new Family<>("jroce_device_received_packets", null,
                    "UDP datagrams the device's socket received, before any check (drops included).", c -> c.packetsIn),
            new Family<>("jroce_device_received_bytes", Unit.BYTES,
                    "UDP payload bytes the device's socket received (RoCE headers and ICRC included).", c -> c.bytesIn),
            new Family<>("jroce_device_sent_packets", null, "RoCE datagrams the device sent.", c -> c.packetsOut),
            new Family<>("jroce_device_sent_bytes", Unit.BYTES,
                    "UDP payload bytes the device sent (RoCE headers and ICRC included).", c -> c.bytesOut),
            new Family<>("jroce_device_retransmits", null,
                    "Requester retries of all QPs: going back to resend after a sequence NAK, a missing READ response or an ACK timeout.",
                    c -> c.retransmits),
            new Family<>("jroce_device_ack_timeouts", null, "Local ACK timeouts of all QPs.", c -> c.timeouts),
            new Family<>("jroce_device_unexpected_responses", null,
                    "Responses that matched no outstanding request (ghost responses).", c -> c.ghostResponse),
            new Family<>("jroce_device_send_errors", null, "Datagrams the socket failed to send.", c -> c.sendErrors),
            new Family<>("jroce_device_shard_handoffs", null,
                    "Datagrams one event loop read for a QP of another loop and handed over (--event-loops; 0 with one loop).",
                    c -> c.shardHandoffs));

    private static final List<Family<QpCounters>> QP = List.of(
            new Family<>("jroce_qp_sent_packets", null, "RoCE packets the QP sent (requests, responses and ACKs).", c -> c.packetsOut),
            new Family<>("jroce_qp_sent_bytes", Unit.BYTES, "UDP payload bytes the QP sent.", c -> c.bytesOut),
            new Family<>("jroce_qp_received_packets", null, "RoCE packets delivered to the QP after the device's checks.", c -> c.packetsIn),
            new Family<>("jroce_qp_received_bytes", Unit.BYTES, "UDP payload bytes delivered to the QP.", c -> c.bytesIn),
            new Family<>("jroce_qp_retries", null, "Requester retries, each spending one of retry_cnt: going back to resend "
                    + "after a sequence NAK, a missing READ response or an ACK timeout.", c -> c.retries),
            new Family<>("jroce_qp_ack_timeouts", null, "Local ACK timer expiries of the requester.", c -> c.timeouts),
            new Family<>("jroce_qp_naks_sent", null,
                    "Error NAKs the responder sent (invalid request, remote access, remote operational); "
                            + "sequence and RNR NAKs not included.",
                    c -> c.naksSent),
            new Family<>("jroce_qp_naks_received", null, "NAKs the requester received, sequence NAKs included, RNR NAKs not.", c -> c.naksReceived),
            new Family<>("jroce_qp_seq_naks_sent", null, "PSN sequence error NAKs the responder sent (one per gap).", c -> c.seqNaksSent),
            new Family<>("jroce_qp_seq_naks_received", null, "PSN sequence error NAKs the requester received.", c -> c.seqNaksReceived),
            new Family<>("jroce_qp_rnr_naks_sent", null, "RNR NAKs the responder sent (no receive WQE posted).", c -> c.rnrNaksSent),
            new Family<>("jroce_qp_rnr_naks_received", null, "RNR NAKs the requester received.", c -> c.rnrNaksReceived),
            new Family<>("jroce_qp_rnr_waits", null, "Times the requester waited out an RNR timer before resending.", c -> c.rnrWaits),
            new Family<>("jroce_qp_duplicate_packets", null,
                    "Duplicate requests or responses seen (already-acknowledged PSNs).", c -> c.duplicatesSeen),
            new Family<>("jroce_qp_out_of_order_packets", null, "Requests that arrived past a gap in the PSN sequence.", c -> c.outOfOrder),
            new Family<>("jroce_qp_unexpected_responses", null, "Responses that matched no outstanding request.", c -> c.ghostResponses),
            new Family<>("jroce_qp_tail_probes", null, "Tail-loss probes: single resends of the oldest unacknowledged packet.", c -> c.probes),
            new Family<>("jroce_qp_acks_sent", null,
                    "Plain positive ACKs the responder sent (duplicate re-ACKs included; NAKs, READ responses and atomic ACKs not).",
                    c -> c.acksSent),
            new Family<>("jroce_qp_acks_coalesced", null,
                    "ACKs the responder did not send because a later ACK of the same receive burst covered them.", c -> c.acksCoalesced));

    private static final String[] QP_STATES = stateNames();

    private final Device device;
    private final FaultInjector chaos;
    private final String deviceLabel;
    private final Consumer<DeviceSample> onSample;

    /**
     * @param chaos    the device's fault injector, or null when it has none
     * @param onSample told of every sample taken for a scrape (the JMX registrations follow the QPs it saw)
     */
    JroceCollector(Device device, FaultInjector chaos, Consumer<DeviceSample> onSample) {
        this.device = device;
        this.chaos = chaos;
        this.deviceLabel = IpText.of(device.address());
        this.onSample = onSample;
    }

    @Override
    public MetricSnapshots collect() {
        if (!device.isOpen()) return MetricSnapshots.of();
        DeviceSample sample = DeviceSample.take(device);
        onSample.accept(sample);
        List<MetricSnapshot> out = new ArrayList<>(DEVICE.size() + QP.size() + 8);
        Labels dev = Labels.of("device", deviceLabel);
        for (Family<DeviceCounters> f : DEVICE) {
            out.add(counter(f).dataPoint(point(dev, f.value.applyAsLong(sample.device()))).build());
        }
        CounterSnapshot.Builder drops = counter("jroce_device_dropped_packets", null,
                "Received datagrams dropped by the device, by reason (malformed, icrc, unknown_qp, ...).");
        for (DropReason r : DropReason.values()) {
            drops.dataPoint(point(dev.add("reason", r.name().toLowerCase(Locale.ROOT)), sample.device().drops(r)));
        }
        out.add(drops.build());
        out.add(GaugeSnapshot.builder().name("jroce_device_queue_pairs").help("Queue pairs on the device now.")
                .dataPoint(GaugeDataPointSnapshot.builder().labels(dev).value(sample.qps().size()).build()).build());

        List<Labels> qpLabels = new ArrayList<>(sample.qps().size());
        for (DeviceSample.Qp qp : sample.qps()) qpLabels.add(dev.add("qpn", DeviceSample.qpnLabel(qp.qpn())));
        for (Family<QpCounters> f : QP) {
            CounterSnapshot.Builder b = counter(f);
            for (int i = 0; i < qpLabels.size(); i++) {
                b.dataPoint(point(qpLabels.get(i), f.value.applyAsLong(sample.qps().get(i).counters())));
            }
            out.add(b.build());
        }
        StateSetSnapshot.Builder states = StateSetSnapshot.builder().name("jroce_qp_state")
                .help("The QP's state (IBA 10.3.1): 1 for the state it is in, 0 for the others.");
        for (int i = 0; i < qpLabels.size(); i++) {
            StateSetDataPointSnapshot.Builder p = StateSetDataPointSnapshot.builder().labels(qpLabels.get(i));
            QpState now = sample.qps().get(i).state();
            for (String s : QP_STATES) p.state(s, s.equals(now.name()));
            states.dataPoint(p.build());
        }
        out.add(states.build());

        if (chaos != null) addFaults(out, dev);
        return new MetricSnapshots(out);
    }

    /** The fault injector's counters are atomics readable from any thread: no event-loop hop. */
    private void addFaults(List<MetricSnapshot> out, Labels dev) {
        CounterSnapshot.Builder datagrams = counter("jroce_fault_datagrams", null,
                "Datagrams through the fault injector, by direction (in: received, out: sent) and the action taken on each.");
        for (Direction d : Direction.values()) {
            for (FaultAction a : FaultAction.values()) {
                datagrams.dataPoint(point(dev.add("direction", d.key()).add("action", a.counterName()), chaos.count(d, a)));
            }
        }
        out.add(datagrams.build());
        CounterSnapshot.Builder fired = counter("jroce_fault_rule_fired", null, "Times each current fault rule fired.");
        for (FaultRule r : chaos.rules()) fired.dataPoint(point(dev.add("rule", r.name()), r.fired()));
        out.add(fired.build());
        out.add(GaugeSnapshot.builder().name("jroce_fault_pending_datagrams")
                .help("Datagrams the fault injector holds now (reordered or delayed), not yet forwarded.")
                .dataPoint(GaugeDataPointSnapshot.builder().labels(dev).value(chaos.pending()).build()).build());
    }

    private static CounterSnapshot.Builder counter(Family<?> f) {
        return counter(f.name, f.unit, f.help);
    }

    private static CounterSnapshot.Builder counter(String name, Unit unit, String help) {
        CounterSnapshot.Builder b = CounterSnapshot.builder().name(name).help(help);
        return unit == null ? b : b.unit(unit);
    }

    private static CounterDataPointSnapshot point(Labels labels, long value) {
        return CounterDataPointSnapshot.builder().labels(labels).value(value).build();
    }

    private static String[] stateNames() {
        QpState[] states = QpState.values();
        String[] names = new String[states.length];
        for (int i = 0; i < states.length; i++) names[i] = states[i].name();
        return names;
    }
}
