package io.jroce.cli.perf;

import io.jroce.cli.conn.PeerTimeout;
import io.jroce.cli.Converters;
import io.jroce.cli.DeviceOptions;
import io.jroce.cli.OptionHelp;
import io.jroce.endpoint.AgentMode;
import io.jroce.cli.metrics.MetricsExport;
import io.jroce.cli.Main;
import io.jroce.cli.conn.LocalAddress;
import io.jroce.cli.conn.PeerInfo;
import io.jroce.cli.conn.RcPingpongHandshake;
import io.jroce.endpoint.Access;
import io.jroce.endpoint.AddressHandle;
import io.jroce.endpoint.QpAttr;
import io.jroce.endpoint.QpState;
import io.jroce.endpoint.QpType;
import io.jroce.wire.IpText;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.RcConnect;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * {@code jroce pingpong [HOST]}: ibv_rc_pingpong over the jroce endpoint, interoperable with the real tool
 * (rdma-core libibverbs/examples/rc_pingpong.c): same options, same TCP exchange
 * ({@link RcPingpongHandshake}), same QP attributes, same traffic (strict SEND ping-pong, client first, one
 * buffer filled with 0x7b that receives and sends alike), same output lines.
 *
 * <p>{@code --ud}: ibv_ud_pingpong instead (libibverbs/examples/ud_pingpong.c): the same TCP exchange (its
 * server reads the client's {@code "done"} as rc_pingpong's does), a UD QP with Q_Key 0x11111111 taken to RTS
 * with only its send PSN, an address handle to the peer's GID, and a buffer of size + 40 bytes: receives take
 * all of it (the 40-byte GRH area first), sends go from byte 40. A UD message is one packet, so the size may
 * not exceed the port MTU ({@code -m}, else the interface's, as rxe's port MTU follows its netdev: 4096 on a
 * 9000-byte or loopback link, 1024 on 1500-byte Ethernet; ud_pingpong refuses the same way, "Requested size larger
 * than port MTU"). The default size is ud_pingpong's, 2048.
 */
@Command(name = "pingpong",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "RC SEND ping-pong compatible with ibv_rc_pingpong. Without HOST: server (waits for one client on TCP -p); "
                    + "with HOST: client (connects to HOST, sends first). With --ud: UD SEND ping-pong compatible with ibv_ud_pingpong.",
            "Peers on rxe need '-g <index of their IPv4 GID>', e.g. 'ibv_rc_pingpong -d rxe0 -g 1'.",
            "Exit status: 0 on success, 1 on a failure at run time (the peer did not answer within --timeout, a completion error), "
                    + "2 on bad usage or an argument that cannot be used (an address not of this machine, a port in use, a file that cannot be written)."
        })
public final class PingpongCommand implements Callable<Integer>, OptionHelp {
    static final int PAGE_SIZE = 4096;
    private static final long RECV_WRID = 1;
    private static final long SEND_WRID = 2;
    /** ud_pingpong.c's Q_Key, on both QPs and in every send. */
    static final int UD_QKEY = 0x11111111;
    /** The GRH area before a UD receive's payload. */
    static final int GRH = 40;

    @Spec
    CommandSpec spec;

    @Parameters(index = "0", arity = "0..1", paramLabel = "HOST", description = "Server to connect to (client mode). Without it: server mode.")
    String host;

    @Option(names = {"-p", "--port"}, paramLabel = "PORT", defaultValue = "18515", description = "TCP port of the address exchange (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = {"-s", "--size"}, paramLabel = "BYTES", converter = Converters.Size.class,
            description = "Message size, e.g. 4096 or 4k (default: 4096; with --ud 2048, at most the port MTU).")
    Long size;

    @Option(names = "--ud", description = "Unreliable datagram, as ibv_ud_pingpong (Q_Key 0x11111111, receive buffers of size + 40 for the GRH); "
            + "the port MTU, which bounds -s, is -m or else the interface's (as rxe's).")
    boolean ud;

    @Option(names = {"-n", "--iters"}, paramLabel = "N", defaultValue = "1000", description = "Number of exchanges (default: ${DEFAULT-VALUE}).")
    long iters;

    @Option(names = {"-r", "--rx-depth"}, paramLabel = "N", defaultValue = "500", description = "Receives posted in advance (default: ${DEFAULT-VALUE}).")
    int rxDepth;

    @Option(names = {"-g", "--gid-idx"}, paramLabel = "INDEX", description = "Local GID index; ours has one entry, 0 (the --bind address).")
    Integer gidIndex;

