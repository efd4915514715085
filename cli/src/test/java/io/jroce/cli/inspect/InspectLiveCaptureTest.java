package io.jroce.cli.inspect;

import io.jroce.cli.Cli;
import io.jroce.testkit.Json;
import io.jroce.wire.pcap.CaptureReader;
import io.jroce.wire.pcap.PcapFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.math.BigDecimal;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A capture jroce records while it runs ({@code --pcap}): its records carry the time they were sent or
 * received to the microsecond, never going backwards, so {@code inspect --flows} measures round trips on it.
 */
class InspectLiveCaptureTest {

    @Test
    void pingPongCaptureHasMicrosecondStampsAndRoundTrips(@TempDir Path dir) throws Exception {
        Path pcap = dir.resolve("server.pcap");
        long before = nanos(Instant.now());
        CompletableFuture<Cli.Result> server = CompletableFuture.supplyAsync(() -> Cli.run("pingpong",
                "--bind", "127.0.71.1", "-p", "28701", "-n", "200", "-s", "64", "--pcap", pcap.toString()));
        Cli.Result client = Cli.run("pingpong", "127.0.71.1", "--bind", "127.0.71.2", "-p", "28701", "-n", "200", "-s", "64");
        Cli.Result s = server.get(60, TimeUnit.SECONDS);
        long after = nanos(Instant.now());
        assertEquals(0, s.exit(), s.out() + s.err());
        assertEquals(0, client.exit(), client.out() + client.err());

        List<PcapFrame> frames = CaptureReader.readAll(pcap);
        assertTrue(frames.size() >= 400, "200 SENDs each way and their ACKs: " + frames.size());
        long previous = Long.MIN_VALUE;
        long wholeMilliseconds = 0;
        for (PcapFrame f : frames) {
            long t = f.epochNanos();
            assertTrue(t >= previous, "frame " + f.frameNumber() + " goes back in time");
            assertTrue(t >= before - 1_000_000_000L && t <= after + 1_000_000_000L, "frame " + f.frameNumber() + " at " + t);
            previous = t;
            if (t % 1_000_000 == 0) {
                wholeMilliseconds++;
            }
        }
        // a millisecond clock makes every stamp a whole millisecond; a microsecond one about 1 in 1000
        assertTrue(wholeMilliseconds < frames.size() / 10, wholeMilliseconds + " of " + frames.size() + " on a whole millisecond");

        Cli.Result flows = Cli.run("inspect", "--flows", "--json", pcap.toString());
        assertEquals(0, flows.exit(), flows.out() + flows.err());
        Map<String, Object> flow = Json.object(flows.outLines().get(0));
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> requesters = (List<Map<String, Object>>) flow.get("requesters");
        assertEquals(2, requesters.size(), "each side sends: " + flows.out());
        for (Map<String, Object> r : requesters) {
            @SuppressWarnings("unchecked")
            Map<String, Object> rtt = (Map<String, Object>) r.get("ack_rtt");
            @SuppressWarnings("unchecked")
            String from = (String) ((Map<String, Object>) flow.get(r.get("from"))).get("addr");
            assertEquals(200, ((BigDecimal) rtt.get("samples")).intValue(), from + ": every SEND ONLY is answered: " + rtt);
            BigDecimal min = (BigDecimal) rtt.get("min_us");
            BigDecimal median = (BigDecimal) rtt.get("median_us");
            // on loopback: more than nothing, less than a second. The recorder's own SENDs time a whole round
            // trip, so even the shortest is more than nothing; the peer's time only the recorder's answer.
            assertTrue(median.signum() > 0 && median.compareTo(BigDecimal.valueOf(1_000_000)) < 0, from + ": " + rtt);
            if (from.equals("127.0.71.1")) {
                assertTrue(min.signum() > 0, from + ": " + rtt);
            }
        }
    }

    private static long nanos(Instant i) {
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }
}
