package io.jroce.cli.cmtools;

import io.jroce.cli.Converters;
import io.jroce.cli.conn.CmAgents;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.cm.CmAgent;
import io.jroce.endpoint.cm.CmEvent;
import io.jroce.endpoint.cm.CmEventChannel;
import io.jroce.endpoint.cm.CmId;
import io.jroce.endpoint.cm.CmPortSpace;
import io.jroce.wire.IpText;
import io.jroce.wire.mad.CmRej;
import io.jroce.wire.mad.SidrRep;

import java.io.IOException;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One run of a tool on the connection manager: the device's agent, one event channel for every id (as the C tools
 * use one), the ids to destroy at the end, and the lines that name the events.
 */
final class CmRun implements AutoCloseable {
    /** Slice of every wait, so a deadline is checked while nothing happens. */
    static final Duration SLICE = Duration.ofMillis(20);
    /**
     * How long {@link #close} lets connections finish their release (DREQ answered, timewait: about 2 s with
     * rdma_rxe's values) before the agent closes, as the kernel's CM outlives the process that made them.
     */
    private static final Duration RELEASE_WAIT = Duration.ofSeconds(5);

    final CmAgent agent;
    final CmEventChannel channel = new CmEventChannel();
    private final List<CmId> ids = new ArrayList<>();

    CmRun(Device dev, Mtu mtu) throws IOException {
        this.agent = CmAgents.open(dev, mtu);
    }

    /** rdma_create_id on the run's channel; destroyed by {@link #close}. */
    CmId newId(CmPortSpace ps) {
        return track(CmId.create(agent, channel, null, ps));
    }

    /** An id the run did not create (a CONNECT_REQUEST's), destroyed by {@link #close} too. */
    CmId track(CmId id) {
        ids.add(id);
        return id;
    }

    /** The next event, at most one {@link #SLICE} away; null if none came. */
    CmEvent next() throws InterruptedException {
        return channel.getEvent(SLICE);
    }

    /**
     * The C tools' line for an event that ends a connection attempt ("event: RDMA_CM_EVENT_REJECTED, error: 8"), with
     * what it means in words.
     */
    static String errorLine(CmEvent e, InetAddress peer, int port) {
        return "event: " + CmAgents.eventName(e.type()) + ", error: " + e.status() + " (" + meaning(e, peer, port) + ")";
    }

    private static String meaning(CmEvent e, InetAddress peer, int port) {
        String at = "port " + port + " at " + (peer == null ? "the server" : IpText.of(peer));
        boolean ud = e.id() != null && e.id().portSpace() == CmPortSpace.UDP;
        return switch (e.type()) {
            case REJECTED -> e.status() == 8 ? "REJ " + CmRej.reasonName(8) + ": nothing listens on rdma_cm " + at
                    : "REJ " + CmRej.reasonName(e.status());
            case UNREACHABLE -> {
                if (e.status() == CmEvent.ETIMEDOUT) yield "no answer from " + at + " after the connection manager's retries";
                if (!ud) yield "unreachable";
                yield switch (e.status()) {
                    case SidrRep.UNSUPPORTED -> "SIDR_REP status 1, service ID not supported: nothing listens on UDP-port-space " + at;
                    case SidrRep.REJECT -> "SIDR_REP status 2: the server rejected the request";
                    case SidrRep.NO_QP -> "SIDR_REP status 3: the server has no QP for it";
                    default -> "SIDR_REP status " + e.status();
                };
            }
            case CONNECT_ERROR -> "the peer's REP could not be applied to our queue pair";
            case DISCONNECTED -> "the peer disconnected before the connection was up";
            default -> e.type().name();
        };
    }

    /** The line for a connect phase that ran out of --timeout. */
    static String timeoutLine(int missing, int total, String what, Duration wait) {
        return missing + " of " + total + " connections " + what + " within --timeout " + Converters.seconds(wait);
    }

    /** Destroys every id (newest first), then lets the releases finish before the agent closes. */
    @Override
    public void close() throws InterruptedException {
        CmAgents.close(agent, channel, ids, RELEASE_WAIT);
    }
}
