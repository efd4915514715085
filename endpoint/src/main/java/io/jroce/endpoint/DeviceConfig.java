package io.jroce.endpoint;

import java.net.InetAddress;
import java.nio.file.Path;

/** How a {@link Device} is opened. */
public final class DeviceConfig {
    final InetAddress address;
    int port = io.jroce.wire.RoceV2.UDP_PORT;
    Clock clock = Clock.SYSTEM;
    int maxUnackedPsns = 128;
    long tailProbeNanos = 1_000_000;
    Path pcap;
    boolean preferEpoll = true;
    int socketBufferBytes = 4 << 20;
    DatagramFilter filter;
    boolean warmUp = !"false".equals(System.getProperty("jroce.warmup"));
    boolean gso = "true".equals(System.getProperty("jroce.gso"));
    long busyPollNanos;
    boolean ecn;
    boolean gro = "true".equals(System.getProperty("jroce.gro"));
    /**
     * With epoll, the socket is read by {@link DirectReceive} (no object per datagram) rather than by Netty's
     * channel; the system property {@code jroce.directReceive=false} leaves it to Netty (for comparison).
     */
    boolean directReceive = !"false".equals(System.getProperty("jroce.directReceive"));
    /**
     * With epoll, packets leave with their payload gathered from the registered memory ({@link GatherSend}) rather
     * than copied into the packet buffer; the system property {@code jroce.zeroCopy=false} turns it off (for
     * comparison).
     */
    boolean zeroCopy = !"false".equals(System.getProperty("jroce.zeroCopy"));
    /** How long the warm-up may take (tests shorten it to cut a warm-up short). */
    long warmUpBudgetNanos = Warmup.BUDGET_NANOS;
    Mtu portMtu = Mtu.MTU_1024;
    int eventLoops = 1;
    /**
     * With several event loops, the kernel steers each datagram to its QP's loop ({@link ShardSteering}); the system
     * property {@code jroce.steer=false} turns that off, so that loops hand datagrams over (to measure the hand-off).
     */
    boolean steer = !"false".equals(System.getProperty(ShardSteering.PROPERTY));
    /** The default comes from the system property {@code jroce.agent} ({@code invoked} or {@code dedicated}). */
    AgentMode agentMode = "invoked".equalsIgnoreCase(System.getProperty("jroce.agent")) ? AgentMode.INVOKED : AgentMode.DEDICATED;
    AccessList access = AccessList.ALL;

    public DeviceConfig(InetAddress address) {
        if (address == null || address.isAnyLocalAddress()) {
            throw new IllegalArgumentException("bind a device to one IPv4 or IPv6 address (its GID), not a wildcard");
        }
        if (address.isMulticastAddress()) {
            throw new IllegalArgumentException("bind a device to a unicast address, not " + address.getHostAddress());
        }
        if (address instanceof java.net.Inet6Address a6 && a6.isLinkLocalAddress() && a6.getScopeId() == 0) {
            throw new IllegalArgumentException("the link-local address " + io.jroce.wire.IpText.of(address)
                    + " needs its interface, e.g. fe80::1%eth0");
        }
        this.address = address;
    }

    public DeviceConfig port(int v) { port = v; return this; }
    /**
     * The networks the device accepts RoCE datagrams from (CM MADs included); datagrams from elsewhere are dropped
     * before anything else looks at them and counted ({@link DropReason#NOT_ALLOWED}). Default
     * {@link AccessList#ALL}: any host that reaches the UDP port may send to any QP whose number it guesses. The
     * device's own address is always allowed.
     */
    public DeviceConfig allow(AccessList v) {
        if (v == null) throw new IllegalArgumentException("give AccessList.ALL to allow every source");
        access = v.with(address);
        return this;
    }
    public AccessList allow() { return access; }
    public DeviceConfig clock(Clock v) { clock = v; return this; }
    /** Most PSNs a QP may have unacknowledged (rdma_rxe: 128). */
    public DeviceConfig maxUnackedPsns(int v) {
        if (v < 1 || v > (1 << 22)) throw new IllegalArgumentException("window must be 1..4194304 PSNs");
        maxUnackedPsns = v;
        return this;
    }
    /**
     * Tail-loss probe: when a QP has heard nothing for this long with packets outstanding, it resends its
     * oldest unacknowledged packet with AckReq (no rewind, not counted as a retry), so a lost NAK or a lost
     * retransmission costs a round trip instead of the local ACK timeout. The interval doubles while nothing
     * is heard. 0 turns probing off (pure IBA behaviour: only NAKs and the local ACK timeout). Default 1 ms.
     */
    public DeviceConfig tailProbeMicros(long micros) {
        if (micros < 0) throw new IllegalArgumentException("tail probe interval must be >= 0 us");
        tailProbeNanos = micros * 1000;
        return this;
    }

