package io.jroce.wire;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * Locates the read-only shared folder (golden vectors, docs): system property {@code jroce.shared} (set by
 * surefire from the parent pom), else ../shared or ../../shared relative to the working directory.
 */
final class Shared {
    private Shared() {
    }

    static Path dir() {
        String prop = System.getProperty("jroce.shared");
        if (prop != null && Files.isDirectory(Paths.get(prop, "vectors"))) {
            return Paths.get(prop);
        }
        for (String candidate : new String[] {"../shared", "../../shared"}) {
            Path p = Paths.get(candidate);
            if (Files.isDirectory(p.resolve("vectors"))) {
                return p;
            }
        }
        throw new IllegalStateException("shared folder not found: set -Djroce.shared=/path/to/shared (tried "
                + prop + ", ../shared, ../../shared from " + Paths.get("").toAbsolutePath() + ")");
    }

    static Path vectors() {
        return dir().resolve("vectors");
    }
}
