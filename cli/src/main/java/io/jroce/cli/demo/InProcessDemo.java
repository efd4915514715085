package io.jroce.cli.demo;

import io.jroce.endpoint.Access;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.DeviceConfig;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.RcConnect;
import io.jroce.endpoint.ReceiveWorkRequest;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WcOpcode;
import io.jroce.endpoint.WcStatus;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * {@code jroce demo --in-process}, a self-test: two devices in this JVM on two loopback addresses exchange SEND
 * (with and without immediate), RDMA WRITE (with and without immediate), RDMA READ, CMP_SWAP and FETCH_ADD over
 * real UDP at every size from 0 bytes to 1 MiB, every completion and every byte verified; it reports pass or
 * fail per operation and size, and the devices' counters. It measures nothing: performance is measured by
 * {@code jroce perf} between two processes. Returns 0 only if everything matched.
 */
final class InProcessDemo {
    private static final int[] SIZES = {0, 1, 4095, 4096, 4097, 65536, 1 << 20};

    private final CommandSpec spec;
    private final String addrA;
    private final String addrB;
    private final Mtu mtu;
    private final int iters;
    private final Long seed;
    private final Path pcap;
    private final String chaosSpec;

    InProcessDemo(CommandSpec spec, String addrA, String addrB, Mtu mtu, int iters, Long seed, Path pcap, String chaosSpec) {
        this.chaosSpec = chaosSpec;
        this.spec = spec;
        this.addrA = addrA;
        this.addrB = addrB;
        this.mtu = mtu;
        this.iters = iters;
        this.seed = seed;
        this.pcap = pcap;
    }

    private PrintWriter out;
    private SplittableRandom random;
    private int failures;

    Integer call() throws Exception {
        out = spec.commandLine().getOut();
        if (iters < 1) throw new ParameterException(spec.commandLine(), "--iters must be at least 1");
        InetAddress a = resolve(addrA);
        InetAddress b = resolve(addrB);
        io.jroce.cli.DeviceOptions.checkLocal(spec, a, "--node-a");
        io.jroce.cli.DeviceOptions.checkLocal(spec, b, "--node-b");
        long s = seed != null ? seed : new SplittableRandom().nextLong();
        random = new SplittableRandom(s);
        out.printf("jroce demo --in-process: node A %s, node B %s, path MTU %d, seed %d%n", a.getHostAddress(), b.getHostAddress(), mtu.bytes(), s);

        DeviceConfig ca = new DeviceConfig(a);
        if (pcap != null) {
            String why = io.jroce.cli.DeviceOptions.unwritable(pcap);
            if (why != null) throw new ParameterException(spec.commandLine(), "--pcap: " + why);
            ca.pcap(pcap);
        } // A records what it sends and what it receives: every datagram of both nodes
        io.jroce.endpoint.fault.FaultInjector chaos = null;
        if (chaosSpec != null) {
            try {
                chaos = io.jroce.endpoint.fault.FaultInjector.parse(chaosSpec);
            } catch (IllegalArgumentException e) {
                throw new ParameterException(spec.commandLine(), "--chaos: " + e.getMessage());
            }
            ca.filter(chaos); // on node A, both directions: every datagram of the pair passes it once
            out.println("chaos " + chaos.spec() + " on node A (replay with --chaos '" + chaos.spec() + "')");
        }
        try (Device devA = io.jroce.cli.DeviceOptions.open(spec, ca);
             Device devB = io.jroce.cli.DeviceOptions.open(spec, new DeviceConfig(b))) {
            if (!devA.isEpoll()) out.println("warning: epoll unavailable, running on NIO");
            Link link = new Link(devA, devB, mtu, random);
            out.printf("%-22s %9s %6s %8s  %s%n", "operation", "size", "msgs", "packets", "result");
            for (WrOpcode op : new WrOpcode[] {WrOpcode.SEND, WrOpcode.SEND_WITH_IMM, WrOpcode.RDMA_WRITE,
                    WrOpcode.RDMA_WRITE_WITH_IMM, WrOpcode.RDMA_READ}) {
                for (int size : SIZES) {
                    row(link, op, size);
                }
            }
            row(link, WrOpcode.ATOMIC_CMP_AND_SWP, 8);
            row(link, WrOpcode.ATOMIC_FETCH_AND_ADD, 8);
            long drops = devA.counters().totalDrops() + devB.counters().totalDrops();
            out.printf("counters: A %s%n          B %s%n", brief(devA), brief(devB));
            if (chaos != null) out.println("chaos: " + chaos.counters());
            if (drops != 0) out.println("note: " + drops + " datagrams were dropped and recovered (see counters)");
        }
        if (pcap != null) out.println("capture: " + pcap + " (jroce inspect " + pcap + ")");
        out.println(failures == 0 ? "demo: self-test passed, all transfers verified" : "demo: self-test FAILED, " + failures + " check(s)");
        out.flush();
        return failures == 0 ? 0 : 1;
    }