    @Option(names = {"-l", "--sl"}, paramLabel = "SL", defaultValue = "0", description = "Service level (accepted and ignored; default: ${DEFAULT-VALUE}).")
    int sl;

    @Option(names = {"-c", "--chk"}, description = "Validate the received buffer (client): byte 0 of every 4096-byte page is zeroed before the first send, "
            + "and every byte must come back as sent (ibv_rc_pingpong checks byte 0 of each page); with --ud the payload after the 40-byte GRH area, "
            + "and the GRH's source address must be the server's.")
    boolean check;

    @Mixin
    IbDevice ibDevice = new IbDevice();

    @Mixin
    io.jroce.cli.Verbosity verbosity = new io.jroce.cli.Verbosity();

    @Mixin
    PeerWaits waits = new PeerWaits();

    @Mixin
    OobOptions oob = new OobOptions();

    @Mixin
    DeviceOptions device = new DeviceOptions();


    private PrintWriter out;

    @Override
    public Map<String, String> optionHelp() {
        return Map.of(
                "--bind", DeviceOptions.BIND_HELP + OobOptions.BIND_HELP,
                "--mtu", DeviceOptions.MTU_HELP + " Default: 1024, as ibv_rc_pingpong; with --ud the interface's MTU less the RoCE "
                        + "headers (the port MTU, as rdma_rxe takes it).",
                "--tail-probe", DeviceOptions.TAIL_PROBE_HELP + DeviceOptions.TAIL_PROBE_OFF,
                "--agent", DeviceOptions.AGENT_HELP + " Default: invoked (each side polls for every message, so its thread runs "
                        + "the device).",
                "--busy-poll", DeviceOptions.BUSY_POLL_HELP + " Default: " + DeviceOptions.BUSY_POLL_LATENCY + ".");
    }

    @Override
    public Integer call() throws Exception {
        verbosity.apply();
        out = spec.commandLine().getOut();
        Params p = validate();
        InetAddress peerHost = host == null ? null : DeviceOptions.address(spec, host, "HOST");
        InetAddress local = device.bind(spec);
        if (local == null) {
            if (peerHost == null) throw new ParameterException(spec.commandLine(), "a server needs --bind ADDR (the local IPv4 or IPv6 address of its RoCE device)");
            local = DeviceOptions.sourceTowards(spec, peerHost, "HOST", "--bind");
        }
        if (peerHost != null) peerHost = oob.host(spec, local, peerHost);
        DeviceOptions.checkLocal(spec, local);
        if (peerHost == null) oob.checkListen(spec, local, port);
        ibDevice.note(spec.commandLine().getErr(), "pingpong", local);
        if (p.mtu == null) {
            Mtu m = LocalAddress.activeMtu(local);
            checkUdSize(p.size, m);
            p = new Params(p.size, p.iters, m, p.rxDepth);
        }
        InetAddress oobLocal = oob.local(spec);
        try (Device dev = DeviceOptions.open(spec, device.forLatency(device.config(spec, local, AgentMode.INVOKED)).portMtu(p.mtu));
             MetricsExport exported = device.exportMetrics(spec, dev)) {
            try {
                int rc;
                try {
                    rc = run(dev, peerHost, oobLocal, local, p, waits.timeout);
                } catch (PeerTimeout e) {
                    throw waits.named(e);
                } catch (java.net.BindException e) {
                    throw new ParameterException(spec.commandLine(), e.getMessage(), e); // -p in use, as a bad argument
                }
                device.report(spec.commandLine().getErr(), dev);
                return rc;
            } finally {
                device.printCounters(spec.commandLine().getErr(), dev);
            }
        }
    }


    private record Params(int size, int iters, Mtu mtu, int rxDepth) {
    }

    private void checkUdSize(long size, Mtu mtu) {
        if (size > mtu.bytes()) {
            throw new ParameterException(spec.commandLine(), "invalid -s/--size " + size + " with --ud: a UD message is one packet, at most the port MTU "
                    + mtu.bytes() + " (-m, or the interface's MTU less the RoCE headers; ud_pingpong refuses the same: \"Requested size larger than port MTU\")");
        }
    }

