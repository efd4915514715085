package io.jroce.endpoint;

import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetector.Level;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class LeakDetectionTest {
    private static final String PROPERTY = "io.netty.leakDetection.level";
    private Level before;

    @BeforeEach
    void noLevelChosenByTheBuild() {
        assumeTrue(System.getProperty(PROPERTY) == null && System.getProperty("io.netty.leakDetectionLevel") == null
                && System.getProperty("io.netty.noResourceLeakDetection") == null, "the build sets a leak detection level");
        before = ResourceLeakDetector.getLevel();
    }

    @AfterEach
    void restore() {
        System.clearProperty(PROPERTY);
        if (before != null) ResourceLeakDetector.setLevel(before);
    }

    @Test
    void nettysDefaultLevelIsSwitchedOff() {
        ResourceLeakDetector.setLevel(Level.SIMPLE);
        LeakDetection.offUnlessChosen();
        assertEquals(Level.DISABLED, ResourceLeakDetector.getLevel());
    }

    @Test
    void aLevelTheUserChoseIsKept() {
        System.setProperty(PROPERTY, "paranoid");
        ResourceLeakDetector.setLevel(Level.PARANOID);
        LeakDetection.offUnlessChosen();
        assertEquals(Level.PARANOID, ResourceLeakDetector.getLevel());
    }
}
