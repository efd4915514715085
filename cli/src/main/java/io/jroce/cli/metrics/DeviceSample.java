package io.jroce.cli.metrics;

import io.jroce.endpoint.Device;
import io.jroce.endpoint.DeviceCounters;
import io.jroce.endpoint.QpCounters;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QueuePair;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The counters of a device and of each of its queue pairs, copied in one visit to the device's event loop
 * (the only writer of the counters), so a scrape sees one consistent moment and costs the data path a single
 * task, however many QPs there are.
 */
record DeviceSample(DeviceCounters device, List<Qp> qps) {
    /** One queue pair as it was: its QPN, state and counters. */
    record Qp(QueuePair qp, int qpn, QpState state, QpCounters counters) {
    }

    static DeviceSample take(Device device) {
        DeviceSample[] out = new DeviceSample[1];
        // counters() and queuePairs() run inline when already on the loop, so this is one hop
        device.runOnLoop(() -> {
            DeviceCounters counters = device.counters();
            List<QueuePair> queuePairs = device.queuePairs();
            List<Qp> qps = new ArrayList<>(queuePairs.size());
            for (QueuePair qp : queuePairs) qps.add(new Qp(qp, qp.qpNum(), qp.state(), qp.counters()));
            qps.sort(Comparator.comparingInt(Qp::qpn));
            out[0] = new DeviceSample(counters, List.copyOf(qps));
        });
        return out[0];
    }

    /** {@code 0x000011}: the six hex digits rdma tools print for a 24-bit QPN. */
    static String qpnLabel(int qpn) {
        return String.format("0x%06x", qpn);
    }
}
