package io.jroce.cli.perf;

import io.jroce.cli.Converters;
import io.jroce.cli.DeviceOptions;
import io.jroce.cli.metrics.MetricsExport;
import io.jroce.cli.Main;
import io.jroce.cli.conn.LocalAddress;
import io.jroce.cli.conn.PeerInfo;
import io.jroce.cli.conn.RcPingpongHandshake;
import io.jroce.endpoint.Access;
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
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * {@code jroce pingpong [HOST]}: ibv_rc_pingpong over the jroce endpoint, interoperable with the real tool
 * (rdma-core libibverbs/examples/rc_pingpong.c): same options, same TCP exchange
 * ({@link RcPingpongHandshake}), same QP attributes, same traffic (strict SEND ping-pong, client first, one
 * buffer filled with 0x7b that receives and sends alike), same output lines.
 */
@Command(name = "pingpong",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "RC SEND ping-pong compatible with ibv_rc_pingpong. Without HOST: server (waits for one client on TCP -p); "
                    + "with HOST: client (connects to HOST, sends first).",
            "Peers on rxe need '-g <index of their IPv4 GID>', e.g. 'ibv_rc_pingpong -d rxe0 -g 1'.",
            "Exit status: 0 on success, 1 on failure, 2 on bad usage."
        })
public final class PingpongCommand implements Callable<Integer> {
    static final int PAGE_SIZE = 4096;
    private static final long RECV_WRID = 1;
    private static final long SEND_WRID = 2;

    @Spec
    CommandSpec spec;

    @Parameters(index = "0", arity = "0..1", paramLabel = "HOST", description = "Server to connect to (client mode). Without it: server mode.")
    String host;

    @Option(names = {"-p", "--port"}, paramLabel = "PORT", defaultValue = "18515", description = "TCP port of the address exchange (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = {"-s", "--size"}, paramLabel = "BYTES", defaultValue = "4096", converter = Converters.Size.class,
            description = "Message size, e.g. 4096 or 4k (default: ${DEFAULT-VALUE}).")
    long size;

    @Option(names = {"-n", "--iters"}, paramLabel = "N", defaultValue = "1000", description = "Number of exchanges (default: ${DEFAULT-VALUE}).")
    long iters;

    @Option(names = {"-r", "--rx-depth"}, paramLabel = "N", defaultValue = "500", description = "Receives posted in advance (default: ${DEFAULT-VALUE}).")
    int rxDepth;

    @Option(names = {"-g", "--gid-idx"}, paramLabel = "INDEX", description = "Local GID index; ours has one entry, 0 (the --bind address).")
    Integer gidIndex;

    @Option(names = {"-l", "--sl"}, paramLabel = "SL", defaultValue = "0", description = "Service level (accepted and ignored).")
    int sl;

    @Option(names = {"-c", "--chk"}, description = "Validate the received buffer (client): byte 0 of every 4096-byte page is zeroed before the first send, "
            + "and every byte must come back as sent (ibv_rc_pingpong checks byte 0 of each page).")
    boolean check;

    @Mixin
    PeerWaits waits = new PeerWaits();

    @Mixin
    OobOptions oob = new OobOptions();

    @Mixin
    DeviceOptions device = new DeviceOptions();


    private PrintWriter out;

    @Override
    public Integer call() throws Exception {
        out = spec.commandLine().getOut();
        Params p = validate();
        InetAddress peerHost = host == null ? null : DeviceOptions.address(spec, host, "HOST");
        InetAddress local = device.bind(spec);
        if (local == null) {
            if (peerHost == null) throw new ParameterException(spec.commandLine(), "a server needs --bind ADDR (the local IPv4 or IPv6 address of its RoCE device)");
            local = LocalAddress.towards(peerHost);
        }
        if (peerHost != null) peerHost = oob.host(spec, local, peerHost);
        InetAddress oobLocal = oob.local(spec);
        try (Device dev = Device.open(device.config(spec, local));
             MetricsExport exported = device.exportMetrics(spec, dev)) {
            try {
                int rc = run(dev, peerHost, oobLocal, local, p, waits.timeout);
                device.report(spec.commandLine().getErr(), dev);
                return rc;
            } finally {
                device.printCounters(spec.commandLine().getErr(), dev);
            }
        }
    }


    private record Params(int size, int iters, Mtu mtu, int rxDepth) {
    }

