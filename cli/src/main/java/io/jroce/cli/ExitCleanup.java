package io.jroce.cli;

import io.jroce.endpoint.Device;
import io.jroce.endpoint.cm.CmAgent;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.WeakHashMap;

/**
 * What a command leaves open when the process is stopped (Ctrl-C, SIGTERM, or an exit that skipped its own
 * cleanup) is ended the way the kernel ends a verbs program's resources when its process exits: every connection
 * manager first, so each connection still open gets its DREQ, each pending request its REJ and each DREQ its DREP
 * (ucma_close_id, rdma_destroy_id, cm.c cm_destroy_id), then every device, so those last MADs leave before the
 * socket closes. A peer therefore learns at once that the connection is gone, instead of after its retries.
 *
 * <p>Objects are held weakly: a command that closes its own device and agent (the normal path) leaves nothing to do
 * here. Closing takes at most {@link #BOUND_MILLIS}.
 */
public final class ExitCleanup {
    static final long BOUND_MILLIS = 2000;
    private static final Set<CmAgent> AGENTS = Collections.newSetFromMap(new WeakHashMap<>());
    private static final Set<Device> DEVICES = Collections.newSetFromMap(new WeakHashMap<>());
    private static boolean hooked;

    private ExitCleanup() {
    }

    /** Ends {@code agent} (destroying its ids) if it is still open when the process exits. */
    public static CmAgent register(CmAgent agent) {
        synchronized (ExitCleanup.class) {
            AGENTS.add(agent);
            hook();
        }
        return agent;
    }

    /** Closes {@code device} if it is still open when the process exits (after every agent). */
    public static Device register(Device device) {
        synchronized (ExitCleanup.class) {
            DEVICES.add(device);
            hook();
        }
        return device;
    }

    private static void hook() {
        if (hooked) return;
        hooked = true;
        Thread t = new Thread(ExitCleanup::closeAll, "jroce-exit");
        try {
            Runtime.getRuntime().addShutdownHook(t);
        } catch (IllegalStateException e) {
            // already exiting: nothing can be added any more
        }
    }

    /** Closes the agents, then the devices, still open; returns within about {@link #BOUND_MILLIS}. */
    static void closeAll() {
        List<CmAgent> agents;
        List<Device> devices;
        synchronized (ExitCleanup.class) {
            agents = new ArrayList<>(AGENTS);
            devices = new ArrayList<>(DEVICES);
        }
        Thread worker = new Thread(() -> {
            for (CmAgent a : agents) quietly(a);
            for (Device d : devices) quietly(d);
        }, "jroce-exit-close");
        worker.setDaemon(true);
        worker.start();
        try {
            worker.join(BOUND_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void quietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception | Error e) {
            // the process is exiting: what cannot be closed is left to the peer's timeouts
        }
    }
}
