package io.jroce.endpoint;

/** Where the transport's timers read time. Tests inject a clock they step by hand. */
@FunctionalInterface
public interface Clock {
    Clock SYSTEM = System::nanoTime;

    long nanoTime();
}