    private Params validate() {
        if (port < 1 || port > 65535) throw new ParameterException(spec.commandLine(), "invalid -p/--port " + port + ": must be 1..65535");
        if (size < 1 || size > (1 << 30)) throw new ParameterException(spec.commandLine(), "invalid -s/--size " + size + ": must be 1..1073741824");
        if (iters < 1 || iters > Integer.MAX_VALUE) throw new ParameterException(spec.commandLine(), "invalid -n/--iters " + iters + ": must be 1..2147483647");
        if (rxDepth < 2 || rxDepth > 65536) throw new ParameterException(spec.commandLine(), "invalid -r/--rx-depth " + rxDepth + ": must be 2..65536");
        if (gidIndex != null && gidIndex != 0) {
            throw new ParameterException(spec.commandLine(), "invalid -g/--gid-idx " + gidIndex + ": our GID table has one entry, index 0 "
                    + "(the --bind address); the peer's -g (1 on rxe) is its own index");
        }
        waits.check(spec);
        return new Params((int) size, (int) iters, device.mtu(Mtu.MTU_1024), rxDepth);
    }

    private int run(Device dev, InetAddress peerHost, InetAddress oobLocal, InetAddress local, Params p, Duration timeout) throws IOException, InterruptedException {
        boolean client = peerHost != null;
        ProtectionDomain pd = dev.allocPd();
        // as rc_pingpong.c pp_init_ctx: the region local write only, the QP no remote access (SEND/RECV only)
        MemoryRegion mr = pd.allocateAndRegister(p.size, Access.LOCAL_WRITE);
        ByteBuffer buf = mr.buffer();
        for (int i = 0; i < p.size; i++) buf.put(i, (byte) 0x7b);
        CompletionQueue cq = dev.createCq(p.rxDepth + 2);
        // ibv_rc_pingpong uses max_send_wr 1; one spare slot, defensively (see PerfRun.createResources)
        QueuePair qp = pd.createQp(new QpInitAttr(cq).maxSendWr(2).maxRecvWr(p.rxDepth));
        RcConnect.Params params = RcConnect.Params.defaults().mtu(p.mtu).accessFlags(0).timeout(waits.qpTimeout);
        RcConnect.toInit(qp, params);
        int routs = postRecv(qp, mr, p.rxDepth);

        int psn = ThreadLocalRandom.current().nextInt(1 << 24);
        PeerInfo me = new PeerInfo(qp.qpNum(), psn, dev.gid(0));
        out.printf("  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s%n", me.lid(), me.qpn(), me.psn(), me.gid());
        out.flush();

        PeerInfo remote;
        if (client) {
            remote = RcPingpongHandshake.client(peerHost, port, oobLocal, me, timeout);
        } else {
            remote = RcPingpongHandshake.server(oobLocal != null ? oobLocal : local, port, me, timeout, r -> {
                RcPingpongHandshake.requireRoutable(r, me.gid());
                RcConnect.connect(qp, r.rcPeer(), psn, params);
            });
        }
        out.printf("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s%n", remote.lid(), remote.qpn(), remote.psn(), remote.gid());
        out.flush();
        if (client) {
            RcPingpongHandshake.requireRoutable(remote, me.gid());
            RcConnect.connect(qp, remote.rcPeer(), psn, params);
        }

        SendWorkRequest send = new SendWorkRequest(SEND_WRID, WrOpcode.SEND, new Sge(mr.address(), p.size, mr.lkey())).signaled();
        long pending = RECV_WRID;
        if (client) {
            if (check) {
                for (int i = 0; i < p.size; i += PAGE_SIZE) buf.put(i, (byte) 0);
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
                throw new IOException("no completion within " + Converters.seconds(timeout) + " after " + scnt + " sends and " + rcnt
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
            for (int page = 0; page * (long) PAGE_SIZE < p.size; page++) {
                int from = page * PAGE_SIZE;
                int to = (int) Math.min(p.size, from + (long) PAGE_SIZE);
                boolean ok = buf.get(from) == 0;
                for (int i = from + 1; i < to && ok; i++) ok = buf.get(i) == (byte) 0x7b;
                if (!ok) {
                    out.printf("invalid data in page %d%n", page);
                    bad++;
                }
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

    private static int postRecv(QueuePair qp, MemoryRegion mr, int n) {
        ReceiveWorkRequest wr = new ReceiveWorkRequest(RECV_WRID, new Sge(mr.address(), mr.length(), mr.lkey()));
        for (int i = 0; i < n; i++) qp.postRecv(wr);
        return n;
    }
}
