package io.jroce.verbs;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * Objects the C side names by an int (the {@code handle} field of rdma-core's structs). Handles are reused
 * after release; a stale or wrong-kind handle fails with IllegalArgumentException (EINVAL on the C side).
 */
final class HandleTable {
    private final List<Object> objects = new ArrayList<>();
    private final ArrayDeque<Integer> free = new ArrayDeque<>();

    synchronized int add(Object o) {
        Integer h = free.poll();
        if (h != null) {
            objects.set(h, o);
            return h;
        }
        objects.add(o);
        return objects.size() - 1;
    }

    synchronized <T> T get(int handle, Class<T> kind) {
        Object o = handle >= 0 && handle < objects.size() ? objects.get(handle) : null;
        if (!kind.isInstance(o)) throw new IllegalArgumentException("no " + kind.getSimpleName() + " with handle " + handle);
        return kind.cast(o);
    }

    synchronized Object remove(int handle) {
        Object o = handle >= 0 && handle < objects.size() ? objects.get(handle) : null;
        if (o == null) throw new IllegalArgumentException("no object with handle " + handle);
        objects.set(handle, null);
        free.add(handle);
        return o;
    }
}
