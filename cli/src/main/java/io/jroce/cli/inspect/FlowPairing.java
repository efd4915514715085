package io.jroce.cli.inspect;

import io.jroce.wire.IpText;
import io.jroce.wire.Psn;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Joins the half-flows of a capture into QP conversations. Packets A->B target B's QPN and packets B->A
 * target A's, and nothing in an RC packet names its source QP, so the two directions are matched by their
 * address pair and, when an address pair carries several QPs, by:
 * <ol>
 *   <li>the UDP source port, when it singles out one half-flow each way (rdma_rxe derives it from both QPNs,
 *       rdma_get_udp_sport, so it is the same in both directions of a connection and differs between
 *       connections);</li>
 *   <li>otherwise the PSNs: a responder answers with the requester's PSNs, so the first response PSN of one
 *       direction lies near the first request PSN of the other, while initial PSNs of unrelated QPs are
 *       random 24-bit values.</li>
 * </ol>
 * A direction without a partner becomes a flow of its own.
 */
final class FlowPairing {

    private FlowPairing() {
    }

    /** Pairs the half-flows in place ({@link HalfFlow#peer}) and returns the flows in order of first frame. */
    static List<HalfFlow[]> pair(Collection<HalfFlow> halves) {
        Map<String, List<HalfFlow>> byAddressPair = new LinkedHashMap<>();
        for (HalfFlow h : halves) {
            byAddressPair.computeIfAbsent(addressPair(h.key.src(), h.key.dst()), k -> new ArrayList<>()).add(h);
        }
        for (List<HalfFlow> group : byAddressPair.values()) {
            InetAddress x = group.get(0).key.src();
            if (x.equals(group.get(0).key.dst())) {
                // two QPs of one address (one device, or two on one host address): any two may pair
                pairGroup(group, group);
                continue;
            }
            List<HalfFlow> forward = new ArrayList<>();
            List<HalfFlow> backward = new ArrayList<>();
            for (HalfFlow h : group) {
                (h.key.src().equals(x) ? forward : backward).add(h);
            }
            pairGroup(forward, backward);
        }
        List<HalfFlow[]> flows = new ArrayList<>();
        for (HalfFlow h : halves) {
            if (h.peer == null) {
                flows.add(new HalfFlow[] {h, null});
            } else if (h.firstFrame < h.peer.firstFrame) {
                flows.add(new HalfFlow[] {h, h.peer});
            }
        }
        flows.sort(Comparator.comparingLong(f -> f[0].firstFrame));
        return flows;
    }

    private static void pairGroup(List<HalfFlow> forward, List<HalfFlow> backward) {
        if (forward.isEmpty() || backward.isEmpty()) {
            return;
        }
        boolean self = forward == backward;
        if (!self && forward.size() == 1 && backward.size() == 1) {
            link(forward.get(0), backward.get(0));
            return;
        }
        if (self && forward.size() == 2) {
            link(forward.get(0), forward.get(1));
            return;
        }
        // 1. a source port that occurs exactly once in each direction (twice among the QPs of one address)
        for (HalfFlow f : forward) {
            HalfFlow only = self ? otherWithPort(forward, f) : onlyWithPort(backward, f.sourcePort);
            if (only != null && only != f && f.peer == null && only.peer == null
                    && (self || onlyWithPort(forward, f.sourcePort) == f)) {
                link(f, only);
            }
        }
        // 2. the closest PSNs, greedily
        List<long[]> candidates = new ArrayList<>();
        for (int i = 0; i < forward.size(); i++) {
            for (int j = 0; j < backward.size(); j++) {
                HalfFlow f = forward.get(i);
                HalfFlow b = backward.get(j);
                if (f != b && f.peer == null && b.peer == null) {
                    candidates.add(new long[] {psnDistance(f, b), i, j});
                }
            }
        }
        candidates.sort(Comparator.comparingLong(c -> c[0]));
        for (long[] c : candidates) {
            HalfFlow f = forward.get((int) c[1]);
            HalfFlow b = backward.get((int) c[2]);
            if (f != b && f.peer == null && b.peer == null && c[0] < Long.MAX_VALUE) {
                link(f, b);
            }
        }
    }

    private static HalfFlow onlyWithPort(List<HalfFlow> list, int port) {
        HalfFlow found = null;
        for (HalfFlow h : list) {
            if (h.sourcePort == port) {
                if (found != null) {
                    return null;
                }
                found = h;
            }
        }
        return found;
    }

    /** Among the QPs of one address: the one other half-flow with {@code h}'s port, if exactly one. */
    private static HalfFlow otherWithPort(List<HalfFlow> list, HalfFlow h) {
        HalfFlow found = null;
        for (HalfFlow g : list) {
            if (g != h && g.sourcePort == h.sourcePort) {
                if (found != null) {
                    return null;
                }
                found = g;
            }
        }
        return found;
    }

    /** How far the responses of one direction are from the requests of the other; MAX_VALUE if unrelated. */
    private static long psnDistance(HalfFlow a, HalfFlow b) {
        long best = Long.MAX_VALUE;
        if (a.firstRequestPsn >= 0 && b.firstResponsePsn >= 0) {
            best = Math.min(best, Math.abs(Psn.compare(b.firstResponsePsn, a.firstRequestPsn) >> 8));
        }
        if (b.firstRequestPsn >= 0 && a.firstResponsePsn >= 0) {
            best = Math.min(best, Math.abs(Psn.compare(a.firstResponsePsn, b.firstRequestPsn) >> 8));
        }
        return best;
    }

    private static void link(HalfFlow a, HalfFlow b) {
        a.peer = b;
        b.peer = a;
    }

    private static String addressPair(InetAddress a, InetAddress b) {
        byte[] x = a.getAddress();
        byte[] y = b.getAddress();
        return Arrays.compare(x, y) <= 0 ? IpText.of(a) + "|" + IpText.of(b)
                : IpText.of(b) + "|" + IpText.of(a);
    }
}
