package io.jroce.cli;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The committed examples/sample.pcap is exactly what {@link SampleCapture} generates. */
class SampleCaptureTest {

    @Test
    void committedSampleMatchesTheGenerator() throws Exception {
        byte[] expected = SampleCapture.build();
        Path file = SampleCapture.committedFile();
        if (Boolean.getBoolean("jroce.regenerateSample")) {
            Files.write(file, expected);
        }
        assertTrue(Files.isRegularFile(file), file.toAbsolutePath() + " missing; regenerate with "
                + "mvn -o -pl cli test -Dtest=SampleCaptureTest -Djroce.regenerateSample=true");
        assertArrayEquals(expected, Files.readAllBytes(file), file + " differs from SampleCapture.build(); "
                + "if the change is deliberate: mvn -o -pl cli test -Dtest=SampleCaptureTest -Djroce.regenerateSample=true");
    }
}
