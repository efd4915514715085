package io.jroce.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.jroce.endpoint.AgentMode;
import io.jroce.endpoint.DeviceConfig;
import java.net.InetAddress;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** A latency test's dedicated device busy-polls unless --busy-poll says otherwise; nothing else does by default. */
class LatencyBusyPollTest {
    @Command(name = "probe")
    static final class Probe {
        @Mixin DeviceOptions device;
        @Spec CommandSpec spec;
    }

    private static DeviceConfig config(boolean latency, AgentMode defaultAgent, String... args) {
        Probe p = new Probe();
        new CommandLine(p).parseArgs(args);
        DeviceConfig c = p.device.config(p.spec, InetAddress.getLoopbackAddress(), defaultAgent);
        return latency ? p.device.forLatency(c) : c;
    }

    @Test
    void aDedicatedLatencyDeviceBusyPollsByDefault() {
        assertEquals(DeviceOptions.LATENCY_BUSY_POLL_MICROS, config(true, AgentMode.INVOKED, "--agent", "dedicated").busyPollMicros());
        assertEquals(DeviceOptions.LATENCY_BUSY_POLL_MICROS, config(true, AgentMode.DEDICATED).busyPollMicros());
    }

    @Test
    void anExplicitBusyPollWins() {
        assertEquals(0, config(true, AgentMode.INVOKED, "--agent", "dedicated", "--busy-poll", "0").busyPollMicros());
        assertEquals(50, config(true, AgentMode.INVOKED, "--agent", "dedicated", "--busy-poll", "50").busyPollMicros());
    }

    @Test
    void anInvokedLatencyDeviceAndEveryOtherDeviceDoNot() {
        assertEquals(0, config(true, AgentMode.INVOKED).busyPollMicros());
        assertEquals(0, config(false, AgentMode.DEDICATED).busyPollMicros());
        assertEquals(0, config(false, AgentMode.INVOKED, "--agent", "dedicated").busyPollMicros());
    }
}
