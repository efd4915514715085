package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Runs rdmacm_check (src/test/c/rdmacm_check.c, built by make beside the libraries): an rdma_cm program compiled
 * against rdma-core's headers that looks librdmacm up by symbol version, watches an event channel's fd, resolves a
 * route and creates an id's QP on the id's verbs context. It prints "ok ..." per check and "FAIL ..." at the first
 * failure; among them, calls on ids and channels already destroyed, which must fail and not crash. Its device binds host 31 of {@link Tools#net} and connects to itself there; the peer it resolves, host 32, is
 * never sent anything. Its rdma_cm ports start at {@link Tools#cmPort}.
 */
class RdmacmCheckTest {

    @Test
    void rdmacmCheckPasses() throws Exception {
        Path program = Tools.nativeDir().resolve("test/rdmacm_check");
        assertTrue(Files.isExecutable(program), "no " + program + ": did make run?");
        Map<String, String> env = Map.of("JROCE_ADDR", Tools.addr(31), "JROCE_CLASSPATH", System.getProperty("java.class.path"));
        Tools.Result r = Tools.run(env, 60, program.toString(), Tools.addr(31), Tools.addr(32), "" + Tools.cmPort(7174));
        assertEquals(0, r.exit(), r.output());
        assertTrue(r.output().contains("ok dlvsym rdma_set_local_ece@RDMACM_1.3\n"), r.output());
        assertTrue(r.output().contains("ok the fd is not readable once the event is taken\n"), r.output());
        assertTrue(r.output().contains("ok no event waiting: EAGAIN\n"), r.output());
        assertTrue(r.output().contains("ok the id's QP is in INIT\n"), r.output());
        assertTrue(r.output().contains("ok RDMA_OPTION_ID_ACK_TIMEOUT (a byte)\n"), r.output());
        assertTrue(r.output().contains("ok RTS attributes carry ACK_TIMEOUT's 17\n"), r.output());
        assertTrue(r.output().contains("ok rdma_notify(COMM_EST) again is EISCONN\n"), r.output());
        assertTrue(r.output().contains("ok rdma_resolve_addr on a destroyed id is -1, No such file or directory\n"), r.output());
        assertTrue(r.output().contains("ok rdma_destroy_id again is -1, ENOENT\n"), r.output());
        assertTrue(r.output().contains("ok rdma_connect on a pointer to unmapped memory is -1, No such file or directory\n"), r.output());
        assertTrue(r.output().contains("ok rdma_get_cm_event on a destroyed channel is -1, EBADF\n"), r.output());
        assertTrue(r.output().contains("all ok\n"), r.output());
    }
}
