package io.jroce.cli.inspect;

import io.jroce.wire.BthView;
import io.jroce.wire.Icrc;
import io.jroce.wire.Opcode;
import io.jroce.wire.Operation;
import io.jroce.wire.Problem;
import io.jroce.wire.RocePacket;
import io.jroce.wire.pcap.CaptureReader;
import io.jroce.wire.pcap.PcapFrame;
import io.netty.buffer.ByteBuf;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Splits a capture's RoCEv2 packets into QP conversations and analyses each. Two streaming passes over the
 * file: the first finds the half-flows (source, destination, destination QPN) and pairs them
 * ({@link FlowPairing}); the second feeds every packet to its flow. Memory grows with the number of flows,
 * not with the size of the capture.
 */
public final class FlowAnalyzer {

    /** What a capture holds, flow by flow. */
    public static final class Result {
        final List<Flow> flows;
        /** RoCEv2 packets (UDP to the port) in the capture. */
        long packets;
        /** Frames in the capture. */
        long frames;
        /** Packets too short to hold a BTH, so without a destination QP to attribute them by. */
        long unattributed;
        /** The trace of the flow asked for, or null. */
        FlowTrace trace;
        /** Flow and endpoint (as requester) of {@link #trace}. */
        Flow traceFlow;
        int traceSide;

        Result(List<Flow> flows) {
            this.flows = flows;
        }

        public List<Flow> flows() {
            return flows;
        }

        public boolean clean() {
            long bad = unattributed;
            for (Flow f : flows) {
                bad += f.malformed + f.icrcFailures;
            }
            return bad == 0;
        }
    }

    private final int port;
    private final RocePacket packet = new RocePacket();
    private final BthView rawBth = new BthView();
    private final Icrc icrc = new Icrc();

    FlowAnalyzer(int port) {
        this.port = port;
    }

    /**
     * Analyses a capture. {@code traceFlow}: 0 for no trace, N to trace flow N, -1 to trace the flow with the
     * most packets among those {@code selected}; the trace follows the endpoint that sent more requests.
     *
     * @throws IOException if the file cannot be read (frames before a read error are not reported)
     */
    Result analyze(Path capture, int traceFlow, Predicate<Flow> selected) throws IOException {
        Map<HalfFlow.Key, HalfFlow> halves = new LinkedHashMap<>();
        long frames = 0;
        try (CaptureReader r = CaptureReader.open(capture)) {
            for (PcapFrame f; (f = r.next()) != null; ) {
                frames = f.frameNumber();
                if (!f.isUdp() || f.dstPort() != port || f.udpPayloadLength() < BthView.LENGTH) {
                    continue;
                }
                rawBth.wrap(f.asByteBuf(), f.udpPayloadOffset());
                HalfFlow.Key key = new HalfFlow.Key(f.srcAddress(), f.dstAddress(), rawBth.destQp());
                HalfFlow h = halves.get(key);
                if (h == null) {
                    h = new HalfFlow(key, f.frameNumber(), f.epochNanos(), f.srcPort());
                    halves.put(key, h);
                }
                h.packets++;
                h.lastNanos = Math.max(h.lastNanos, f.epochNanos());
                Opcode op = Opcode.of(rawBth.opcode());
                if (op != null && op.isRc() && op.isRequest()) {
                    h.requestPackets++;
                    if (h.firstRequestPsn < 0) {
                        h.firstRequestPsn = rawBth.psn();
                    }
                } else if (op != null && op.isResponse() && h.firstResponsePsn < 0) {
                    h.firstResponsePsn = rawBth.psn();
                }
            }
        }
        List<HalfFlow[]> pairs = FlowPairing.pair(halves.values());
        List<Flow> flows = new ArrayList<>(pairs.size());
        Map<HalfFlow.Key, Flow> flowOf = new LinkedHashMap<>();
        for (HalfFlow[] p : pairs) {
            Flow flow = new Flow(flows.size() + 1, p[0], p[1]);
            flows.add(flow);
            flowOf.put(p[0].key, flow);
            if (p[1] != null) {
                flowOf.put(p[1].key, flow);
            }
        }
        Result result = new Result(flows);
        result.frames = frames;
        Flow traced = null;
        if (traceFlow > 0 && traceFlow <= flows.size()) {
            traced = flows.get(traceFlow - 1);
        } else if (traceFlow < 0) {
            long most = -1;
            for (int i = 0; i < flows.size(); i++) {
                if (!selected.test(flows.get(i))) {
                    continue;
                }
                long n = pairs.get(i)[0].packets + (pairs.get(i)[1] == null ? 0 : pairs.get(i)[1].packets);
                if (n > most) {
                    most = n;
                    traced = flows.get(i);
                }
            }
        }
        if (traced != null) {
            HalfFlow[] p = pairs.get(traced.number - 1);
            long fromFirst = p[0].requestPackets;
            long fromSecond = p[1] == null ? 0 : p[1].requestPackets;
            result.traceFlow = traced;
            result.traceSide = fromSecond > fromFirst ? 1 : 0;
            result.trace = new FlowTrace(traced.firstNanos, traced.lastNanos);
        }

        try (CaptureReader r = CaptureReader.open(capture)) {
            for (PcapFrame f; (f = r.next()) != null; ) {
                if (f.isUdp() && f.dstPort() == port) {
                    feed(f, flowOf, result);
                }
            }
        }
        return result;
    }

