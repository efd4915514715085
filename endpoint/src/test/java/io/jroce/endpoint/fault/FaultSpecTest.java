package io.jroce.endpoint.fault;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The --chaos spec: what it accepts, and the one-line messages for what it does not. */
class FaultSpecTest {

    @Test
    void theFullExampleSetsBothDirections() {
        FaultInjector f = FaultInjector.parse("drop=0.05,dup=0.01,reorder=0.05,delay=0.01,corrupt=0.001,seed=42");
        assertEquals(42, f.seed());
        for (Direction d : Direction.values()) {
            FaultPlan p = f.plan(d);
            assertEquals(0.05, p.drop());
            assertEquals(0.01, p.duplicate());
            assertEquals(0.05, p.reorder());
            assertEquals(0.01, p.delay());
            assertEquals(0.001, p.corrupt());
            assertEquals(FaultPlan.DEFAULT_DELAY_MICROS, p.delayMicros());
            assertEquals(FaultPlan.DEFAULT_REORDER_DEPTH, p.reorderDepth());
        }
    }

    @Test
    void prefixesSetOneDirectionAndLaterItemsWin() {
        FaultInjector f = FaultInjector.parse(" drop = 0.2 , in.drop=0.1, out.delay_us=250, reorder_depth=5,"
                + "in.reorder_depth=2, out.reorder_timeout_us=9, seed=0x10 ");
        assertEquals(16, f.seed());
        assertEquals(0.1, f.plan(Direction.IN).drop());
        assertEquals(0.2, f.plan(Direction.OUT).drop());
        assertEquals(FaultPlan.DEFAULT_DELAY_MICROS, f.plan(Direction.IN).delayMicros());
        assertEquals(250, f.plan(Direction.OUT).delayMicros());
        assertEquals(2, f.plan(Direction.IN).reorderDepth());
        assertEquals(5, f.plan(Direction.OUT).reorderDepth());
        assertEquals(9, f.plan(Direction.OUT).reorderTimeoutMicros());
        assertEquals(0.3, FaultInjector.parse("in.drop=0.1,drop=0.3").plan(Direction.IN).drop());
    }

    @Test
    void anEmptySpecMeansNoFaultsAndARandomSeed() {
        FaultInjector f = FaultInjector.parse("");
        assertTrue(f.plan(Direction.IN).isNone());
        assertTrue(f.plan(Direction.OUT).isNone());
        assertTrue(f.rules().isEmpty());
    }

    @Test
    void probabilitiesAtTheBoundsAreAccepted() {
        FaultInjector f = FaultInjector.parse("in.drop=1,out.corrupt=0,out.dup=1e-3");
        assertEquals(1.0, f.plan(Direction.IN).drop());
        assertEquals(0.001, f.plan(Direction.OUT).duplicate());
        assertFalse(f.plan(Direction.IN).isNone());
    }

    @Test
    void specRoundTripsSoARunCanBeReplayed() {
        FaultInjector f = FaultInjector.builder().seed(-7).drop(0.25).reorder(Direction.OUT, 0.5).delayMicros(Direction.IN, 3)
                .reorderDepth(7).corrupt(Direction.IN, 1e-4).build();
        FaultInjector g = FaultInjector.parse(f.spec());
        assertEquals(f.seed(), g.seed());
        assertEquals(f.plan(Direction.IN), g.plan(Direction.IN));
        assertEquals(f.plan(Direction.OUT), g.plan(Direction.OUT));
        assertEquals(f.spec(), g.spec());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "dorp=0.1                 | 'dorp'",
        "in.seed=1                | 'in.seed'",
        "up.drop=0.1              | 'up.drop'",
        "drop=abc                 | drop",
        "drop=1.5                 | drop",
        "in.corrupt=-0.1          | in.corrupt",
        "dup=NaN                  | dup",
        "delay_us=-1              | delay_us",
        "reorder_depth=0          | reorder_depth",
        "reorder_depth=3.5        | reorder_depth",
        "out.reorder_timeout_us=0 | out.reorder_timeout_us",
        "seed=forty-two           | seed",
        "drop                     | drop",
        "drop=0.1,,dup=0.1        | empty item",
        "drop=0.6,dup=0.6         | inbound",
    })
    void badSpecsAreRejectedWithAOneLineMessageNamingTheKey(String spec, String named) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> FaultInjector.parse(spec));
        assertTrue(e.getMessage().contains(named), e.getMessage());
        assertTrue(e.getMessage().startsWith("chaos spec: "), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
    }

    @Test
    void theBuilderChecksWhatTheSpecChecks() {
        assertThrows(IllegalArgumentException.class, () -> FaultInjector.builder().drop(2).build());
        assertThrows(IllegalArgumentException.class, () -> FaultInjector.builder().reorderDepth(0).build());
        assertThrows(IllegalArgumentException.class, () -> FaultPlan.none().withCorrupt(-1));
        assertEquals(0.5, FaultInjector.builder().drop(0.9).drop(0.5).duplicate(0.5).build().plan(Direction.IN).drop(),
                "only the final values must add up to at most 1");
    }
}
