package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Runs verbs_check (src/test/c/verbs_check.c, built by make beside the library): a program compiled against
 * rdma-core's headers that looks the library up by symbol version, moves data between two RC QPs through the
 * inline verbs, and checks the errors rdma-core gives for bad use (a table of cases, each naming the rdma-core or
 * kernel function it follows) and fork(). Its device binds host 33 of {@link Tools#net}. It prints "ok ..." per check and
 * "FAIL ..." at the first failure. And librdmacm.so.1 exports every function of rdma-core's with the same symbol
 * version, as objdump reads both.
 */
class VerbsCheckTest {

    @Test
    void verbsCheckPasses() throws Exception {
        Path program = Tools.nativeDir().resolve("test/verbs_check");
        assertTrue(Files.isExecutable(program), "no " + program + ": did make run?");
        String address = Tools.addr(33);
        Map<String, String> env = Map.of("JROCE_ADDR", address, "JROCE_CLASSPATH", System.getProperty("java.class.path"));
        Tools.Result r = Tools.run(env, 90, program.toString());
        assertEquals(0, r.exit(), r.output());
        assertTrue(r.output().contains("ok a full receive queue is ENOMEM, bad_wr the third\n"), r.output());
        assertTrue(r.output().contains("ok RDMA WRITE: the bytes are in the target's buffer\n"), r.output());
        assertTrue(r.output().contains("ok the requester's QP had QP_FATAL\n"), r.output());
        assertTrue(r.output().contains("ok bad use: ibv_reg_mr of NULL with a length is Bad address"), r.output());
        assertTrue(r.output().contains("ok bad use: ibv_create_qp with max_send_wr above max_qp_wr is Invalid argument"), r.output());
        assertTrue(r.output().contains("ok bad use: an atomic at an address not 8-byte aligned is Invalid argument"), r.output());
        assertTrue(r.output().contains("ok ibv_is_fork_initialized is IBV_FORK_UNNEEDED\n"), r.output());
        assertTrue(r.output().contains("ok the child's writes to its copy of a region stay in the child\n"), r.output());
        assertTrue(r.output().contains("ok SGE fault: a chain whose second WRITE reads outside its region is posted whole (0, bad_wr untouched)\n"),
                r.output());
        assertTrue(r.output().contains("ok SGE fault: the receive completes with IBV_WC_LOC_QP_OP_ERR (rxe_resp.c RESPST_ERR_MALFORMED_WQE)\n"),
                r.output());
        assertTrue(r.output().contains("ok SGE fault: each failed QP raised IBV_EVENT_QP_FATAL\n"), r.output());
        assertTrue(r.output().endsWith("all ok\n"), r.output());
    }

    /** Where Debian puts rdma-core's librdmacm (librdmacm1, pulled in by librdmacm-dev). */
    private static final Path RDMA_CORE_RDMACM = Path.of("/usr/lib/x86_64-linux-gnu/librdmacm.so.1");

    @Test
    void librdmacmExportsRdmaCoresSymbolsWithTheirVersions() throws Exception {
        assertTrue(Files.isReadable(RDMA_CORE_RDMACM), "no " + RDMA_CORE_RDMACM + ": apt-get install librdmacm-dev");
        Set<String> theirs = exported(RDMA_CORE_RDMACM);
        Set<String> ours = exported(Tools.nativeDir().resolve("librdmacm.so.1"));
        assertTrue(theirs.contains("RDMACM_1.3 rdma_set_local_ece") && theirs.contains("RDMACM_1.0 rdma_create_id"), theirs.toString());
        assertEquals(theirs, ours);
    }

    /** Where Debian puts rdma-core's libibverbs (libibverbs1). */
    private static final Path RDMA_CORE_IBVERBS = Path.of("/usr/lib/x86_64-linux-gnu/libibverbs.so.1");

    /**
     * libibverbs.so.1 defines every function of rdma-core's with the same default version (what a program linking
     * today binds); the hidden IBVERBS_1.0 compatibility versions of 2007's ABI and the release-bound private node
     * are left out of the comparison.
     */
    @Test
    void libibverbsExportsRdmaCoresSymbolsWithTheirVersions() throws Exception {
        assertTrue(Files.isReadable(RDMA_CORE_IBVERBS), "no " + RDMA_CORE_IBVERBS + ": apt-get install libibverbs-dev");
        Set<String> theirs = defaultVersions(RDMA_CORE_IBVERBS);
        Set<String> ours = defaultVersions(Tools.nativeDir().resolve("libibverbs.so.1"));
        assertTrue(theirs.contains("IBVERBS_1.1 ibv_alloc_pd") && theirs.contains("IBVERBS_1.14 ibv_query_qp_data_in_order"), theirs.toString());
        assertEquals(theirs, ours);
    }

    /** "VERSION name" of each function defined under a public IBVERBS_1.x node as its default version (objdump -T). */
    private static Set<String> defaultVersions(Path library) throws Exception {
        Tools.Result r = Tools.run(Map.of(), 30, Tools.tool("objdump", "binutils"), "-T", library.toString());
        assertEquals(0, r.exit(), r.output());
        Set<String> symbols = new TreeSet<>();
        for (String line : Tools.lines(r.output())) {
            String[] f = line.trim().split("\\s+");
            if (f.length < 4 || !line.contains(" DF ") || line.contains("*UND*")) continue;
            String version = f[f.length - 2]; // a hidden (non-default) version is shown in parentheses
            if (version.startsWith("IBVERBS_1.")) symbols.add(version + " " + f[f.length - 1]);
        }
        return symbols;
    }

    /** "VERSION name" of each function a library defines under a version node (objdump -T). */
    private static Set<String> exported(Path library) throws Exception {
        Tools.Result r = Tools.run(Map.of(), 30, Tools.tool("objdump", "binutils"), "-T", library.toString());
        assertEquals(0, r.exit(), r.output());
        Set<String> symbols = new TreeSet<>();
        for (String line : Tools.lines(r.output())) {
            String[] f = line.trim().split("\\s+");
            if (f.length < 4 || !line.contains(" DF ") || line.contains("*UND*")) continue;
            String version = f[f.length - 2].replace("(", "").replace(")", "");
            if (version.startsWith("RDMACM_")) symbols.add(version + " " + f[f.length - 1]);
        }
        return symbols;
    }
}
