package io.jroce.cli.perf;

import io.jroce.cli.Cli;
import io.jroce.cli.conn.PerftestHandshake;
import io.jroce.cli.conn.PerftestHandshake.Keys;
import io.jroce.cli.conn.PerftestHandshake.Test;
import io.jroce.endpoint.Access;
import io.jroce.endpoint.CompletionQueue;
import io.jroce.endpoint.Device;
import io.jroce.endpoint.MemoryRegion;
import io.jroce.endpoint.Mtu;
import io.jroce.endpoint.ProtectionDomain;
import io.jroce.endpoint.QpInitAttr;
import io.jroce.endpoint.QueuePair;
import io.jroce.endpoint.RcConnect;
import io.jroce.endpoint.SendWorkRequest;
import io.jroce.endpoint.Sge;
import io.jroce.endpoint.WcStatus;
import io.jroce.endpoint.WorkCompletion;
import io.jroce.endpoint.WrOpcode;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.net.InetAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A perf server grants its QP and memory region only the remote access perftest grants for the test
 * (perftest_resources.c setup_mr_flags and ctx_modify_qp_to_init): the peer here is a hand-driven client (the
 * perftest exchange, then verbs on its own device) that asks the server for an operation of another test.
 */
class PerfAccessTest {
    private static final AtomicInteger PORT = new AtomicInteger(28620);
    private static final Duration T = Duration.ofSeconds(10);

    @ParameterizedTest
    @EnumSource(value = Test.class, names = {"WRITE_BW", "READ_BW", "ATOMIC_BW", "SEND_BW", "WRITE_LAT", "READ_LAT", "ATOMIC_LAT", "SEND_LAT"})
    void accessFlagsAreThoseOfPerftest(Test t) {
        int remote = switch (t) {
            case WRITE_BW, WRITE_LAT -> Access.REMOTE_WRITE;
            case READ_BW, READ_LAT -> Access.REMOTE_READ;
            case ATOMIC_BW, ATOMIC_LAT -> Access.REMOTE_ATOMIC;
            case SEND_BW, SEND_LAT -> 0;
        };
        assertEquals(Access.LOCAL_WRITE | remote, PerfRun.mrAccess(t));
        assertEquals(remote == 0 ? Access.REMOTE_WRITE | Access.LOCAL_WRITE : remote, PerfRun.qpAccess(t));
    }

    /** What a READ and a fetch-and-add against the server's advertised buffer complete with, per server test. */
    @ParameterizedTest
    @EnumSource(value = Test.class, names = {"WRITE_BW", "READ_BW", "ATOMIC_BW"})
    void aServerAnswersOnlyTheOperationsOfItsTest(Test t) throws Exception {
        // a QP without the remote access bit NAKs with invalid request (rxe_resp.c check_op_valid:
        // RESPST_ERR_UNSUPPORTED_OPCODE), which the requester completes as REM_INV_REQ_ERR
        assertEquals(t == Test.READ_BW ? WcStatus.SUCCESS : WcStatus.REM_INV_REQ_ERR, against(t, WrOpcode.RDMA_READ),
                "READ against a " + t.tool() + " server");
        assertEquals(t == Test.ATOMIC_BW ? WcStatus.SUCCESS : WcStatus.REM_INV_REQ_ERR, against(t, WrOpcode.ATOMIC_FETCH_AND_ADD),
                "FETCH_ADD against a " + t.tool() + " server");
    }

    /** Starts a perf server for {@code t}, connects to it as its client and returns how one {@code op} completed. */
    private static WcStatus against(Test t, WrOpcode op) throws Exception {
        int port = PORT.getAndIncrement();
        String verb = switch (t) {
            case WRITE_BW -> "write";
            case READ_BW -> "read";
            default -> "atomic";
        };
        CompletableFuture<Cli.Result> server = CompletableFuture.supplyAsync(() ->
                Cli.run("perf", verb, "--bind", "127.0.1.1", "-p", String.valueOf(port), "-x", "0", "--timeout", "3"));
        try (Device dev = Device.open(InetAddress.getByName("127.0.1.2"))) {
            ProtectionDomain pd = dev.allocPd();
            CompletionQueue cq = dev.createCq(8);
            MemoryRegion local = pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
            return tryOne(dev, pd, cq, local, t, port, op);
        } finally {
            server.get(30, TimeUnit.SECONDS);
        }
    }

    /** Connects as the client of {@code t} to a perf server on 127.0.1.1 and posts one {@code op} to its buffer. */
    private static WcStatus tryOne(Device dev, ProtectionDomain pd, CompletionQueue cq, MemoryRegion local, Test t, int port, WrOpcode op)
            throws Exception {
        QueuePair qp = pd.createQp(new QpInitAttr(cq).maxSendWr(4).maxRecvWr(4));
        RcConnect.Params params = RcConnect.Params.defaults().rdAtomic(QueuePair.MAX_RD_ATOMIC);
        RcConnect.toInit(qp, params);
        try (PerftestHandshake hs = PerftestHandshake.connect(InetAddress.getByName("127.0.1.1"), port, null, T)) {
            PerftestHandshake.Preamble pre = hs.preamble(PerftestHandshake.DEFAULT_CYCLE_BUFFER, PerftestHandshake.DEFAULT_CACHE_LINE, Mtu.MTU_1024);
            int psn = ThreadLocalRandom.current().nextInt(1 << 24);
            Keys mine = new Keys(0, QueuePair.MAX_RD_ATOMIC, qp.qpNum(), psn, local.rkey(), local.address(), dev.gid(0), 0);
            List<Keys> theirs = hs.setUp(t, List.of(mine), remote ->
                    RcConnect.connect(qp, remote.get(0).toPeerInfo(pre.mtu().bytes()).rcPeer(), psn, params.mtu(pre.mtu())));
            Keys server = theirs.get(0);
            SendWorkRequest wr = op == WrOpcode.RDMA_READ
                    ? new SendWorkRequest(1, op, Sge.of(local, 0, 64)).remote(server.va(), server.rkey()).signaled()
                    : new SendWorkRequest(1, op, Sge.of(local, 0, 8)).remote(server.va(), server.rkey()).compareAdd(1).signaled();
            qp.postSend(wr);
            List<WorkCompletion> wc = cq.poll(1, 10, TimeUnit.SECONDS);
            assertTrue(wc.size() == 1, "no completion for the " + op);
            return wc.get(0).status();
        }
    }
}