    private Params validate() {
        if (port < 1 || port > 65535) throw new ParameterException(spec.commandLine(), "invalid -p/--port " + port + ": must be 1..65535");
        long size = this.size != null ? this.size : ud ? 2048 : 4096;
        if (size < 1 || size > (1 << 30)) throw new ParameterException(spec.commandLine(), "invalid -s/--size " + size + ": must be 1..1073741824");
        // UD without -m: the port MTU comes from the interface, as rxe's does (known once the local address is)
        Mtu mtu = ud ? device.mtu(null) : device.mtu(Mtu.MTU_1024);
        if (ud && mtu != null) checkUdSize(size, mtu);
        if (iters < 1 || iters > Integer.MAX_VALUE) throw new ParameterException(spec.commandLine(), "invalid -n/--iters " + iters + ": must be 1..2147483647");
        if (rxDepth < 2 || rxDepth > 65536) throw new ParameterException(spec.commandLine(), "invalid -r/--rx-depth " + rxDepth + ": must be 2..65536");
        if (gidIndex != null && gidIndex != 0) {
            throw new ParameterException(spec.commandLine(), "invalid -g/--gid-idx " + gidIndex + ": our GID table has one entry, index 0 "
                    + "(the --bind address); the peer's -g (1 on rxe) is its own index");
        }
        waits.check(spec);
        ibDevice.check(spec);
        return new Params((int) size, (int) iters, mtu, rxDepth);
    }