    private static String brief(Device d) {
        var c = d.counters();
        return String.format("packets out %d in %d, retransmits %d, timeouts %d, drops %d", c.packetsOut, c.packetsIn,
                c.retransmits, c.timeouts, c.totalDrops());
    }

    private InetAddress resolve(String s) {
        try {
            InetAddress addr = InetAddress.getByName(s);
            if (!addr.isLoopbackAddress()) {
                throw new ParameterException(spec.commandLine(), "the demo runs on loopback only; " + s + " is not in 127.0.0.0/8 or ::1");
            }
            return addr;
        } catch (IOException e) {
            throw new ParameterException(spec.commandLine(), "cannot resolve " + s + ": " + e.getMessage());
        }
    }

    private void row(Link link, WrOpcode op, int size) throws InterruptedException {
        long p0 = link.packets();
        String problem = null;
        for (int i = 0; i < iters && problem == null; i++) {
            problem = link.transfer(op, size);
        }
        long packets = link.packets() - p0;
        if (problem != null) failures++;
        out.printf("%-22s %9d %6d %8d  %s%n", op, size, iters, packets, problem == null ? "ok" : "FAILED: " + problem);
        out.flush();
    }

    /** One connected QP pair with registered buffers on both nodes. */
    private static final class Link {
        final Device devA;
        final Device devB;
        final QueuePair qpA;
        final QueuePair qpB;
        final CompletionQueue cqA;
        final CompletionQueue cqB;
        final MemoryRegion srcA;
        final MemoryRegion dstA;
        final MemoryRegion srcB;
        final MemoryRegion dstB;
        final MemoryRegion word;
        final MemoryRegion result;
        final SplittableRandom random;
        private final WorkCompletion[] wc = {new WorkCompletion()};
        private long nextId = 1;

        Link(Device a, Device b, Mtu mtu, SplittableRandom random) {
            this.devA = a;
            this.devB = b;
            this.random = random;
            int cap = (1 << 20) + 4096;
            ProtectionDomain pdA = a.allocPd();
            ProtectionDomain pdB = b.allocPd();
            int remote = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
            srcA = pdA.allocateAndRegister(cap, Access.LOCAL_WRITE);
            dstA = pdA.allocateAndRegister(cap, Access.LOCAL_WRITE);
            srcB = pdB.allocateAndRegister(cap, remote);
            dstB = pdB.allocateAndRegister(cap, remote);
            word = pdB.allocateAndRegister(64, remote);
            result = pdA.allocateAndRegister(8, Access.LOCAL_WRITE);
            cqA = a.createCq(256);
            cqB = b.createCq(256);
            qpA = pdA.createQp(new QpInitAttr(cqA).maxSendWr(64).maxRecvWr(64));
            qpB = pdB.createQp(new QpInitAttr(cqB).maxSendWr(64).maxRecvWr(64));
            int psnA = random.nextInt(1 << 24);
            int psnB = random.nextInt(1 << 24);
            RcConnect.connectPair(qpA, psnA, qpB, psnB, RcConnect.Params.defaults().mtu(mtu).rdAtomic(4));
        }


        long packets() {
            return devA.counters().packetsOut + devB.counters().packetsOut;
        }

        private void fill(MemoryRegion mr, int len) {
            ByteBuffer bb = mr.buffer();
            byte[] chunk = new byte[Math.min(len, 65536)];
            int done = 0;
            while (done < len) {
                int n = Math.min(chunk.length, len - done);
                for (int i = 0; i < n; i++) chunk[i] = (byte) random.nextInt(256);
                bb.put(chunk, 0, n);
                done += n;
            }
        }

