package io.jroce.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Runs verbs_check (src/test/c/verbs_check.c, built by make beside the library): a program compiled against
 * rdma-core's headers that looks the library up by symbol version, moves data between two RC QPs through the
 * inline verbs, and checks the errors rdma-core gives for bad use. It prints "ok ..." per check and
 * "FAIL ..." at the first failure.
 */
class VerbsCheckTest {

    @Test
    void verbsCheckPasses() throws Exception {
        Path program = Tools.nativeDir().resolve("test/verbs_check");
        assertTrue(Files.isExecutable(program), "no " + program + ": did make run?");
        // its device binds an address of 127/8 drawn at random (ToolPair's seeded choice), free of other runs' devices
        String address = new ToolPair("verbsCheckPasses").serverAddress;
        Map<String, String> env = Map.of("JROCE_ADDR", address, "JROCE_CLASSPATH", System.getProperty("java.class.path"));
        Tools.Result r = Tools.run(env, 90, program.toString());
        assertEquals(0, r.exit(), r.output());
        assertTrue(r.output().contains("ok a full receive queue is ENOMEM, bad_wr the third\n"), r.output());
        assertTrue(r.output().contains("ok RDMA WRITE: the bytes are in the target's buffer\n"), r.output());
        assertTrue(r.output().contains("ok the requester's QP had QP_FATAL\n"), r.output());
        assertTrue(r.output().endsWith("all ok\n"), r.output());
    }
}