    /** Record every datagram sent and received to this pcap file. */
    public DeviceConfig pcap(Path v) { pcap = v; return this; }
    /** Use Java NIO instead of the epoll native transport (the ICRC then depends on the kernel's IPv4 ID). */
    public DeviceConfig preferEpoll(boolean v) { preferEpoll = v; return this; }
    public DeviceConfig socketBufferBytes(int v) { socketBufferBytes = v; return this; }
    /** A filter at the head of the pipeline (fault injection), seeing datagrams in both directions. */
    public DeviceConfig filter(DatagramFilter v) { filter = v; return this; }

    /**
     * Run the data path once over the device's own socket before {@link Device#open} returns (default on):
     * a cold JVM's first packets otherwise take tens of milliseconds, which a peer's ACK timer can notice.
     * The warm-up is invisible afterwards: counters zeroed, nothing in the pcap, the filter not yet attached.
     * The default comes from the system property {@code jroce.warmup} ({@code false} turns it off).
     */
    public DeviceConfig warmUp(boolean v) { warmUp = v; return this; }

    /**
     * The port's active MTU ({@code ibv_port_attr.active_mtu}): the largest UD message and the largest RC path
     * MTU a peer should choose. Default 1024, what rdma_rxe reports over a 1500-byte Ethernet
     * (rxe_net.c / rxe.c rxe_set_mtu: the Ethernet MTU less the RoCE headers, rounded down to an IB MTU).
     */
    public DeviceConfig portMtu(Mtu v) {
        if (v == null) throw new IllegalArgumentException("port MTU must be 256, 512, 1024, 2048 or 4096");
        portMtu = v;
        return this;
    }

    public Mtu portMtu() { return portMtu; }

    /**
     * UDP GSO on send (default off; the system property {@code jroce.gso=true} turns it on): runs of
     * equal-length packets to one peer QP within a flush batch leave as one {@code UDP_SEGMENT} write that the
     * kernel cuts into one datagram per packet, each with its own ICRC (IPv4: computed for the ID k that
     * segment k gets). With gathered send ({@link #zeroCopy}) the run's payload goes from the registered memory
     * into the kernel's one buffer, without a copy in user space. Needs the epoll transport; not used while a
     * {@link #filter} is installed. Off by default because what a capture on the sending host sees (on {@code lo},
     * a veth, a bridge) and what a queueing qdisc or a firewall rule takes as one packet is then the whole run: a
     * {@code tbf} bottleneck dropped them 15 packets at a time and a 1 MiB WRITE flow fell from 0.83 Gbit/s to
     * about 0.01 (docs/reports/performance.md).
     */
    public DeviceConfig gso(boolean v) { gso = v; return this; }

    /**
     * Gathered send (default on; the system property {@code jroce.zeroCopy=false} turns it off): with epoll and
     * without a datagram filter or GSO, a packet's payload goes from the registered memory to the socket as a piece
     * of the datagram ({@code sendmmsg} iovecs) instead of being copied into the packet buffer first. The bytes on
     * the wire are the same.
     */
    public DeviceConfig zeroCopy(boolean v) { zeroCopy = v; return this; }

    /**
     * Busy-poll mode for latency (default 0, off): after its last datagram or task the event loop keeps polling
     * the socket without sleeping for this long, and a {@link CompletionQueue#poll(WorkCompletion[], int, long,
     * java.util.concurrent.TimeUnit) waiting poll} spins at least as long before it parks, so no hop of a round trip waits
     * for a sleeping thread to be woken. Both yield between polls. It costs a core per busy thread while traffic
     * flows; an idle device still sleeps. Needs the epoll transport for the event loop (with NIO only the
     * completion queues spin).
     */
    public DeviceConfig busyPollMicros(long micros) {
        if (micros < 0 || micros > 1_000_000) throw new IllegalArgumentException("busy-poll time must be 0..1000000 us, not " + micros);
        busyPollNanos = micros * 1000;
        return this;
    }

    /** The busy-poll time in microseconds (0: off). */
    public long busyPollMicros() { return busyPollNanos / 1000; }