    private void feed(PcapFrame f, Map<HalfFlow.Key, Flow> flowOf, Result result) {
        result.packets++;
        ByteBuf buf = f.asByteBuf();
        int off = f.udpPayloadOffset();
        int len = f.udpPayloadLength();
        if (len < BthView.LENGTH) {
            result.unattributed++;
            return;
        }
        rawBth.wrap(buf, off);
        Flow flow = flowOf.get(new HalfFlow.Key(f.srcAddress(), f.dstAddress(), rawBth.destQp()));
        if (flow == null) {
            result.unattributed++; // the capture changed between the passes
            return;
        }
        int sender = f.srcAddress().equals(flow.address[0]) && rawBth.destQp() == flow.qpn[1] ? 0 : 1;
        flow.count(f.frameNumber(), f.isTruncated() ? f.originalLength() : f.ipLength());
        boolean complete = !f.isTruncated() && f.ipOffset() + f.ipLength() <= f.capturedLength();
        Problem problem = complete ? packet.decode(buf, off, len) : Problem.TOO_SHORT;
        if (problem != Problem.NONE) {
            flow.malformed++;
            flow.countOpcode(rawBth.opcode());
            return;
        }
        Opcode op = packet.opcode();
        flow.countOpcode(op.code());
        if (!verifyIcrc(buf, f)) {
            flow.icrcFailures++;
            return;
        }
        int payload = packet.payloadLength();
        flow.notePayload(op, payload);
        if (op.operation() == Operation.CNP) {
            flow.cnps++;
            return;
        }
        if (!op.isRc()) {
            flow.unreliable++;
            return;
        }
        long nanos = f.epochNanos();
        if (op.isRequest()) {
            RequesterSide side = flow.sides[sender];
            long dmaLength = op.hasReth() ? packet.reth().dmaLengthUnsigned() : 0;
            side.onRequest(op, packet.psn(), packet.ackReq(), payload, dmaLength, nanos,
                    traceOf(result, flow, sender));
        } else if (op.isResponse()) {
            RequesterSide side = flow.sides[1 - sender];
            int syndrome = op.hasAeth() ? packet.aeth().syndrome() : 0;
            side.onResponse(op, packet.psn(), syndrome, payload, nanos, traceOf(result, flow, 1 - sender));
        }
    }

    private static FlowTrace traceOf(Result result, Flow flow, int side) {
        return result.traceFlow == flow && result.traceSide == side ? result.trace : null;
    }

    private boolean verifyIcrc(ByteBuf buf, PcapFrame f) {
        try {
            return icrc.verifyIpPacket(buf, f.ipOffset(), f.ipLength());
        } catch (RuntimeException e) {
            return false;
        }
    }
}
