package io.jroce.endpoint;

import io.netty.util.ResourceLeakDetector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Netty's buffer leak detection on the data path. At its default level (SIMPLE) Netty tracks one
 * allocation in 128 and records a stack trace for each tracked buffer; every datagram jroce sends or
 * receives is a pooled buffer, so a profile of a bandwidth run shows this bookkeeping on the event loop.
 * jroce's own tests check buffer release with reference counts ({@code refCnt}) instead, so the detector is
 * switched off when a device opens, unless the user chose a level: {@code -Dio.netty.leakDetection.level=...}
 * (or Netty's older {@code io.netty.leakDetectionLevel} / {@code io.netty.noResourceLeakDetection}) is
 * left alone, so {@code -Dio.netty.leakDetection.level=paranoid} still hunts a leak.
 *
 * <p>The level is a JVM-wide Netty setting: an application that embeds jroce and uses Netty elsewhere and
 * wants the detector there sets the property too.
 */
final class LeakDetection {
    private static final Logger log = LoggerFactory.getLogger(LeakDetection.class);
    /** Netty's properties for the level, current and deprecated (ResourceLeakDetector's static init). */
    private static final String[] LEVEL_PROPERTIES = {
            "io.netty.leakDetection.level", "io.netty.leakDetectionLevel", "io.netty.noResourceLeakDetection"};

    private LeakDetection() {
    }

    /** Disables Netty's leak detection unless one of its level properties is set; idempotent. */
    static void offUnlessChosen() {
        for (String p : LEVEL_PROPERTIES) {
            if (System.getProperty(p) != null) return;
        }
        if (ResourceLeakDetector.getLevel() != ResourceLeakDetector.Level.DISABLED) {
            ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.DISABLED);
            log.debug("Netty leak detection disabled for the data path (set -Dio.netty.leakDetection.level to keep it)");
        }
    }
}