    private int run(Device dev, InetAddress peerHost, InetAddress oobLocal, InetAddress local, Params p, Duration timeout) throws IOException, InterruptedException {
        boolean client = peerHost != null;
        ProtectionDomain pd = dev.allocPd();
        // as rc_pingpong.c / ud_pingpong.c pp_init_ctx: the region local write only (UD: size + 40 for the GRH),
        // the QP no remote access (SEND/RECV only)
        int bufLen = ud ? p.size + GRH : p.size;
        MemoryRegion mr = pd.allocateAndRegister(bufLen, Access.LOCAL_WRITE);
        ByteBuffer buf = mr.buffer();
        for (int i = 0; i < bufLen; i++) buf.put(i, (byte) 0x7b);
        CompletionQueue cq = dev.createCq(p.rxDepth + 2);
        // ibv_rc_pingpong uses max_send_wr 1; one spare slot, defensively (see PerfRun.createResources)
        QpInitAttr init = new QpInitAttr(cq).maxSendWr(2).maxRecvWr(p.rxDepth);
        QueuePair qp = pd.createQp(ud ? init.qpType(QpType.UD) : init);
        RcConnect.Params params = RcConnect.Params.defaults().mtu(p.mtu).accessFlags(0).timeout(waits.qpTimeout);
        if (ud) {
            qp.modify(new QpAttr().state(QpState.INIT).pkeyIndex(0).port(1).qkey(UD_QKEY));
        } else {
            RcConnect.toInit(qp, params);
        }
        int routs = postRecv(qp, mr, p.rxDepth);

        int psn = ThreadLocalRandom.current().nextInt(1 << 24);
        PeerInfo me = new PeerInfo(qp.qpNum(), psn, dev.gid(0));
        // ud_pingpong.c prints ": GID" on its local line, ", GID" on the remote one
        out.printf("  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x%s GID %s%n", me.lid(), me.qpn(), me.psn(), ud ? ":" : ",", me.gid());
        out.flush();

        AddressHandle[] ah = new AddressHandle[1];
        RcPingpongHandshake.BeforeReply connect = r -> {
            RcPingpongHandshake.requireRoutable(r, me.gid());
            if (ud) {
                // ud_pingpong.c pp_connect_ctx: RTR with the state alone, RTS with the send PSN, then the AH
                qp.modify(new QpAttr().state(QpState.RTR));
                qp.modify(new QpAttr().state(QpState.RTS).sqPsn(psn));
                ah[0] = pd.createAh(DeviceOptions.peerFor(spec, local, r.gid().toInetAddress(), "the peer's GID"));
            } else {
                RcConnect.connect(qp, r.rcPeer(), psn, params);
            }
        };
        PeerInfo remote;
        if (client) {
            remote = RcPingpongHandshake.client(peerHost, port, oobLocal, me, timeout);
        } else {
            remote = RcPingpongHandshake.server(oobLocal != null ? oobLocal : local, port, me, waits.clientWait(), timeout, connect);
        }
        out.printf("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s%n", remote.lid(), remote.qpn(), remote.psn(), remote.gid());
        out.flush();
        if (client) connect.accept(remote);

        SendWorkRequest send = ud
                ? new SendWorkRequest(SEND_WRID, WrOpcode.SEND, new Sge(mr.address() + GRH, p.size, mr.lkey())).ud(ah[0], remote.qpn(), UD_QKEY).signaled()
                : new SendWorkRequest(SEND_WRID, WrOpcode.SEND, new Sge(mr.address(), p.size, mr.lkey())).signaled();
        long pending = RECV_WRID;
        if (client) {
            if (check) {
                int from = ud ? GRH : 0;
                for (int i = 0; i < p.size; i += PAGE_SIZE) buf.put(from + i, (byte) 0);
            }
            qp.postSend(send);
            pending |= SEND_WRID;
        }
        long start = System.nanoTime();
        long timeoutNanos = timeout.toNanos();
        WorkCompletion[] wcs = {new WorkCompletion(), new WorkCompletion()};
        long rcnt = 0;
        long scnt = 0;
        while (rcnt < p.iters || scnt < p.iters) {
            int n = cq.poll(wcs, 2, timeoutNanos, TimeUnit.NANOSECONDS);
            if (n == 0) {
                throw new PeerTimeout("no completion within " + Converters.seconds(timeout) + " after " + scnt + " sends and " + rcnt
                        + " receives: the peer stopped or its packets do not reach us (check its output and --bind); QP "
                        + qp.describe());
            }
            for (int i = 0; i < n; i++) {
                WorkCompletion wc = wcs[i];
                if (!wc.ok()) {
                    throw new IOException(String.format("Failed status %s (%d) for wr_id %d%s", wc.status(), wc.status().ibvValue(),
                            wc.wrId(), qp.errorReason() == null ? "" : " (" + qp.errorReason() + ")"));
                }
                if (wc.wrId() == SEND_WRID) {
                    scnt++;
                } else if (wc.wrId() == RECV_WRID) {
                    if (--routs <= 1) {
                        routs += postRecv(qp, mr, p.rxDepth - routs);
                    }
                    rcnt++;
                } else {
                    throw new IOException("Completion for unknown wr_id " + wc.wrId());
                }
                pending &= ~wc.wrId();
                if (scnt < p.iters && pending == 0) {
                    qp.postSend(send);
                    pending = RECV_WRID | SEND_WRID;
                }
            }
        }
        long end = System.nanoTime();
        double usec = (end - start) / 1000.0;
        long bytes = (long) p.size * p.iters * 2;
        out.printf("%d bytes in %.2f seconds = %.2f Mbit/sec%n", bytes, usec / 1_000_000.0, bytes * 8.0 / usec);
        out.printf("%d iters in %.2f seconds = %.2f usec/iter%n", p.iters, usec / 1_000_000.0, usec / p.iters);
        int bad = 0;
        if (client && check) {
            int base = ud ? GRH : 0;
            for (int page = 0; page * (long) PAGE_SIZE < p.size; page++) {
                int from = base + page * PAGE_SIZE;
                int to = base + (int) Math.min(p.size, page * (long) PAGE_SIZE + PAGE_SIZE);
                boolean ok = buf.get(from) == 0;
                for (int i = from + 1; i < to && ok; i++) ok = buf.get(i) == (byte) 0x7b;
                if (!ok) {
                    out.printf("invalid data in page %d%n", page);
                    bad++;
                }
            }
            if (ud && !grhSourceIs(buf, peerHost)) {
                out.printf("invalid GRH: the source address is not %s%n", IpText.of(peerHost));
                bad++;
            }
        }
        out.flush();
        if (bad > 0) {
            spec.commandLine().getErr().println("jroce pingpong: " + bad + " page(s) of the received buffer differ from what was sent");
            spec.commandLine().getErr().flush();
            return Main.EXIT_FAILURE;
        }
        return 0;
    }

    /** The source address in a UD receive's GRH area: IPv4 at bytes 32..35 (after 20 zero bytes), IPv6 at 8..23. */
    private static boolean grhSourceIs(ByteBuffer buf, InetAddress peer) {
        byte[] want = peer.getAddress();
        int at = want.length == 4 ? 32 : 8;
        for (int i = 0; i < want.length; i++) {
            if (buf.get(at + i) != want[i]) return false;
        }
        return true;
    }

    private static int postRecv(QueuePair qp, MemoryRegion mr, int n) {
        ReceiveWorkRequest wr = new ReceiveWorkRequest(RECV_WRID, new Sge(mr.address(), mr.length(), mr.lkey()));
        for (int i = 0; i < n; i++) qp.postRecv(wr);
        return n;
    }
}
