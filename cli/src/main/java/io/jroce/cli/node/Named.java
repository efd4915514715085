package io.jroce.cli.node;

import io.jroce.cli.node.Session.Failure;

import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/** The session's objects of one kind, by the names the script gave them, in the order they were made. */
final class Named<T> {
    private final String kind;
    private final Map<String, T> byName = new LinkedHashMap<>();

    /** @param kind what the objects are, for messages: "memory region" */
    Named(String kind) {
        this.kind = kind;
    }

    void put(String name, T object) {
        byName.put(name, object);
    }

    T remove(String name) {
        return byName.remove(name);
    }

    /** The object, or null. */
    T get(String name) {
        return byName.get(name);
    }

    /** The object; a name the checker let through but the session lacks (a failed line at a prompt) fails. */
    T require(String name) throws Failure {
        T object = byName.get(name);
        if (object == null) throw new Failure("no " + kind + " '" + name + "'");
        return object;
    }

    boolean isEmpty() {
        return byName.isEmpty();
    }

    Collection<T> all() {
        return byName.values();
    }

    /** The names, in the order the objects were made; a read-only view (the prompt completes them). */
    Set<String> names() {
        return Collections.unmodifiableSet(byName.keySet());
    }

    Set<Map.Entry<String, T>> entries() {
        return byName.entrySet();
    }
}