        private static void zero(MemoryRegion mr) {
            ByteBuffer bb = mr.buffer();
            byte[] z = new byte[65536];
            while (bb.hasRemaining()) bb.put(z, 0, Math.min(z.length, bb.remaining()));
        }

        private static String compare(MemoryRegion x, MemoryRegion y, int len) {
            ByteBuffer bx = x.buffer().limit(len);
            ByteBuffer by = y.buffer().limit(len);
            int at = bx.mismatch(by);
            if (at >= 0) return "byte " + at + " differs";
            // the byte after the message must be untouched (zeroed before the transfer)
            if (y.buffer().get(len) != 0) return "byte after the message was written";
            return null;
        }

        private WorkCompletion poll(CompletionQueue cq) throws InterruptedException {
            int n = cq.poll(wc, 1, 10, TimeUnit.SECONDS);
            return n == 1 ? wc[0] : null;
        }

        /** One verified transfer; returns null or what went wrong. */
        String transfer(WrOpcode op, int size) throws InterruptedException {
            long id = nextId++;
            int imm = random.nextInt();
            switch (op) {
                case SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM -> {
                    fill(srcA, size);
                    zero(dstB);
                    boolean needsRecv = op != WrOpcode.RDMA_WRITE;
                    if (needsRecv) qpB.postRecv(new ReceiveWorkRequest(id, new Sge(dstB.address(), op.isSend() ? size + 1 : 0, dstB.lkey())));
                    SendWorkRequest wr = new SendWorkRequest(id, op, new Sge(srcA.address(), size, srcA.lkey())).immData(imm).signaled();
                    if (op.isWrite()) wr.remote(dstB.address(), dstB.rkey());
                    qpA.postSend(wr);
                    WorkCompletion s = poll(cqA);
                    if (s == null) return "no send completion";
                    if (s.status() != WcStatus.SUCCESS || s.wrId() != id) return "send completion " + s;
                    if (needsRecv) {
                        WorkCompletion r = poll(cqB);
                        if (r == null) return "no receive completion";
                        WcOpcode expect = op.isSend() ? WcOpcode.RECV : WcOpcode.RECV_RDMA_WITH_IMM;
                        if (r.status() != WcStatus.SUCCESS || r.opcode() != expect || r.byteLen() != size || r.wrId() != id) {
                            return "receive completion " + r;
                        }
                        boolean withImm = op == WrOpcode.SEND_WITH_IMM || op == WrOpcode.RDMA_WRITE_WITH_IMM;
                        if (withImm != r.hasImm() || (withImm && r.immData() != imm)) return "immediate data " + r;
                    }
                    return compare(srcA, dstB, size);
                }
                case RDMA_READ -> {
                    fill(srcB, size);
                    zero(dstA);
                    qpA.postSend(new SendWorkRequest(id, op, new Sge(dstA.address(), size, dstA.lkey())).remote(srcB.address(), srcB.rkey()).signaled());
                    WorkCompletion s = poll(cqA);
                    if (s == null) return "no READ completion";
                    if (s.status() != WcStatus.SUCCESS || s.opcode() != WcOpcode.RDMA_READ || s.byteLen() != size) return "READ completion " + s;
                    return compare(srcB, dstA, size);
                }
                case ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD -> {
                    long before = word.getLong(0);
                    long operand = random.nextLong();
                    SendWorkRequest wr = new SendWorkRequest(id, op, Sge.of(result)).remote(word.address(), word.rkey()).signaled();
                    long expectAfter;
                    if (op == WrOpcode.ATOMIC_CMP_AND_SWP) {
                        wr.compareAdd(before).swap(operand);
                        expectAfter = operand;
                    } else {
                        wr.compareAdd(operand);
                        expectAfter = before + operand;
                    }
                    qpA.postSend(wr);
                    WorkCompletion s = poll(cqA);
                    if (s == null) return "no atomic completion";
                    if (s.status() != WcStatus.SUCCESS) return "atomic completion " + s;
                    if (result.getLong(0) != before) return "original value " + result.getLong(0) + " != " + before;
                    if (word.getLong(0) != expectAfter) return "remote word " + word.getLong(0) + " != " + expectAfter;
                    return null;
                }
                default -> {
                    return "unsupported " + op;
                }
            }
        }
    }
}
