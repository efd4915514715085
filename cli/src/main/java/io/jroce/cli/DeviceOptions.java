package io.jroce.cli;

import io.jroce.cli.conn.OobListener;
import io.jroce.cli.metrics.MetricsExport;
import io.jroce.cli.metrics.MetricsOptions;
import io.jroce.endpoint.AccessList;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.AgentMode;
import io.jroce.endpoint.DeviceConfig;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.fault.FaultInjector;
import io.jroce.wire.IpText;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

import java.io.PrintWriter;
import java.net.DatagramSocket;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The options of the commands that open one RoCE device ({@code perf}, {@code pingpong}, {@code rping}, {@code node}): its
 * address, path MTU, capture, fault injection, tail-loss probe and counters. Each command decides what an
 * absent --bind or --mtu means ({@link #bind}, {@link #mtu}).
 */
public final class DeviceOptions {
    /** What --bind means for every command; each command adds when it is required ({@link OptionHelp}). */
    public static final String BIND_HELP = "Local IPv4 or IPv6 address of our RoCE device (fd00::1, ::1, fe80::1%%eth0; brackets "
            + "optional): it binds UDP 4791 there and it becomes our GID (IPv4: its ::ffff:a.b.c.d form).";
    /** --mtu's values; each command adds its default. */
    public static final String MTU_HELP = "Path MTU: 256, 512, 1024, 2048 or 4096.";
    /** --tail-probe's meaning; each command adds its default. */
    public static final String TAIL_PROBE_HELP = "Tail-loss probe interval of our requester in microseconds: when the "
            + "last packet of a message goes unanswered that long, it is sent again. 0 turns the probe off.";
    /**
     * The default of --tail-probe for a command whose peer is usually rdma_rxe or a NIC: off, and why.
     */
    public static final String TAIL_PROBE_OFF = " Default: 0 (off), because the peer is usually rdma_rxe or a NIC on an "
            + "unknown round trip: against rxe under QEMU (10-50 ms round trips) a 1 ms probe resent the head packet of nearly "
            + "every message, which rxe counts as duplicate_request. rxe and NICs recover from loss by sequence NAK or the local "
            + "ACK timeout; pass e.g. 1000 on a fast lossy path.";

    @Option(names = "--bind", paramLabel = "ADDR", description = BIND_HELP)
    String bind;

    @Option(names = "--allow", paramLabel = "CIDR[,CIDR...]", description = "Accept RoCE datagrams (CM requests included) and TCP "
            + "exchanges only from these networks, e.g. 10.0.0.0/8,fd00::/8 (a bare address is one host); anything else is dropped "
            + "before it touches a QP, counted (drop_not_allowed) and logged at most once a minute per source. Default: all, as "
            + "plain RoCE, which relies on an isolated network: on a shared one, any host that reaches UDP 4791 can send to a QP "
            + "whose number it guesses and any host that reaches the TCP port can take a server's connection.")
    String allow;

    @Option(names = {"-m", "--mtu"}, paramLabel = "BYTES", converter = Converters.PathMtu.class, description = MTU_HELP)
    Mtu mtu;

    /** The --chaos text of every command that injects faults into its device (demo's too). */
    public static final String CHAOS_HELP = "Inject faults into our device's datagrams, both directions, e.g. "
            + "drop=0.01,reorder=0.01,dup=0.001,corrupt=0.001,seed=42. Keys: drop, dup, reorder, delay, corrupt (each a "
            + "probability 0..1; per direction they add up to at most 1), delay_us (default 1000), reorder_depth (default 3), "
            + "reorder_timeout_us (default 1000), each optionally prefixed in. or out. for one direction; seed (default: random, "
            + "printed so that a run can be replayed); rule=ACTION/MATCH/... for a targeted fault, tried before the random ones, "
            + "e.g. out.rule=drop/nak:seq/always (drop every PSN sequence error NAK we send) or "
            + "out.rule=rewrite:12:61/nak:acc/always (write 0x61 at byte 12, keeping the ICRC valid: every remote access error "
            + "NAK we send says invalid request); actions drop, dup, corrupt, reorder, pass, delay[:us], rewrite:OFFSET:HEX; "
            + "matches op:NAME[+NAME], psn:N, qp:N, ack, rnr, nak[:seq|inv|acc|op|rd|N], syndrome:V:M, nth:N, every:N, "
            + "times:N, once (the default), always. Off by default.";

    @Option(names = "--chaos", paramLabel = "SPEC", description = CHAOS_HELP)
    String chaosSpec;

    @Option(names = "--pcap", paramLabel = "FILE", description = "Record every RoCE datagram our device sends and receives to this "
            + "pcap file (replaced if it exists; 'jroce inspect FILE' or Wireshark reads it).")
    Path pcap;

    @Option(names = "--tail-probe", paramLabel = "MICROS", description = TAIL_PROBE_HELP)
    Long tailProbeMicros;

    @Option(names = "--counters", description = "Print the device's counters (packets, retransmits, drop_<reason> incl. drop_icrc) "
            + "on stderr when the run ends, also after a failure: one line 'counters device ADDR: name=value ...'.")
    boolean counters;

    @Option(names = "--gso", negatable = true, description = "UDP GSO on send (default off; also -Djroce.gso=true): a run of "
            + "equal-size packets to one peer QP leaves as one UDP_SEGMENT write, its payload straight from registered memory, that "
            + "the kernel cuts into one datagram per packet, each with its own ICRC; the peer receives the same datagrams, but a "
            + "capture on this host (lo, a veth) and a queueing bottleneck see each run as one. --no-gso (the default) sends every "
            + "packet as its own datagram in the batch. Not used together with --chaos.")
    Boolean gso;

    /**
     * The busy-poll time of a latency test on a dedicated device when --busy-poll is absent. Such a device's event
     * loop would otherwise sleep between packets, and each hop of a round trip would wait for it to be woken (two
     * wake-ups per hop: the datagram's and the application's doorbell). It covers a loopback round trip with its
     * tail, also where the spinning threads outnumber the cores and one is descheduled in between, so the loop is
     * still polling when the answer comes; an idle device sleeps after it as before.
     */
    public static final long LATENCY_BUSY_POLL_MICROS = 1000;

    /** --busy-poll's help without its default, which each command gives. */
    public static final String BUSY_POLL_HELP = "Busy-poll mode for latency: after its "
            + "last packet the event loop polls the socket without sleeping for MICROS, and a waiting completion poll spins at least as "
            + "long before it parks, so no hop waits for a thread to be woken. Costs a core per busy thread while traffic flows. 0..1000000.";
    /** A latency test's default --busy-poll, as its help says it. */
    public static final String BUSY_POLL_LATENCY = LATENCY_BUSY_POLL_MICROS + " on a dedicated device "
            + "(--agent dedicated), whose event loop would otherwise sleep between packets and be woken twice per hop; 0 on an "
            + "invoked device, which this side's polling thread runs";

    @Option(names = "--busy-poll", paramLabel = "MICROS", description = BUSY_POLL_HELP + " Default: 0 (off).")
    Long busyPollMicros;

    @Option(names = "--socket-buffer", paramLabel = "BYTES", converter = Converters.Size.class, description = "UDP socket "
            + "buffer size asked for, e.g. 16m (default 4m). The kernel grants at most net.core.rmem_max unless we run with "
            + "CAP_NET_ADMIN; QPs keep no more packets in flight than the granted receive buffer holds (flow control), and a warning "
            + "says when that is below the 128-PSN window. 64k..256m.")
    Long socketBufferBytes;

    @Option(names = "--ecn", description = "Send every datagram ECN-capable (ECT(0)), for a peer that answers CE-marked packets with "
            + "CNPs (a RoCE NIC with DCQCN); our requester slows down on each CNP. Off by default: rdma_rxe and jroce send no CNPs.")
    boolean ecn;
    @Option(names = "--event-loops", paramLabel = "N", description = "Event loops of our device, 1..64 (default 1): each has "
            + "its own UDP socket on the same address and port (SO_REUSEPORT, epoll only) and runs its share of the queue pairs; "
            + "a BPF program on the sockets has the kernel deliver each datagram to its queue pair's loop. Where the kernel refuses "
            + "the program, a datagram given to another loop's socket is handed over (counter shard_handoffs).")
    Integer eventLoops;

    @Option(names = "--gro", negatable = true, description = "UDP GRO on receive instead of recvmmsg (default off; also "
            + "-Djroce.gro=true): the socket reads one datagram per recvmsg into a 64 KiB buffer, where the kernel may deliver a run "
            + "of equal-size datagrams (on loopback: a peer's --gso write) as one; each of its packets is processed on its own.")
    Boolean gro;

    /** What --agent means for every command; each command adds its default. */
    public static final String AGENT_HELP = "Which thread runs our device: 'invoked' (the thread that polls and posts runs it, "
            + "so a round trip crosses no thread boundary; a standby thread runs it while that thread is busy elsewhere) or "
            + "'dedicated' (a thread of its own, to which posts and completions are handed).";

    @Option(names = "--agent", paramLabel = "MODE", description = AGENT_HELP + " Default: dedicated.")
    String agent;

    private FaultInjector chaos;

    /** --bind, checked ({@link #address}), or null when absent: the command says what that means. */
    @Mixin
    MetricsOptions metrics = new MetricsOptions();

    /** {@code --metrics}: serves this device's counters (and --chaos's) until closed; does nothing without it. */
    public MetricsExport exportMetrics(CommandSpec spec, Device dev) {
        return MetricsExport.start(metrics, dev, chaos(spec));
    }

    public InetAddress bind(CommandSpec spec) {
        if (bind == null) return null;
        InetAddress a = address(spec, bind, "--bind");
        if (a instanceof Inet6Address a6 && a6.isLinkLocalAddress() && a6.getScopeId() == 0) {
            throw new ParameterException(spec.commandLine(), "--bind: the link-local address " + bind
                    + " needs its interface, e.g. " + IpText.of(a) + "%eth0");
        }
        return a;
    }

    /**
     * The peer {@code peer} (named by {@code option}) as our device at {@code local} reaches it: of the same IP
     * version (one socket, one family), and a link-local peer without a scope takes {@code local}'s interface.
     */
    public static InetAddress peerFor(CommandSpec spec, InetAddress local, InetAddress peer, String option) {
        boolean local6 = local instanceof Inet6Address;
        boolean peer6 = peer instanceof Inet6Address;
        if (local6 != peer6) {
            throw new ParameterException(spec.commandLine(), option + " " + IpText.of(peer) + " is " + (peer6 ? "IPv6" : "IPv4")
                    + " but our address " + IpText.of(local) + " is " + (local6 ? "IPv6" : "IPv4")
                    + ": both ends of a RoCEv2 connection use the same IP version");
        }
        if (peer instanceof Inet6Address p6 && p6.isLinkLocalAddress() && p6.getScopeId() == 0
                && local instanceof Inet6Address l6 && l6.getScopeId() != 0) {
            try {
                return l6.getScopedInterface() != null ? Inet6Address.getByAddress(null, p6.getAddress(), l6.getScopedInterface())
                        : Inet6Address.getByAddress(null, p6.getAddress(), l6.getScopeId());
            } catch (UnknownHostException e) {
                throw new IllegalStateException(e); // cannot happen: 16 bytes
            }
        }
        return peer;
    }

    /**
     * Opens the device. UDP 4791 already in use on its address is a one-line usage error (exit 2), as every argument
     * that cannot be used is; any other failure to open it is a failure at run time (exit 1).
     */
    public static Device open(CommandSpec spec, DeviceConfig config) throws java.io.IOException {
        try {
            return ExitCleanup.register(Device.open(config));
        } catch (java.io.IOException e) {
            if (String.valueOf(e.getMessage()).contains("in use")) {
                throw new ParameterException(spec.commandLine(), rocePortInUse(config.address(), config.port()), e);
            }
            throw e;
        }
    }

    /** --mtu, or the command's default. */
    public Mtu mtu(Mtu absent) {
        return mtu != null ? mtu : absent;
    }

    /** Whether --chaos was given. */
    public boolean chaosGiven() {
        return chaosSpec != null;
    }

    /** Whether --pcap was given. */
    public boolean pcapGiven() {
        return pcap != null;
    }

    /**
     * The device configuration of {@code perf} and {@code pingpong} for {@code local}: the tail-loss probe off
     * unless --tail-probe, a fault injector only with --chaos (its replay line on stderr).
     */
    public DeviceConfig config(CommandSpec spec, InetAddress local) {
        return config(spec, local, null);
    }

    /** As {@link #config(CommandSpec, InetAddress)}, the device run by {@code defaultAgent} unless --agent says otherwise. */
    public DeviceConfig config(CommandSpec spec, InetAddress local, AgentMode defaultAgent) {
        return config(spec, local, defaultAgent, 0);
    }

    /**
     * As {@link #config(CommandSpec, InetAddress, AgentMode)}, the tail-loss probe at {@code defaultTailProbeMicros}
     * unless --tail-probe says otherwise (a command whose peer is always jroce).
     */
    public DeviceConfig config(CommandSpec spec, InetAddress local, AgentMode defaultAgent, long defaultTailProbeMicros) {
        DeviceConfig config = base(spec, local).tailProbeMicros(tailProbeMicros != null ? tailProbeMicros : defaultTailProbeMicros);
        AgentMode mode = agentMode(spec, defaultAgent);
        if (mode != null) config.agentMode(mode);
        if (chaosSpec != null) {
            config.filter(chaos(spec));
            spec.commandLine().getErr().println("chaos " + chaos.spec() + ": replay with --chaos '" + chaos.spec() + "'");
        }
        return config;
    }

    /**
     * The device configuration of a {@code node} session for {@code local}: the endpoint's tail-loss probe unless
     * --tail-probe, and always a fault injector ({@link #chaos}; a session's {@code chaos} verb changes it later).
     */
    public DeviceConfig sessionConfig(CommandSpec spec, InetAddress local) {
        DeviceConfig config = base(spec, local).filter(chaos(spec));
        AgentMode mode = agentMode(spec, null);
        if (mode != null) config.agentMode(mode);
        if (tailProbeMicros != null) config.tailProbeMicros(tailProbeMicros);
        return config;
    }

    /**
     * {@code config} for a latency test: a dedicated device busy-polls for {@link #LATENCY_BUSY_POLL_MICROS} unless
     * --busy-poll says otherwise; an invoked device is polled by the test's own thread and needs nothing.
     */
    public DeviceConfig forLatency(DeviceConfig config) {
        if (busyPollMicros == null && config.agentMode() == AgentMode.DEDICATED) config.busyPollMicros(LATENCY_BUSY_POLL_MICROS);
        return config;
    }

    /** --agent, checked, or {@code defaultAgent} when it is absent. */
    AgentMode agentMode(CommandSpec spec, AgentMode defaultAgent) {
        if (agent == null) return defaultAgent;
        return switch (agent.toLowerCase(java.util.Locale.ROOT)) {
            case "invoked" -> AgentMode.INVOKED;
            case "dedicated" -> AgentMode.DEDICATED;
            default -> throw new ParameterException(spec.commandLine(), "--agent: must be invoked or dedicated, not '" + agent + "'");
        };
    }

    /** The injector of --chaos (one that does nothing without it); a bad spec is a one-line usage error. */
    public FaultInjector chaos(CommandSpec spec) {
        if (chaos == null) {
            try {
                chaos = FaultInjector.parse(chaosSpec == null ? "" : chaosSpec);
            } catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), "--chaos: " + e.getMessage());
            }
        }
        return chaos;
    }

    /** --allow, parsed (a bad network is a one-line usage error); {@link AccessList#ALL} without it. */
    public AccessList allowed(CommandSpec spec) {
        if (allow == null) return AccessList.ALL;
        try {
            return AccessList.parse(allow);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), "--allow: " + e.getMessage());
        }
    }

    private DeviceConfig base(CommandSpec spec, InetAddress local) {
        DeviceConfig config = new DeviceConfig(local);
        AccessList allowed = allowed(spec);
        config.allow(allowed);
        OobListener.allow(config.allow()); // the TCP exchanges of this process's one device admit the same networks
        if (gso != null) config.gso(gso);
        config.ecn(ecn);
        if (socketBufferBytes != null) {
            if (socketBufferBytes < 65536 || socketBufferBytes > (256 << 20)) {
                throw new ParameterException(spec.commandLine(), "--socket-buffer: must be 64k..256m (65536..268435456 bytes), not "
                        + socketBufferBytes);
            }
            config.socketBufferBytes((int) (long) socketBufferBytes);
        }
        if (busyPollMicros != null) {
            try {
                config.busyPollMicros(busyPollMicros);
            } catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), "--busy-poll: " + e.getMessage());
            }
        }
        if (eventLoops != null) {
            if (eventLoops < 1 || eventLoops > 64) {
                throw new ParameterException(spec.commandLine(), "--event-loops: must be 1..64, not " + eventLoops);
            }
            config.eventLoops(eventLoops);
        }
        if (gro != null) config.gro(gro);
        if (pcap != null) {
            String why = unwritable(pcap);
            if (why != null) throw new ParameterException(spec.commandLine(), "--pcap: " + why);
            config.pcap(pcap);
        }
        return config;
    }

    /**
     * Why a file cannot be written at {@code file} (its directory missing or read-only, the file a directory or
     * read-only), or null when it can: a usage error before the run rather than a failure after it began.
     */
    public static String unwritable(Path file) {
        Path abs = file.toAbsolutePath();
        Path dir = abs.getParent();
        if (Files.isDirectory(abs)) return file + " is a directory";
        if (dir != null && !Files.isDirectory(dir)) return "directory " + dir + " does not exist";
        // try it: permissions alone do not tell (root, read-only mounts, /proc); a file we create is removed again
        boolean existed = Files.exists(abs);
        try {
            java.nio.channels.FileChannel.open(abs, java.nio.file.StandardOpenOption.WRITE, java.nio.file.StandardOpenOption.CREATE).close();
            if (!existed) Files.deleteIfExists(abs);
        } catch (java.nio.file.AccessDeniedException e) {
            return "cannot write " + file + ": permission denied";
        } catch (java.nio.file.FileSystemException e) {
            return "cannot write " + file + ": " + (e.getReason() != null ? e.getReason() : "the file system refuses it");
        } catch (java.io.IOException | UnsupportedOperationException e) {
            return "cannot write " + file + ": " + e.getMessage();
        }
        return null;
    }

    /**
     * {@code --counters}: one line with every device counter, zeros included, so scripts can grep drop_icrc=0, then
     * one line per QP ({@code counters qp 0xN: ...}).
     */
    public void printCounters(PrintWriter err, Device dev) {
        if (!counters) return;
        StringBuilder sb = new StringBuilder("counters device ").append(IpText.of(dev.address())).append(':');
        dev.counters().asMap().forEach((k, v) -> sb.append(' ').append(k).append('=').append(v));
        err.println(sb);
        // then one line per RC/UD QP (not QP 1), in QPN order: retransmission, SACK, window and CNP counters per flow
        dev.queuePairs().stream().filter(qp -> qp.qpNum() > 1).sorted(java.util.Comparator.comparingInt(QueuePair::qpNum)).forEach(qp -> {
            StringBuilder q = new StringBuilder("counters qp 0x").append(Integer.toHexString(qp.qpNum())).append(':');
            qp.counters().asMap().forEach((k, v) -> q.append(' ').append(k).append('=').append(v));
            err.println(q);
        });
        err.flush();
    }

    /** After the run: what the fault injector did and what the device counted (with --chaos). */
    public void report(PrintWriter err, Device dev) {
        if (chaosSpec != null && chaos != null) err.println("chaos: " + chaos.counters() + "\ndevice: " + dev.counters());
    }

    /**
     * An IPv4 or IPv6 address of a device or a peer ({@code option} names it in errors): an IPv6 literal, bare
     * or in brackets, with an optional {@code %scope} ({@link Converters#ip}); otherwise an IPv4 literal or a
     * name, which is resolved. The wildcard and multicast addresses are refused, since the address becomes a
     * GID (for IPv4 its IPv4-mapped form, for IPv6 the address itself).
     */
    public static InetAddress address(CommandSpec spec, String text, String option) {
        InetAddress a;
        if (text.indexOf(':') >= 0 || text.startsWith("[")) {
            try {
                a = Converters.ip(text);
            } catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), option + ": " + e.getMessage());
            }
        } else {
            try {
                a = InetAddress.getByName(text);
            } catch (UnknownHostException e) {
                throw new ParameterException(spec.commandLine(), option + ": cannot resolve '" + text
                        + "': give an IPv4 address such as 127.0.0.1 or an IPv6 address such as fd00::1");
            }
        }
        if (a.isAnyLocalAddress()) {
            throw new ParameterException(spec.commandLine(), option + ": bind one address of this machine (it becomes the node's GID), not " + text);
        }
        if (a.isMulticastAddress()) throw new ParameterException(spec.commandLine(), option + ": " + text + " is a multicast address");
        return a;
    }

    /**
     * A client's own address when the user gave none: the one the kernel routes from towards {@code peer}. When that
     * is {@code peer} itself (a server on this machine, e.g. 127.0.0.1), our device could not share UDP 4791 with the
     * server's: a usage error asking for {@code sourceOption} with another local address.
     */
    public static InetAddress sourceTowards(CommandSpec spec, InetAddress peer, String peerOption, String sourceOption)
            throws java.io.IOException {
        InetAddress local = io.jroce.cli.conn.LocalAddress.towards(peer);
        if (local.equals(peer)) {
            String other = peer.isLoopbackAddress() && !(peer instanceof Inet6Address)
                    ? ", e.g. " + sourceOption + " " + (peer.getAddress()[3] == 2 ? "127.0.0.3" : "127.0.0.2") : "";
            throw new ParameterException(spec.commandLine(), peerOption + " " + IpText.of(peer) + " is this machine's own address, "
                    + "the one the route towards it leaves from, and the server's device holds UDP 4791 there: give our device "
                    + "another local address with " + sourceOption + other);
        }
        return local;
    }

    /** Tries --bind with an ephemeral UDP port: a clear message when the address is not on this machine. */
    public static void checkLocal(CommandSpec spec, InetAddress a) {
        checkLocal(spec, a, "--bind");
    }

    /**
     * Tries {@code a}, given by {@code option}, with an ephemeral UDP port: a usage error (exit 2) when the address
     * is not on this machine, before anything starts. (UDP 4791 in use there is found when the device opens, by
     * {@link #open}, or beforehand by {@link #checkRocePortFree}: a usage error too.)
     */
    public static void checkLocal(CommandSpec spec, InetAddress a, String option) {
        try (DatagramSocket probe = new DatagramSocket(null)) {
            probe.bind(new InetSocketAddress(a, 0));
        } catch (SocketException e) {
            throw new ParameterException(spec.commandLine(), option + ": " + IpText.of(a) + " is not an address of this machine ("
                    + e.getMessage() + "); local IPv4 addresses: " + localAddresses(false) + " (any 127.x.y.z works on Linux loopback); IPv6: "
                    + localAddresses(true));
        }
    }

    /** The message of a device's UDP port taken on {@code a}, the same wherever it is found. */
    public static String rocePortInUse(InetAddress a, int port) {
        return "UDP port " + port + " on " + IpText.of(a) + " is already in use (another jroce device, or rdma_rxe, which binds "
                + "4791 on every address): stop it or give our device another address";
    }

    /**
     * For a command that does not open the device itself (the demo's nodes are child processes): UDP {@code port} on
     * {@code a} already taken is a usage error (exit 2) before anything starts, as {@link #open} makes it for a
     * device this process opens. {@code option} names the argument that gave the address.
     */
    public static void checkRocePortFree(CommandSpec spec, InetAddress a, int port, String option) {
        try (DatagramSocket probe = new DatagramSocket(null)) {
            probe.bind(new InetSocketAddress(a, port));
        } catch (SocketException e) {
            throw new ParameterException(spec.commandLine(), option + ": " + rocePortInUse(a, port));
        }
    }

    /** This machine's IPv4 (with their interfaces) or IPv6 addresses, for the message of {@link #checkLocal}. */
    private static String localAddresses(boolean ipv6) {
        List<String> out = new ArrayList<>();
        try {
            for (NetworkInterface nif : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                for (InetAddress ia : Collections.list(nif.getInetAddresses())) {
                    if ((ia instanceof Inet6Address) == ipv6) out.add(IpText.of(ia) + (ipv6 ? "" : " (" + nif.getName() + ")"));
                }
            }
        } catch (SocketException | RuntimeException e) {
            return "unknown (" + e.getMessage() + ")";
        }
        return out.isEmpty() ? "none" : String.join(", ", out);
    }
}
