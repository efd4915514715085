package io.jroce.testkit;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * The repository's {@code testdata/} folder: golden RoCEv2 vectors and real rdma_rxe captures (its README says
 * what each file is). Found from the system property {@code jroce.testdata} (the build sets it), else by
 * walking up from the working directory to the folder that holds {@code testdata/}.
 */
public final class TestData {
    private TestData() {
    }

    /** The {@code testdata/} folder. */
    public static Path dir() {
        String prop = System.getProperty("jroce.testdata");
        if (prop != null && Files.isDirectory(Paths.get(prop))) {
            return Paths.get(prop);
        }
        for (Path p = Paths.get("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("testdata/README.md"))) {
                return p.resolve("testdata");
            }
        }
        throw new IllegalStateException("testdata/ not found above " + Paths.get("").toAbsolutePath()
                + "; run from the checkout or set -Djroce.testdata=/path/to/testdata");
    }

    /** A file in {@code testdata/}, e.g. {@code "rocev2-golden.pcap"} or {@code "rxe/write_bw.pcap"}. */
    public static Path file(String relative) {
        Path p = dir().resolve(relative);
        if (!Files.exists(p)) {
            throw new IllegalStateException("missing test data file " + p);
        }
        return p;
    }

    /** The 40 golden frames (Ethernet/IPv4/UDP 4791), classic pcap. */
    public static Path goldenPcap() {
        return file("rocev2-golden.pcap");
    }

    /** The golden frames' expected decodes, one JSON object per frame under "vectors". */
    public static Path goldenJson() {
        return file("rocev2-golden.json");
    }
}