    /**
     * ECN-capable transport (default off): every datagram leaves with the ECN field ECT(0) (IPv4 TOS / IPv6
     * traffic class 0x02, RFC 3168), so a congested switch marks it CE instead of dropping it and a receiver that
     * is a DCQCN notification point (a RoCE NIC) answers with a CNP, which the requester acts on (DCQCN reaction
     * point, RoCEv2 annex A17.9). Off by default because a peer that does not send CNPs (rdma_rxe, a jroce peer:
     * Netty's UDP socket does not deliver the received ECN field) would turn the switch's congestion signal into
     * nothing, where a drop is at least seen. The ICRC masks the field (IBA A17.4.1), so it changes no ICRC. The
     * socket sets it for all datagrams (the kernel writes it; Netty has no per-datagram control), ACKs included.
     */
    public DeviceConfig ecn(boolean v) { ecn = v; return this; }

    /**
     * Event loops (shards) the device runs, 1..64 (default 1: one loop owns the socket and every QP). With N &gt; 1
     * each loop has its own UDP socket bound to the device's address and port with {@code SO_REUSEPORT} (epoll
     * only: with NIO the device runs one loop), and each QP belongs to one loop (QP 1 to the first, others by QP
     * number modulo N), which runs all its transport work. A classic BPF program on the sockets' reuseport group
     * has the kernel deliver each datagram to the socket of its destination QP's loop ({@link Device#isShardSteered});
     * where that is refused, the kernel spreads datagrams over the sockets by a hash of addresses and ports and a
     * loop that reads a datagram for another loop's QP hands it over (counter {@code shard_handoffs}). A
     * {@link #filter} must then be {@code @Sharable}: it sits on every socket.
     */
    public DeviceConfig eventLoops(int v) {
        if (v < 1 || v > Shards.MAX) throw new IllegalArgumentException("event loops must be 1.." + Shards.MAX + ", not " + v);
        eventLoops = v;
        return this;
    }

    public int eventLoops() { return eventLoops; }

    /** Steering of datagrams to their QP's loop on or off (default on, or as {@code jroce.steer} says; tests of the hand-off path). */
    DeviceConfig steer(boolean v) { steer = v; return this; }

    /**
     * UDP GRO on receive instead of {@code recvmmsg} (default off; the system property {@code jroce.gro=true}
     * turns it on): the socket gets {@code UDP_GRO} and reads one datagram per {@code recvmsg} into a 64 KiB
     * buffer, where the kernel may hand over a run of equal-size datagrams from one sender as one coalesced
     * datagram (on loopback: a UDP GSO send arrives whole); each of its segments is then processed as its own
     * RoCE packet, its IPv4 ID solved from its ICRC. Not combined with {@code recvmmsg}: Netty 4.2.18's
     * {@code recvmmsg} passes no control buffer, so a coalesced read would lose its segment size and arrive as
     * one glued datagram (netty/netty#17492, fixed after 4.2.18). Needs the epoll transport. Off by default: see docs/reports/performance.md, "GRO or
     * recvmmsg on receive".
     */
    public DeviceConfig gro(boolean v) { gro = v; return this; }

    /**
     * Which thread runs the device (default {@link AgentMode#DEDICATED}, a thread of its own).
     * {@link AgentMode#INVOKED}: the threads that poll its completion queues and post to its queue pairs run it,
     * so a round trip crosses no thread boundary in this process; a standby thread runs it while none does. A
     * device with several {@link #eventLoops} always runs them on threads of their own.
     */
    public DeviceConfig agentMode(AgentMode v) {
        if (v == null) throw new IllegalArgumentException("agent mode must be DEDICATED or INVOKED");
        agentMode = v;
        return this;
    }

    public AgentMode agentMode() { return agentMode; }

    long standbyAfterNanos = DeviceAgent.STANDBY_AFTER_NANOS;

    /**
     * An {@link AgentMode#INVOKED invoked} device's standby thread runs it after this long without a cycle run by
     * an application thread (default 1000 us): the longest an unpolled device leaves a datagram unread, a timer
     * unfired or an acknowledgement unsent. 1..60,000,000 us.
     */
    public DeviceConfig standbyAfterMicros(long micros) {
        if (micros < 1 || micros > 60_000_000) throw new IllegalArgumentException("standby delay must be 1..60000000 us, not " + micros);
        standbyAfterNanos = micros * 1000;
        return this;
    }

    public InetAddress address() { return address; }
    public int port() { return port; }
}
